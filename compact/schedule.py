"""When to compact: at the threshold, or earlier when holding a large context costs more
than rewriting it.

The cost model is a provider's prompt cache (or a local server's reuse of its KV cache):
every request re-reads the whole context, but the part an earlier request already sent
costs ``c`` of an uncached token (about 0.1 at Anthropic, DeepSeek and OpenAI; the time a
local server spends on it is as small). Appending keeps that prefix; a compaction rewrites
the head, so the request after it reads everything anew. Per step, then, holding a context
of ``x`` tokens costs ``c·x``, and a compaction costs once:

- the summary call, which continues the conversation's request (:mod:`compact.suffix`):
  ``c·T`` for what it reads, plus the summary ``S`` it writes;
- the first request after it, uncached: ``(1 − c)·r`` more than a cached one, where ``r`` is
  what is left (header, checkpoint, retained tail).

Between two compactions the context grows ``g`` per step from ``r`` to the trigger ``T``;
the average cost per step ``c·(T + r)/2 + g·((1 − c)·r + S + c·T)/(T − r)`` is lowest at

    T* = r + sqrt(2·g·(r + S) / c)

so the trigger is ``min(threshold, T*)``: at small windows the threshold (the window is
the limit), at large ones much earlier (a 128k window with 5k-token steps compacts near
45k, not 102k). ``T*`` is never less than two steps above ``r``: a rewrite must free more
than it costs to re-read. With too few steps measured, the threshold stands.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from compact.policy import CompactionSettings

WINDOW_STEPS = 8
"""Steps the typical growth is measured over (the newest ones)."""


@dataclass
class StepSizes:
    """The context size measured at each pre-step checkpoint of one session (what the
    service saw), and from it the typical growth of one step."""

    totals: list[int] = field(default_factory=list)

    def saw(self, total: int) -> None:
        self.totals.append(total)
        del self.totals[: -WINDOW_STEPS - 1]

    def growth(self) -> int | None:
        """The median growth of the steps that grew (a compaction's drop is not a step);
        None with fewer than two."""
        deltas = [b - a for a, b in zip(self.totals, self.totals[1:], strict=False) if b > a]
        return int(statistics.median(deltas)) if len(deltas) >= 2 else None


def cost_mark(*, growth: int, after: int, summary: int, cached_price: float) -> int:
    """``T*`` (see the module docstring): the context size at which compacting costs least
    per step, never less than two steps above what a compaction leaves."""
    best = after + math.sqrt(2 * growth * (after + summary) / max(cached_price, 1e-6))
    return max(math.ceil(best), after + 2 * growth)


@dataclass
class Schedule:
    """Where one session's next automatic compaction starts. ``folds``: a compaction masks
    the retained tail's older outputs (so it leaves about one step of it, not all)."""

    settings: CompactionSettings
    folds: bool
    steps: StepSizes = field(default_factory=StepSizes)
    header: int = 0
    """Tokens of the newest request header measured (system prompt and tools)."""
    last_summary: int | None = None
    """Tokens of the newest checkpoint written."""
    excused: Callable[[], int] = lambda: 0
    """Tokens an undone compaction brought back (:class:`compact.uncompact.Excused`): the
    mark moves up by as much (never past the window) until a compaction lands again, so
    only new content brings the next automatic compaction."""

    def mark(self, window: int) -> int:
        """The threshold, or earlier where compacting costs less over the coming steps;
        later by what an undo brought back."""
        excused = self.excused()
        return self._mark(window) if not excused else min(window, self._mark(window) + excused)

    def _mark(self, window: int) -> int:
        threshold = self.settings.threshold(window)
        growth = self.steps.growth()
        if growth is None or self.settings.cache_price <= 0:
            return threshold
        summary = self.last_summary or self.settings.summary_cap(threshold, window) // 2
        kept = growth if self.folds else self.settings.retain(window)
        after = self.header + summary + kept
        best = cost_mark(
            growth=growth, after=after, summary=summary, cached_price=self.settings.cache_price
        )
        return min(threshold, best)
