"""The basic compaction backend: the RFC's algorithm, plus a pruner and two guards.

- **Pressure** (pre-step listener), with the window known: from ``prune_ratio`` of the
  window, mask every tool result older than the retained tail in one pass (when that frees
  at least a tenth of the window, so history is not rewritten every step); at or over
  ``floor(window × threshold_ratio)``, prune, and if still over, compact a head-anchored
  range that leaves a retained tail of about ``retain`` tokens; re-measure and repeat at
  most ``retries`` more times.
- **Range**: walk from the tail summing node prices until the retention is reached (always
  keeping the newest node), move the cut head-ward until it splits no tool call from its
  result; the range is everything before the cut, so an earlier checkpoint at the head is
  merged into the new one. Nothing before the cut → decline (None).
- **Summary** (:mod:`compact.condense`): the range as the model first saw it (originals of
  pruned results), in chunks when it is more than one call may read, each call capped,
  timed, logged as ``compact/progress`` and retried once tersely after a cut. Automatic and
  overflow compactions fall back to the model-free checkpoint when the model cannot deliver,
  so they always land; ``/compact`` and region compactions report the failure instead.
- **Transaction**: ``compact/start`` (the lock) → summarize → frame → require the checkpoint
  to be smaller than what it shadows → require the surface unchanged (log-only appends are
  fine) → ``compact/summary``, the replacement ``user/message``, ``compact/end`` last. Any
  failure writes exactly one ``compact/end {error}`` and leaves the surface untouched.
- **Overflow** (request_error listener): prune, compact everything but the newest unit, and
  ask the loop to retry only if ``replace_generation`` advanced.
- **Circuit breakers**: 3 consecutive automatic compactions that fail pause automatic
  compaction until the next turn; 3 consecutive ones whose model summary failed stop asking
  the model (the model-free checkpoint is used at once) until the next turn. **Thrash
  guard**: when a compaction still leaves less than 10% of the window below the threshold,
  auto compaction pauses for the turn. Each announces itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from typing import Any, Literal

from agent.envelope import Envelope
from agent.events import Event, EventError, UserMessage
from agent.hooks import Hooks
from agent.llm import ChatModel, ContextOverflow
from agent.meter import Measurement, TokenMeter
from agent.session import Session
from compact.checkpoint import (
    CHECKPOINT_PREAMBLE,
    SUMMARY_INSTRUCTION,
    Summary,
    SummaryJob,
    frame,
)
from compact.condense import Condensed, Condenser, Header, ModelFree
from compact.contract import (
    CompactEnd,
    CompactionError,
    CompactionResult,
    CompactService,
    CompactStart,
    Trigger,
    balanced_cuts,
)
from compact.policy import CompactionSettings, load_compaction_settings
from compact.prune import Pruner
from compact.reading import RangeReader
from compact.summarizer import ModelSummarizer

__all__ = [
    "CHECKPOINT_PREAMBLE",
    "SUMMARY_INSTRUCTION",
    "BasicCompactService",
    "CompactionSettings",
    "Summary",
    "SummaryJob",
    "frame",
    "load_compaction_settings",
]

MIN_MANUAL_TOKENS = 512
"""Below this much new history a summary cannot save anything worth a model call (the
checkpoint's own sections cost about that much)."""
BREAKER_FAILURES = 3
THRASH_MARGIN = 0.10


class BasicCompactService(CompactService):
    """The basic backend for one session (see the module docstring).

    Args:
        session: the session to compact.
        meter: its token meter (prices, measurements, window).
        model: the model that writes summaries.
        settings: the policy.
        pruner: tried before any summary under pressure or overflow; None to skip pruning.
    """

    def __init__(
        self,
        session: Session,
        meter: TokenMeter,
        model: ChatModel,
        settings: CompactionSettings | None = None,
        *,
        pruner: Pruner | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        self.meter = meter
        self.settings = settings or CompactionSettings()
        self.pruner = pruner
        self.summarizer = ModelSummarizer(
            model, meter.estimator, lambda text: self.announce("info", text)
        )
        self.condenser = Condenser(
            RangeReader(session, meter.estimator, price=meter.price), self.summarize, self.settings
        )
        self._open: set[str] = set()
        self._failures = 0
        """Consecutive automatic compactions that failed."""
        self._model_failures = 0
        """Consecutive automatic or overflow compactions whose model summary failed."""
        self._breaker_turn: int | None = None
        self._model_off_turn: int | None = None
        self._thrash_turn: int | None = None
        resume = session.last_resume_seq or 0
        for event in session.events[resume:]:
            self._track(event)
        self._unsubscribe = session.subscribe(self._track)

    @property
    def model(self) -> ChatModel:
        """The model that writes summaries (settable, e.g. after ``/model``)."""
        return self.summarizer.model

    @model.setter
    def model(self, model: ChatModel) -> None:
        self.summarizer.model = model

    # --- wiring -------------------------------------------------------------------------------

    def install(self, hooks: Hooks) -> None:
        """Register the pressure and overflow listeners (none when ``auto`` is off)."""
        if not self.settings.auto:
            return
        hooks.pre_step.append(self._on_pre_step)
        hooks.request_error.append(self._on_request_error)

    def close(self) -> None:
        self._unsubscribe()

    def _track(self, event: Event) -> None:
        # The lock: compact/start without compact/end since the newest session/resume.
        if isinstance(event, CompactStart):
            self._open.add(event.data.compaction_id)
        elif isinstance(event, CompactEnd):
            self._open.discard(event.data.compaction_id)
        elif event.type == "session/resume":
            self._open.clear()

    @property
    def locked(self) -> bool:
        """True while a compaction of this process is between start and end."""
        return bool(self._open)

    @property
    def paused(self) -> str | None:
        """Why auto compaction is paused for the current turn, or None."""
        turn = self.session.open_turn
        if self._breaker_turn is not None and turn == self._breaker_turn:
            return "circuit breaker"
        if self._thrash_turn is not None and turn == self._thrash_turn:
            return "thrash guard"
        return None

    @property
    def model_off(self) -> bool:
        """True while automatic compactions skip the model (it failed too often this turn)."""
        turn = self.session.open_turn
        return self._model_off_turn is not None and turn == self._model_off_turn

    # --- listeners ----------------------------------------------------------------------------

    async def _on_pre_step(self, envelope: Envelope, turn: int, step: int) -> None:
        if self._breaker_turn is not None and turn != self._breaker_turn:
            self._breaker_turn = None
            self._failures = 0
        if self._model_off_turn is not None and turn != self._model_off_turn:
            self._model_off_turn = None
            self._model_failures = 0
        if self.paused:
            return
        try:
            result = await self.compact_if_needed(envelope, "pressure")
        except CompactionError as exc:
            self._failures += 1
            self.announce(
                "warning",
                f"Automatic compaction failed ({exc.detail}); continuing with the full history.",
            )
            if self._failures >= BREAKER_FAILURES:
                self._breaker_turn = turn
                self.announce(
                    "warning",
                    f"Automatic compaction failed {self._failures} times in a row; it is paused "
                    "until your next message. /compact still works.",
                )
            return
        if result is not None:
            self._failures = 0

    async def _on_request_error(
        self, envelope: Envelope, error: ContextOverflow, turn: int, step: int
    ) -> bool:
        generation = self.session.replace_generation
        try:
            await self.compact_if_needed(envelope, "overflow")
        except CompactionError as exc:
            self.announce("warning", f"Could not recover from the context overflow: {exc.detail}")
        # Retry only on proof that the surface shrank (a prune alone counts).
        return self.session.replace_generation > generation

    # --- the contract -------------------------------------------------------------------------

    def threshold(self, window: int | None) -> int | None:
        if window is None or not self.settings.auto:
            return None
        return self.settings.threshold(window)

    async def compact_if_needed(
        self,
        envelope: Envelope,
        trigger: Literal["pressure", "overflow"],
        signal: asyncio.Event | None = None,
    ) -> CompactionResult | None:
        if trigger == "overflow":
            return await self._recover_overflow(envelope, signal)
        window = envelope.window
        if window is None:
            return None
        threshold = self.settings.threshold(window)
        measure = self._measurer(envelope)
        total = measure().total
        if total < self.settings.prune_at(window):
            return None
        retain = self.settings.retain(window)
        if self.pruner is not None:
            # A whole pass at once, and below the threshold only when it frees a tenth of
            # the window: each prune rewrites history (voiding a provider's prefix cache
            # from there on), so it must not happen one result per step.
            tail = self._tail_start(retain)
            if total >= threshold or self.pruner.savings(tail) >= THRASH_MARGIN * window:
                self.pruner.prune(protect_from=tail, done=lambda: False, trigger="pressure")
        if measure().total < threshold:
            return None
        result = None
        attempts = 0
        for _ in range(1 + self.settings.retries):
            span = self.select_range(retain)
            if span is None or self._new_tokens(span) < MIN_MANUAL_TOKENS:
                break  # nothing, or too little for a summary to save anything
            if result is not None and self._not_worth_it(span, result):
                break
            attempts += 1
            try:
                result = await self._transaction(
                    envelope, span, "auto", turn=self.session.open_turn, signal=signal
                )
            except CompactionError as exc:
                if result is None:
                    raise
                # A retry that fails does not undo the compaction that already landed.
                self.announce("warning", f"A further compaction failed: {exc.detail}")
                break
            if measure().total < threshold:
                break
        self._guard(measure(), threshold, window, attempts)
        return result

    async def compact_region(
        self, start: int, end: int, envelope: Envelope, signal: asyncio.Event | None = None
    ) -> CompactionResult:
        nodes = list(self.session.surface)
        if start not in nodes or end not in nodes:
            raise ValueError(f"range {start}..{end} is not on the surface")
        i, j = nodes.index(start), nodes.index(end)
        if i > j:
            raise ValueError(f"range start {start} comes after its end {end} on the surface")
        cuts = balanced_cuts(self.session)
        if cuts[i] != 0 or cuts[j + 1] != 0:
            raise ValueError(f"range {start}..{end} splits a tool call from its result")
        return await self._transaction(
            envelope, nodes[i : j + 1], "region", turn=self.session.open_turn, signal=signal
        )

    async def compact_now(
        self,
        envelope: Envelope,
        signal: asyncio.Event | None = None,
        focus: str | None = None,
        source_command_id: str | None = None,
    ) -> CompactionResult | None:
        if self.session.open_turn is not None:
            raise CompactionError("busy", "a turn is running; /compact runs between turns")
        if signal is not None and signal.is_set():
            raise CompactionError("cancelled")
        span = self.select_range(0)
        if span is None or self._new_tokens(span) < MIN_MANUAL_TOKENS:
            return None
        return await self._transaction(
            envelope,
            span,
            "manual",
            turn=None,
            focus=focus,
            source_command_id=source_command_id,
            signal=signal,
        )

    # --- range selection ----------------------------------------------------------------------

    def _tail_start(self, retain: int) -> int:
        """Position where a tail of at least ``retain`` tokens (and one node) begins."""
        nodes = self.session.surface
        cut = len(nodes)
        kept = 0
        while cut > 0 and (kept < retain or cut == len(nodes)):
            cut -= 1
            kept += self.meter.price(nodes[cut])
        return cut

    def select_range(self, retain: int) -> list[int] | None:
        """The head-anchored range to compact keeping about ``retain`` tokens at the tail,
        as seqs in surface order; None when no balanced cut leaves anything to compact."""
        nodes = self.session.surface
        cut = self._tail_start(retain)
        cuts = balanced_cuts(self.session)
        while cut > 0 and cuts[cut] != 0:
            cut -= 1
        if cut <= 0:
            return None
        return list(nodes[:cut])

    def _new_tokens(self, span: list[int]) -> int:
        """What ``span`` holds besides earlier checkpoints: the history a summary would be
        about that no checkpoint condenses yet."""
        total = 0
        for seq in span:
            event = self.session.events[seq]
            if not (isinstance(event, UserMessage) and event.data.source == "compact"):
                total += self.meter.price(seq)
        return total

    def _not_worth_it(self, span: list[int], previous: CompactionResult) -> bool:
        """A retry that would mostly re-summarize the checkpoint just written cannot shrink
        the context much; skip it rather than log a failure."""
        fresh = sum(self.meter.price(seq) for seq in span if seq != previous.replacement_seq)
        return fresh < previous.summary_tokens

    def header(self, envelope: Envelope) -> Header:
        """The header the coming request carries, as the summary calls replay it."""
        tokens = self.meter.measure(envelope).header
        model = self.settings.summarizer_model or envelope.model
        return Header(model, envelope.system, envelope.tools, tokens, envelope.window)

    # --- the transaction ----------------------------------------------------------------------

    async def _transaction(
        self,
        envelope: Envelope,
        span: list[int],
        trigger: Trigger,
        *,
        turn: int | None,
        focus: str | None = None,
        source_command_id: str | None = None,
        signal: asyncio.Event | None = None,
    ) -> CompactionResult:
        if self.locked:
            raise CompactionError("busy", "another compaction is in progress")
        session = self.session
        compaction_id = "cmp-" + os.urandom(4).hex()
        snapshot = tuple(session.surface)
        header = self.header(envelope)
        try:
            start = session.append(
                "compact/start",
                {
                    "compaction_id": compaction_id,
                    "trigger": trigger,
                    "turn": turn,
                    "focus": focus,
                    "source_command_id": source_command_id,
                },
            )
        except OSError as exc:
            raise CompactionError("persistence", f"writing the session log failed: {exc}") from exc
        try:
            shadowed_tokens = sum(self.meter.price(seq) for seq in span)
            condensed = await self._condense(
                compaction_id, header, span, trigger, shadowed_tokens, focus
            )
            summary = condensed.summary
            framed = frame(summary.text)
            summary_tokens = self.meter.estimate_messages([{"role": "user", "content": framed}])
            if summary_tokens >= shadowed_tokens:
                raise CompactionError(
                    "summary",
                    f"the summary (~{summary_tokens} tokens) is not smaller than the history it "
                    f"would replace (~{shadowed_tokens} tokens)",
                )
            if signal is not None and signal.is_set():
                raise CompactionError("cancelled")
            if tuple(session.surface) != snapshot:
                raise CompactionError(
                    "changed", "the conversation changed while the summary was written"
                )
            summary_event = self._append(
                "compact/summary",
                {
                    "compaction_id": compaction_id,
                    "summary": summary.text,
                    "shadowed_range": {"start": span[0], "end": span[-1]},
                    "shadowed_seqs": span,
                    "shadowed_tokens": shadowed_tokens,
                    "summary_tokens": summary_tokens,
                    "model": summary.model,
                    "usage": summary.usage.model_dump() if summary.usage else None,
                    "max_tokens": summary.max_tokens,
                    "fallback_reason": condensed.fallback_reason,
                },
            )
            replacement = self._append(
                "user/message",
                {"content": framed, "source": "compact", "compaction_id": compaction_id},
                surface_op={"op": "replace", "start": span[0], "end": span[-1]},
                source_event_seqs=sorted({start.seq, summary_event.seq, *span}),
            )
        except asyncio.CancelledError:
            with contextlib.suppress(OSError):
                self._end(compaction_id, turn, "cancelled")
            raise
        except CompactionError as exc:
            self._end(compaction_id, turn, exc.detail)
            raise
        except Exception as exc:
            with contextlib.suppress(OSError):
                self._end(compaction_id, turn, f"internal error: {exc}")
            raise
        end = self._end(compaction_id, turn, None)
        return CompactionResult(
            compaction_id=compaction_id,
            trigger=trigger,
            start_seq=start.seq,
            summary_seq=summary_event.seq,
            replacement_seq=replacement.seq,
            end_seq=end.seq,
            shadowed_range=(span[0], span[-1]),
            shadowed_seqs=list(span),
            shadowed_tokens=shadowed_tokens,
            summary_tokens=summary_tokens,
            summary=summary.text,
            model=summary.model,
        )

    async def _condense(
        self,
        compaction_id: str,
        header: Header,
        span: list[int],
        trigger: Trigger,
        shadowed_tokens: int,
        focus: str | None,
    ) -> Condensed:
        """The summary of ``span``: the model's, or for automatic and overflow compactions
        the model-free checkpoint when the model cannot deliver (announced, and counted
        towards the model breaker)."""
        automatic = trigger in ("auto", "overflow")
        mode: ModelFree = "never"
        if automatic:
            mode = "only" if self.model_off else "on_failure"

        def record(data: dict[str, Any]) -> None:
            self._append("compact/progress", {"compaction_id": compaction_id, **data})

        condensed = await self.condenser.condense(
            header, span, shadowed_tokens, record, focus=focus, model_free=mode
        )
        if mode == "only":
            return Condensed(
                condensed.summary,
                f"the model failed to summarize {BREAKER_FAILURES} times in a row this turn",
            )
        if not automatic:
            return condensed
        if condensed.fallback_reason is None:
            self._model_failures = 0
            return condensed
        self._model_failures += 1
        self.announce(
            "warning",
            f"The model could not summarize ({condensed.fallback_reason}); a model-free "
            "checkpoint took its place.",
        )
        if self._model_failures >= BREAKER_FAILURES:
            self._model_off_turn = self.session.open_turn
            self.announce(
                "warning",
                f"The model failed to summarize {self._model_failures} times in a row; "
                "automatic compaction uses the model-free checkpoint until your next message. "
                "/compact still asks the model.",
            )
        return condensed

    def _append(self, type: str, data: dict[str, Any], **kwargs: Any) -> Event:
        try:
            return self.session.append(type, data, **kwargs)
        except OSError as exc:
            raise CompactionError("persistence", f"writing the session log failed: {exc}") from exc
        except EventError as exc:
            raise CompactionError("commit", f"the replacement was refused: {exc}") from exc

    def _end(self, compaction_id: str, turn: int | None, error: str | None) -> Event:
        try:
            return self.session.append(
                "compact/end", {"compaction_id": compaction_id, "turn": turn, "error": error}
            )
        except OSError as exc:
            raise CompactionError("persistence", f"writing the session log failed: {exc}") from exc

    # --- summarizing --------------------------------------------------------------------------

    async def summarize(self, job: SummaryJob) -> Summary:
        """Write the checkpoint for one :class:`SummaryJob` — the one hook for subclasses.

        The default asks the model (:class:`~compact.summarizer.ModelSummarizer`). Raise
        :class:`~compact.checkpoint.SummaryRejected` (``cut=True`` for a reply that hit
        ``job.max_tokens``) or :class:`CompactionError` ``summary`` when there is none.
        """
        return await self.summarizer(job)

    # --- overflow and guards ------------------------------------------------------------------

    async def _recover_overflow(
        self, envelope: Envelope, signal: asyncio.Event | None
    ) -> CompactionResult | None:
        if self.pruner is not None:
            self.pruner.prune(
                protect_from=self._tail_start(0), done=lambda: False, trigger="overflow"
            )
        span = self.select_range(0)
        if span is None:
            return None
        return await self._transaction(
            envelope, span, "overflow", turn=self.session.open_turn, signal=signal
        )

    def _guard(self, measurement: Measurement, threshold: int, window: int, attempts: int) -> None:
        """Pause auto compaction for the turn when it cannot get the context comfortably
        below the threshold: retrying every step would only churn (thrash guard)."""
        if threshold - measurement.total >= THRASH_MARGIN * window:
            return
        self._thrash_turn = self.session.open_turn
        if measurement.total >= threshold:
            why = (
                f"the context is still above the auto-compact threshold after {attempts} "
                f"attempt{'s' if attempts != 1 else ''}"
            )
        else:
            why = (
                "compaction cannot free enough room: the system prompt, tools, retained tail "
                "and summary nearly fill the context up to the threshold"
            )
        self.announce(
            "warning",
            f"Automatic compaction is paused for this turn: {why}. Raise the window "
            "(--context-window), lower retention (compaction.retain_ratio) or /compact with "
            "a focus.",
        )

    def _measurer(self, envelope: Envelope) -> Callable[[], Measurement]:
        return lambda: self.meter.measure(envelope)
