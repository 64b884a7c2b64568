"""Context pressure at the pre-step checkpoint: the one reading every decision there reads.

The checkpoint asks the meter once (:func:`read_pressure`) and hands the frozen
:class:`Pressure` down: the basic service compacts when it is ``due``, the part
that summarizes ahead (:mod:`compact.basic.ahead`) starts when they are between ``early``
and ``mark``. A compaction that lands measures what it left, and the checkpoint goes on with
that reading (:func:`after`).

Far below the marks the reading need not wait for the tokenizer: before it is loaded the
meter gives a byte bound (at least the size, :meth:`agent.meter.TokenMeter.bound`), and only
a bound that reaches a mark is measured (which loads it). A measured reading near a mark
also sizes the request header, which moves the mark (:mod:`compact.basic.schedule`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from agent.envelope import Envelope
from agent.meter import TokenMeter
from compact.basic.schedule import Schedule

EarlyMark = Callable[[int, int | None], int | None]
"""The forecast: from the mark and the reading (None: not measured), where a summary written
ahead starts (None: not yet)."""


@dataclass(frozen=True)
class Pressure:
    """The context of the coming request at one checkpoint, and the marks it is read
    against. ``tokens`` is measured when ``measured``, else a byte bound below every mark."""

    tokens: int
    measured: bool
    window: int
    threshold: int
    """Where the settings put automatic compaction (the ratio, or the tokens if lower)."""
    mark: int
    """Where automatic compaction runs now: the threshold, or earlier where the prompt-cache
    schedule says so, later by what an undo brought back."""
    early: int | None
    """The forecast: where a summary starts ahead of ``mark`` (None: none is written ahead,
    or too few steps were measured to tell)."""
    header: int
    """Tokens of the request header (system prompt and tools), as last measured near a
    mark: what a summary's request replays."""
    due: bool
    """Compact now: the context reached the mark, as it stands and as it stood before this
    reading (the growth a reading shows moves the mark from the next checkpoint on)."""

    @property
    def ahead_due(self) -> bool:
        """The context is between the early mark and the mark: summarize ahead now."""
        return self.early is not None and self.early <= self.tokens < self.mark


async def read_pressure(
    meter: TokenMeter,
    schedule: Schedule,
    envelope: Envelope,
    early: EarlyMark | None = None,
    *,
    counted: bool = True,
) -> Pressure | None:
    """The checkpoint's reading of ``envelope``'s context (None: the window is unknown).
    ``counted``: a reading measured with the tokenizer loaded feeds ``schedule.steps``, the
    typical growth of a step that sets the mark (not while automatic compaction is paused).
    ``early``: the forecast, when summaries are written ahead."""
    window = envelope.window
    if window is None:
        return None
    # A load begun at an earlier checkpoint: every step from here on is measured.
    await meter.estimator.warmed()
    before = schedule.mark(window)
    measured = meter.estimator.ready
    if measured:
        await meter.settle()  # a long resumed log is priced with pauses, not at once
        measurement = meter.measure(envelope)
        tokens = measurement.total
        if counted:
            schedule.steps.saw(tokens)
    else:
        # Far below the mark: decided without waiting for the tokenizer, which starts
        # loading once the history is halfway there.
        tokens = meter.bound(envelope, warm_at=before // 2)
    pressure = _marks(schedule, window, tokens, measured, early, due=False)
    if tokens < min(before, pressure.early if pressure.early is not None else before):
        return pressure
    if not measured:
        await meter.settle()
        measurement = meter.measure(envelope)
        tokens = measurement.total
    # The mark moves with the header's measured size: the one a compaction will use.
    schedule.header = measurement.header
    pressure = _marks(schedule, window, tokens, True, early, due=False)
    return dataclasses.replace(pressure, due=tokens >= max(before, pressure.mark))


def due_when_cold(pressure: Pressure, schedule: Schedule, *, written: bool) -> Pressure:
    """``pressure`` read at a checkpoint whose cache has expired: due now when the
    compaction due within a few steps costs less made now
    (:meth:`~compact.basic.schedule.Schedule.cold_now`; ``written``: its summary was
    written ahead, its cost already spent)."""
    if pressure.due or not schedule.cold_now(pressure.tokens, pressure.window, written=written):
        return pressure
    return dataclasses.replace(pressure, due=True)


def after(pressure: Pressure, schedule: Schedule, tokens: int, early: EarlyMark | None) -> Pressure:
    """The reading once a compaction left ``tokens`` (measured by it): the marks moved with
    what it left (:class:`~compact.basic.schedule.Schedule`); no further compaction is due at
    this checkpoint."""
    return _marks(schedule, pressure.window, tokens, True, early, due=False)


def _marks(
    schedule: Schedule,
    window: int,
    tokens: int,
    measured: bool,
    early: EarlyMark | None,
    *,
    due: bool,
) -> Pressure:
    mark = schedule.mark(window)
    return Pressure(
        tokens=tokens,
        measured=measured,
        window=window,
        threshold=schedule.settings.threshold(window),
        mark=mark,
        early=None if early is None else early(mark, tokens if measured else None),
        header=schedule.header,
        due=due,
    )
