"""How far ahead a summary starts: the session's own pace, in steps of wall-clock time.

A summary written ahead reads the conversation as the step in flight sent it and is
ready ``D`` seconds later; the steps that ran meanwhile are not in it, so they stay
verbatim after the commit and the request after the rewrite reads them anew (at full
price, where the rest of them was a cache hit). Starting ``k`` steps before the mark, at
``S`` seconds a step, the summary is ready at the checkpoint when ``k·S ≥ D``; it leaves
``k − 1`` such steps (the newest one stays verbatim after any compaction), and each of
them also brings the next compaction a step sooner. A short wait costs nothing billed, so
the lead is the fewest steps that cover all but :data:`WAIT_SHARE` of the summarizer's
time: ``ceil((1 − WAIT_SHARE)·D / S)`` — one step, costing nothing more than a compaction in
the foreground, whenever the summarizer is at most a quarter slower than a step (a 3 s
summary beside 2.5 s steps is waited for half a second rather than paid for with a step
read anew at every commit). Until a summary of this session has been timed the lead is
:data:`FIRST_LEAD`: never pay before knowing it buys time.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

FIRST_LEAD = 1
"""Steps ahead before any summary was timed: one, which costs nothing more than a summary
in the foreground; a summarizer slower than a step is waited for, for the rest, once."""
MAX_LEAD = 4
"""Never more steps ahead than this: each one more is a step read anew at every compaction,
and a summary that slow is waited for, for the rest, at the checkpoint."""
WAIT_SHARE = 0.2
"""The share of a summary's time the checkpoint at the mark may wait for it, rather than
start it a step earlier (see the module docstring)."""
WINDOW = 8
"""Steps (and summaries) the pace is measured over: the newest ones."""


@dataclass
class Pace:
    """Seconds per step (from the end of one pre-step checkpoint to the start of the next,
    within a turn: a foreground compaction's wait is not a step) and seconds per summary."""

    steps: list[float] = field(default_factory=list)
    summaries: list[float] = field(default_factory=list)
    _left: tuple[int, float] | None = None
    """(turn, time) of the newest checkpoint's end."""

    def arrived(self, turn: int, now: float) -> None:
        """A pre-step checkpoint of ``turn`` begins at ``now``."""
        if self._left is not None and self._left[0] == turn:
            _keep(self.steps, now - self._left[1])

    def left(self, turn: int, now: float) -> None:
        """The checkpoint of ``turn`` ends at ``now``: the step begins."""
        self._left = (turn, now)

    def summarized(self, seconds: float) -> None:
        """A summary (all its calls) took ``seconds``."""
        _keep(self.summaries, seconds)

    def lead(self) -> int:
        """Steps before the mark a summary starts (see the module docstring)."""
        if not self.summaries or not self.steps:
            return FIRST_LEAD
        step = statistics.median(self.steps)
        summary = statistics.median(self.summaries)
        if step <= 0:
            return MAX_LEAD
        return max(1, min(MAX_LEAD, math.ceil((1 - WAIT_SHARE) * summary / step)))


def _keep(values: list[float], value: float) -> None:
    values.append(value)
    del values[:-WINDOW]
