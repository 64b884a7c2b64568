"""The guards of automatic compaction: two circuit breakers and a thrash guard.

Each holds for the turn it tripped in and lifts at the next turn:

- **breaker**: automatic compactions that failed ``BREAKER_FAILURES`` times in a row pause
  automatic compaction (``/compact`` still works);
- **model breaker**: model summaries that failed that often in a row make automatic and
  overflow compactions use the model-free checkpoint at once;
- **thrash guard**: a compaction that leaves less than ``THRASH_MARGIN`` of the window below
  the threshold pauses automatic compaction (retrying every step would only churn).

Methods return the sentences to announce; the backend says them.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.formatting import plural

BREAKER_FAILURES = 3
THRASH_MARGIN = 0.10


@dataclass
class Guards:
    failures: int = 0
    """Consecutive automatic compactions that failed."""
    model_failures: int = 0
    """Consecutive automatic or overflow compactions whose model summary failed."""
    breaker_turn: int | None = None
    model_off_turn: int | None = None
    thrash_turn: int | None = None

    def new_step(self, turn: int) -> None:
        """Lift the breakers that tripped in an earlier turn."""
        if self.breaker_turn is not None and turn != self.breaker_turn:
            self.breaker_turn = None
            self.failures = 0
        if self.model_off_turn is not None and turn != self.model_off_turn:
            self.model_off_turn = None
            self.model_failures = 0

    def paused(self, turn: int | None) -> str | None:
        """Why automatic compaction is paused in ``turn``, or None."""
        if self.breaker_turn is not None and turn == self.breaker_turn:
            return "circuit breaker"
        if self.thrash_turn is not None and turn == self.thrash_turn:
            return "thrash guard"
        return None

    def model_off(self, turn: int | None) -> bool:
        return self.model_off_turn is not None and turn == self.model_off_turn

    def auto_failed(self, turn: int, detail: str) -> list[str]:
        self.failures += 1
        said = [f"Automatic compaction failed ({detail}); continuing with the full history."]
        if self.failures >= BREAKER_FAILURES:
            self.breaker_turn = turn
            said.append(
                f"Automatic compaction failed {self.failures} times in a row; it is paused "
                "until your next message. /compact still works."
            )
        return said

    def auto_landed(self) -> None:
        self.failures = 0

    def model_summary(self, turn: int | None, fallback_reason: str | None) -> list[str]:
        """An automatic compaction's summary came from the model (``fallback_reason`` None)
        or from the model-free checkpoint in its place."""
        if fallback_reason is None:
            self.model_failures = 0
            return []
        self.model_failures += 1
        said = [
            f"The model could not summarize ({fallback_reason}); a model-free checkpoint "
            "took its place."
        ]
        if self.model_failures >= BREAKER_FAILURES:
            self.model_off_turn = turn
            said.append(
                f"The model failed to summarize {self.model_failures} times in a row; "
                "automatic compaction uses the model-free checkpoint until your next message. "
                "/compact still asks the model."
            )
        return said

    def after(
        self,
        turn: int | None,
        total: int,
        threshold: int,
        window: float,
        attempts: int,
        *,
        in_tokens: bool = False,
    ) -> str | None:
        """The thrash guard, after automatic compaction left the context at ``total``
        (``window``: the effective window, whose tenth is the margin it needs;
        ``in_tokens``: the threshold is ``compaction.threshold_tokens``, so that is what to
        raise)."""
        if threshold - total >= THRASH_MARGIN * window:
            return None
        self.thrash_turn = turn
        if total >= threshold and attempts == 0:
            # Nothing was tried: what is over the threshold is the newest exchange itself.
            why = (
                "the context is above the auto-compact threshold and there is nothing older "
                "to compact: the newest messages alone fill it"
            )
        elif total >= threshold:
            why = (
                "the context is still above the auto-compact threshold after "
                f"{plural(attempts, 'compaction')}"
            )
        else:
            why = (
                "compaction cannot free enough room: the system prompt, tools, retained tail "
                "and summary nearly fill the context up to the threshold"
            )
        raise_what = "compaction.threshold_tokens" if in_tokens else "the window (--context-window)"
        return (
            f"Automatic compaction is paused for this turn: {why}. Raise {raise_what}, lower "
            "retention (compaction.retain_ratio) or /compact with a focus."
        )
