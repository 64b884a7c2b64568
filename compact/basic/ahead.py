"""Compaction nobody waits for: the summary written ahead, committed at the checkpoint.

The automatic mark is :meth:`BasicCompactService.threshold` (the threshold, or earlier where
the prompt-cache schedule says so). From an *early mark* — that mark less as many typical
steps as the summarizer needs (:meth:`compact.basic.pace.Pace.lead` × the growth
:class:`compact.basic.schedule.StepSizes` measured with the tokenizer) — the summary of the
range the coming compaction would replace is written in the background while the agent goes
on working. It continues the request of the step about to run, the newest results included,
and is sent once that step's reply begins (the server has read its prompt then: a cache hit
but for the instruction). It reads the whole surface as it was, so at the commit every
output in it may be folded out of view, and only the steps that ran meanwhile stay verbatim.
Nothing of it reaches the log meanwhile: its summarizer calls are held in memory (a crash
leaves nothing, not even an orphan). At the pre-step checkpoint where the mark is reached:

- ready, and its range intact (the surface it read is still the head of the surface, only
  appended to since): the whole bracket is written at that checkpoint — ``compact/start``
  (``ahead``), the ``compact/progress`` records of the calls already made,
  ``compact/summary``, the replacement, ``compact/end``;
- still running: the bracket opens there and waits only for the rest (the calls still to
  come are logged as they end); should the rest fail, the foreground summary takes over
  inside the same bracket, with the model-free fallback as usual;
- its range changed (a prune or a compaction rewrote it) or it failed: it is discarded and
  the foreground compaction runs as it would have.

A summary never used is money spent. A discarded one is logged as a bracket of its own,
outside any step: ``compact/start`` (``ahead``), its calls, ``compact/end`` (``discarded``,
with why), so the session's usage counts its calls and the timeline shows it as discarded.
A call cut short by the discard is recorded as failed, with what it was reading (the server
reports no usage for it). The work outlives the turn it started in (the pause while a person
reads the answer and types is when it finishes) but not the session: closing the service
cancels it and, between turns, logs it as discarded. At most one is in flight, and none
starts when the turn is likely to end: only after a step that called tools.
``compaction.ahead = false`` turns it off.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import time
from collections.abc import Callable
from functools import cached_property
from typing import Any

from agent.envelope import Envelope
from agent.hooks import Hooks
from agent.log.events import AssistantMessage, Event, StepEnd
from compact.basic.condense import Condenser, Header
from compact.basic.pace import Pace
from compact.basic.reading import RangeReader
from compact.basic.schedule import StepSizes
from compact.basic.selection import new_tokens, select_range
from compact.basic.service import MIN_MANUAL_TOKENS, BasicCompactService
from compact.contract.service import Background, CompactionError, CompactionResult
from compact.parts.checkpoint import Summary, SummaryJob
from compact.parts.transaction import Attempt, Condensed, append


class AheadJob:
    """One summary written in the background: what it covers, the surface it read, and the
    ``compact/progress`` records of its calls (held until its bracket is written)."""

    def __init__(self, span: list[int], snapshot: tuple[int, ...], turn: int, tokens: int) -> None:
        self.span = span
        self.snapshot = snapshot
        self.turn = turn
        self.tokens = tokens
        """The estimated price of ``span``."""
        self.since = time.monotonic()
        self.records: list[dict[str, Any]] = []
        self.sink: Any = None
        """Set when its bracket is open: records go to the log as they come."""
        self.calling: tuple[SummaryJob, float, int] | None = None
        """The summarizer call in flight: its job, start, and the estimated tokens it reads."""
        self.read = asyncio.Event()
        """Set once the summary has read what it needs from the session (its first call)."""
        self.sent = asyncio.Event()
        """Set when the step it started before began its reply (its prompt, which the summary
        continues, is then in the server's cache), or when that step is over: its call goes."""
        self.task: asyncio.Task[Condensed] | None = None

    def record(self, data: dict[str, Any]) -> None:
        if self.sink is not None:
            self.sink(data)
        else:
            self.records.append(data)

    def intact(self, surface: tuple[int, ...]) -> bool:
        """The surface it read is still the head of ``surface`` (only appended to since)."""
        return surface[: len(self.snapshot)] == self.snapshot

    @property
    def failure(self) -> str | None:
        """Why it failed, once it has; None while it runs or after it succeeded."""
        task = self.task
        if task is None or not task.done() or task.cancelled():
            return None
        exc = task.exception()
        if exc is None:
            return None
        return exc.detail if isinstance(exc, CompactionError) else f"internal error: {exc}"


class AheadCompactService(BasicCompactService):
    """:class:`BasicCompactService` that writes the automatic compaction's summary ahead
    (see the module docstring). With ``compaction.ahead = false`` it is the basic backend."""

    _job: AheadJob | None = None
    _committing: AheadJob | None = None
    _unsubscribe: Callable[[], None] | None = None

    @cached_property
    def _steps(self) -> StepSizes:
        """The context size at each checkpoint once the tokenizer measures it."""
        return StepSizes()

    @cached_property
    def _pace(self) -> Pace:
        """Seconds per step and per summary in this session."""
        return Pace()

    def install(self, hooks: Hooks) -> None:
        super().install(hooks)
        if self.settings.auto:
            hooks.replying.append(self._on_replying)
            self._unsubscribe = self.session.subscribe(self._on_event)

    def close(self) -> None:
        """Stops a summary still running; between turns it is logged as discarded (inside a
        turn nothing of it is written: the turn is being torn down)."""
        if self._job is not None:
            if self.session.open_turn is None and not self.session.readonly:
                self._discard("the session ended before the context reached the compaction mark")
            else:
                _cancel(self._job)
                self._job = None
        if self._unsubscribe is not None:
            self._unsubscribe()
        super().close()

    @property
    def background(self) -> Background | None:
        job = self._job
        if job is None or job is self._committing or job.task is None or job.failure:
            return None  # a failed one is discarded at the next checkpoint: nothing to say
        return Background("summarizing ahead", job.since, ready=job.task.done())

    # --- listeners ----------------------------------------------------------------------------

    async def _on_pre_step(
        self, envelope: Envelope, turn: int, step: int, signal: asyncio.Event | None = None
    ) -> None:
        self._pace.arrived(turn, time.monotonic())
        job = self._job
        if job is not None:
            why = self._unusable(job)
            if why is not None:
                self._discard(why)
        await super()._on_pre_step(envelope, turn, step, signal)
        if self.meter.estimator.ready:
            # Exact sizes only: a bound taken before the tokenizer loaded counts bytes, and
            # steps measured in both would look several times their size.
            self._steps.saw(self.meter.measure(envelope).total)
        if self._job is None and self.settings.ahead and not self.paused and not self.model_off:
            await self._maybe_start(envelope, turn)
        self._pace.left(turn, time.monotonic())

    def _on_replying(self, turn: int, step: int) -> None:
        if self._job is not None:
            self._job.sent.set()

    def _on_event(self, event: Event) -> None:
        # A step that ends without a reply (its request failed, the turn was stopped) lets
        # the summary go too: nothing else would until the next turn's checkpoint.
        if isinstance(event, StepEnd) and self._job is not None:
            self._job.sent.set()

    async def compact_now(
        self,
        envelope: Envelope,
        signal: asyncio.Event | None = None,
        focus: str | None = None,
        source_command_id: str | None = None,
    ) -> CompactionResult | None:
        result = await super().compact_now(envelope, signal, focus, source_command_id)
        if result is not None and self._job is not None:
            self._discard("a manual compaction (/compact) replaced the history it summarized")
        return result

    def _unusable(self, job: AheadJob) -> str | None:
        if not job.intact(tuple(self.session.surface)):
            return "the conversation it summarized changed (a prune or a compaction)"
        failure = job.failure
        return None if failure is None else f"it failed: {failure}"

    # --- starting ahead -----------------------------------------------------------------------

    def early_mark(self, window: int | None) -> int | None:
        """Where the summary starts ahead: the mark less :meth:`Pace.lead` typical steps
        (None: off, the window unknown, or too few steps measured)."""
        mark = self.threshold(window)
        growth = self._steps.growth()
        if growth is None and len(self._steps.totals) == 2:
            # One step measured is estimate enough to start: the mark of a session's first
            # compaction comes a few steps after the tokenizer loads.
            growth = self._steps.totals[1] - self._steps.totals[0]
            growth = growth if growth > 0 else None
        if mark is None or growth is None or not self.settings.ahead:
            return None
        return max(0, mark - self._pace.lead() * growth)

    def _after_tools(self, turn: int) -> bool:
        """The newest reply of this turn called tools: more steps are coming."""
        for event in reversed(self.session.events):
            if isinstance(event, AssistantMessage):
                return event.data.turn == turn and bool(event.data.tool_calls)
        return False

    async def _maybe_start(self, envelope: Envelope, turn: int) -> None:
        window = envelope.window
        early = self.early_mark(window)
        if window is None or early is None or self.locked or not self._after_tools(turn):
            return
        mark = self.schedule.mark(window)
        if self.meter.bound(envelope, warm_at=mark // 2) < early:
            return
        await self.meter.settle()
        measurement = self.meter.measure(envelope)
        # The mark moves with the header's measured size: the one the checkpoint will use.
        self.schedule.header = measurement.header
        mark, early = self.schedule.mark(window), self.early_mark(window) or 0
        if not early <= measurement.total < mark:
            return
        span = select_range(self.session, self.meter.price, self.settings.retain(window))
        if span is None or new_tokens(self.session, span, self.meter.price) < MIN_MANUAL_TOKENS:
            return
        job = AheadJob(
            span,
            tuple(self.session.surface),
            turn,
            sum(self.meter.price(seq) for seq in span),
        )
        header = self.header(envelope)

        async def summarize(summary_job: SummaryJob) -> Summary:
            job.read.set()
            await job.sent.wait()
            reads = self.meter.estimator.messages_tokens(summary_job.messages)
            job.calling = (summary_job, time.monotonic(), reads)
            try:
                return await self.summarize(summary_job)
            finally:
                job.calling = None

        reader = RangeReader(self.session, self.meter.estimator, price=self.meter.price)
        condenser = Condenser(reader, summarize, self.settings)
        job.task = asyncio.create_task(
            condenser.condense(header, span, job.tokens, job.record, read_newest=True),
            name="summary-ahead",
        )
        job.task.add_done_callback(lambda task: self._timed(job, task))
        self._job = job
        # The step opens only once the summary read the session as it is now: what it read
        # is then exactly ``snapshot``.
        reading = asyncio.ensure_future(job.read.wait())
        try:
            await asyncio.wait({reading, job.task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            reading.cancel()

    # --- committing ---------------------------------------------------------------------------

    async def _bracket(
        self, envelope: Envelope, attempt: Attempt, signal: asyncio.Event | None
    ) -> CompactionResult:
        job = self._job
        if job is None or attempt.trigger != "auto":
            return await super()._bracket(envelope, attempt, signal)
        why = self._unusable(job)
        if why is not None:
            self._discard(why)
            return await super()._bracket(envelope, attempt, signal)
        self._committing = job
        try:
            ahead = dataclasses.replace(attempt, span=job.span, ahead=True)
            return await super()._bracket(envelope, ahead, signal)
        finally:
            self._job = self._committing = None

    async def _condense(
        self,
        compaction_id: str,
        header: Header,
        span: list[int],
        attempt: Attempt,
        shadowed_tokens: int,
    ) -> Condensed:
        job = self._committing
        if job is None or span is not job.span or job.task is None:
            started = time.monotonic()
            condensed = await super()._condense(
                compaction_id, header, span, attempt, shadowed_tokens
            )
            if condensed.fallback_reason is None:
                self._pace.summarized(time.monotonic() - started)
            return condensed

        def record(data: dict[str, Any]) -> None:
            append(self.session, "compact/progress", {"compaction_id": compaction_id, **data})

        for data in job.records:
            record(data)
        job.records, job.sink = [], record
        try:
            condensed = await job.task  # the rest of it, if any; a cancel stops it too
        except CompactionError as exc:
            self.announce(
                "info", f"The summary written ahead failed ({exc.detail}); summarizing now."
            )
            return await super()._condense(compaction_id, header, span, attempt, shadowed_tokens)
        for text in self.guards.model_summary(attempt.turn, condensed.fallback_reason):
            self.announce("warning", text)
        return condensed

    def _mask_from(self) -> int:
        newest = super()._mask_from()
        job = self._committing
        if job is None:
            return newest
        # The checkpoint read all of ``snapshot`` (``read_newest``), which now follows it
        # less the span it replaced; what came after the snapshot is not in it.
        return min(newest, 1 + len(job.snapshot) - len(job.span))

    def _timed(self, job: AheadJob, task: asyncio.Task[Condensed]) -> None:
        """Times a summary that succeeded (from its start: the step's reply began later);
        reads a failure's outcome so that one nobody awaited is not reported as "never
        retrieved" (it is logged when the job is discarded)."""
        with contextlib.suppress(asyncio.CancelledError, Exception):
            if task.exception() is None and task.result().fallback_reason is None:
                self._pace.summarized(time.monotonic() - job.since)

    # --- discarding ---------------------------------------------------------------------------

    def _discard(self, why: str) -> None:
        """Stop the job and log what it spent as a discarded bracket (log-only events,
        outside any step). A log that cannot be written loses only this record."""
        job, self._job = self._job, None
        if job is None:
            return
        records = list(job.records)
        if job.calling is not None:
            summary_job, started, reads = job.calling
            records.append(
                {
                    "chunk": len(records) + 1,
                    "chunks": max([1, *(r.get("chunks", 1) for r in records)]),
                    "items": len(job.span),
                    "input_tokens": reads,
                    "status": "failed",
                    "reason": "stopped when the summary was discarded; the server reported "
                    "no usage for it",
                    "model": summary_job.model,
                    "usage": None,
                    "max_tokens": summary_job.max_tokens,
                    "elapsed_s": time.monotonic() - started,
                }
            )
        _cancel(job)
        compaction_id = "cmp-" + os.urandom(4).hex()
        head = {"compaction_id": compaction_id, "turn": job.turn}
        try:
            append(
                self.session,
                "compact/start",
                {
                    **head,
                    "trigger": "auto",
                    "items": len(job.span),
                    "tokens": job.tokens,
                    "ahead": True,
                },
            )
            for data in records:
                append(self.session, "compact/progress", {"compaction_id": compaction_id, **data})
            append(
                self.session,
                "compact/end",
                {**head, "error": f"discarded: {why}", "discarded": True},
            )
        except CompactionError as exc:
            self.announce("warning", f"A summary written ahead was discarded: {exc.detail}")


def _cancel(job: AheadJob) -> None:
    if job.task is not None and not job.task.done():
        job.task.cancel()
