"""Compaction nobody waits for: the summary written ahead, committed at the checkpoint.

A part of the basic service (:class:`~compact.basic.service.BasicCompactService` composes
it). The automatic mark is the pre-step checkpoint's reading's ``mark``
(:class:`~compact.basic.pressure.Pressure`: the threshold, or earlier where the prompt-cache
schedule says so). From its *early mark* — that mark less as many typical steps as the
summarizer needs (:meth:`compact.basic.pace.Pace.lead` × the growth
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
starts when the turn is likely to end: only after a step that called tools, or at a turn's
first checkpoint (its first step request is about to go; it is sent with it, so the summary
is ready by the second checkpoint instead of being waited for there).

**In the person's pause.** A turn's first compaction would otherwise be waited for whole.
A front end that has a pause (the app, ``--plain``; not ``-p``) calls :meth:`Ahead.pause`
once a turn ended with a final answer: when the context is already at the early mark (the
next turn's first step or two would reach the mark, by the measured growth and the pace),
the summary is written while the person reads and types. It continues the final answer's
request, whose prefix the provider caches only for its TTL
(:class:`~agent.llm.prompt_cache.CachePlan`): it starts right after the answer, and not at
all when that request is already older than the TTL (the summary would read everything at
full price). It is committed where the compaction is due — the next turn's first
checkpoint, or the second, whose newest step stays verbatim after any compaction, so a
summary that did not read it costs nothing more — as any summary written ahead, if the
history it read is still the head of the surface; else it is discarded.

A process that has just begun (each ``-p`` turn, a ``--continue``) has measured no step yet:
the growth is then read from the log (:func:`compact.basic.logged_growth.logged_growth`).
``compaction.ahead = false`` turns it all off.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Any

from agent.envelope import Envelope
from agent.hooks import Hooks
from agent.llm.prompt_cache import CachePlan
from agent.log.events import AssistantMessage, Event, StepEnd, TurnEnd
from agent.log.session import Session
from agent.meter import TokenMeter
from compact.basic.ahead_job import AheadJob, log_discarded
from compact.basic.condense import Condenser, Header
from compact.basic.guards import Guards
from compact.basic.logged_growth import LoggedGrowth
from compact.basic.pace import Pace
from compact.basic.pressure import Pressure
from compact.basic.reading import RangeReader
from compact.basic.schedule import StepSizes
from compact.basic.selection import MIN_MANUAL_TOKENS, new_tokens, select_range
from compact.contract.policy import CompactionSettings
from compact.contract.service import Background, CompactionError, NoticeLevel
from compact.parts.checkpoint import Summarizer, Summary, SummaryJob
from compact.parts.cold import idle_s
from compact.parts.transaction import Attempt, Condensed, append

Announce = Callable[[NoticeLevel, str], None]
Foreground = Callable[[], Awaitable[Condensed]]
"""The summary written now, at the checkpoint (the service's own)."""


class Ahead:
    """Summarizing ahead for one basic service (see the module docstring). The service
    calls it at its checkpoint (:meth:`arrived`, :meth:`maybe_start`, :meth:`left`), around
    each compaction (:meth:`claim`, :meth:`release`, :meth:`condense`, :meth:`mask_from`)
    and after ``/compact`` (:meth:`discard`)."""

    def __init__(
        self,
        session: Session,
        meter: TokenMeter,
        settings: CompactionSettings,
        guards: Guards,
        summarize: Summarizer,
        announce: Announce,
    ) -> None:
        self.session = session
        self.meter = meter
        self.settings = settings
        self.steps = StepSizes()
        """The context each checkpoint left (after its compaction, if one landed), once the
        tokenizer measures it: the growth the early mark is set by."""
        self.guards = guards
        self.summarize = summarize
        self.announce = announce
        self.pace = Pace()
        """Seconds per step and per summary in this session."""
        self.job: AheadJob | None = None
        self.committing: AheadJob | None = None
        self.logged_growth = LoggedGrowth(session, meter.estimator)
        """What a process knows of a step's growth before it has measured one itself."""
        self._unsubscribe: Callable[[], None] | None = None

    def install(self, hooks: Hooks) -> None:
        hooks.replying.append(self._on_replying)
        self._unsubscribe = self.session.subscribe(self._on_event)

    def close(self) -> None:
        """Stops a summary still running; between turns it is logged as discarded (inside a
        turn nothing of it is written: the turn is being torn down)."""
        if self.job is not None:
            if self.session.open_turn is None and not self.session.readonly:
                self.discard("the session ended before the context reached the compaction mark")
            else:
                self.job.cancel()
                self.job = None
        if self._unsubscribe is not None:
            self._unsubscribe()

    @property
    def background(self) -> Background | None:
        job = self.job
        if job is None or job is self.committing or job.task is None or job.failure:
            return None  # a failed one is discarded at the next checkpoint: nothing to say
        return Background("summarizing ahead", job.since, ready=job.task.done())

    # --- listeners ----------------------------------------------------------------------------

    def _on_replying(self, turn: int, step: int) -> None:
        if self.job is not None:
            self.job.sent.set()

    def _on_event(self, event: Event) -> None:
        # A step that ends without a reply (its request failed, the turn was stopped) lets
        # the summary go too: nothing else would until the next turn's checkpoint.
        if isinstance(event, StepEnd) and self.job is not None:
            self.job.sent.set()

    # --- at the checkpoint --------------------------------------------------------------------

    def arrived(self, turn: int) -> None:
        """The checkpoint begins: time the step, drop a summary that can no longer be used."""
        self.pace.arrived(turn, time.monotonic())
        job = self.job
        if job is not None and (why := self._unusable(job)) is not None:
            self.discard(why)

    def saw(self, pressure: Pressure) -> None:
        """What the checkpoint left: a measured reading counts as a step's size."""
        if pressure.measured:
            self.steps.saw(pressure.tokens)

    def left(self, turn: int) -> None:
        """The checkpoint is over: the step's request goes."""
        self.pace.left(turn, time.monotonic())

    def may_start(self, turn: int, locked: bool, step: int = 0) -> bool:
        """Whether a summary may start at this checkpoint: none in flight, no compaction
        holds the lock, and more steps are coming: the newest reply called tools, or this is
        the turn's first checkpoint (``step`` 1: its request is about to go)."""
        if self.job is not None or locked:
            return False
        return step == 1 or self._after_tools(turn)

    def early_mark(self, mark: int, tokens: int | None = None) -> int | None:
        """Where the summary starts ahead: ``mark`` less :meth:`Pace.lead` typical steps,
        ``tokens`` (a measured reading) counted among them (None: too few steps measured)."""
        growth = self.growth(tokens)
        if growth is None:
            return None
        return max(0, mark - self.pace.lead() * growth)

    def growth(self, tokens: int | None = None) -> int | None:
        """The typical growth of a step: as measured at this process's checkpoints (with
        ``tokens``, a measured reading, counted among them), else as the log shows it
        (:class:`LoggedGrowth`); None when neither tells."""
        steps = self.steps
        if tokens is not None:
            steps = StepSizes(list(steps.totals))
            steps.saw(tokens)
        growth = steps.growth()
        if growth is None and len(steps.totals) == 2:
            # One step measured is estimate enough to start: the mark of a session's first
            # compaction comes a few steps after the tokenizer loads.
            growth = steps.totals[1] - steps.totals[0]
            growth = growth if growth > 0 else None
        return self.logged_growth() if growth is None else growth

    def _unusable(self, job: AheadJob) -> str | None:
        if not job.intact(tuple(self.session.surface)):
            return "the conversation it summarized changed (a prune or a compaction)"
        failure = job.failure
        return None if failure is None else f"it failed: {failure}"

    def _after_tools(self, turn: int) -> bool:
        """The newest reply of this turn called tools: more steps are coming."""
        for event in reversed(self.session.events):
            if isinstance(event, AssistantMessage):
                return event.data.turn == turn and bool(event.data.tool_calls)
        return False

    async def maybe_start(self, envelope: Envelope, turn: int, pressure: Pressure) -> None:
        """Start the summary when ``pressure`` is between the early mark and the mark; the
        step opens once it has read the session."""
        if pressure.ahead_due:
            await self._start(envelope, turn, pressure, sent=False)

    async def pause(self, envelope: Envelope, pressure: Pressure, cache: CachePlan) -> bool:
        """The person's pause after a final answer began (see the module docstring): start
        the summary when ``pressure`` (measured now, between turns) is at the early mark and
        the last request's prefix is still cached by ``cache``'s TTL. Returns once it has
        read the session (True), or at once when none starts (False)."""
        last = self._last_turn()
        if self.job is not None or last is None or last.data.reason != "completed":
            return False
        if cache.cold(idle_s(self.session, time.time())):
            return False  # the summary would read the whole conversation at full price
        # The early mark of the steps measured so far (this reading, after a final answer,
        # is no step's growth).
        early = self.early_mark(pressure.mark)
        if early is None or not pressure.measured or pressure.tokens < early:
            return False
        return await self._start(envelope, last.data.turn, pressure, sent=True)

    def _last_turn(self) -> TurnEnd | None:
        """The newest ``turn/end`` when no turn is open (None: a turn runs, or none ran)."""
        if self.session.open_turn is not None:
            return None
        for event in reversed(self.session.events):
            if isinstance(event, TurnEnd):
                return event
        return None

    async def _start(
        self, envelope: Envelope, turn: int, pressure: Pressure, *, sent: bool
    ) -> bool:
        """Start the summary of the range the coming compaction would replace; return once
        it has read the session (True), or at once when there is too little to summarize.
        ``sent``: the request it continues was already read by the server (in the pause:
        the final answer's), so its call goes at once; else once the step's reply begins."""
        # The tail a compaction at the mark keeps (:meth:`BasicCompactService._relieve`):
        # below the threshold, in proportion to the mark.
        retain = self.settings.retain(pressure.window) * min(pressure.mark, pressure.threshold)
        retain //= pressure.threshold
        span = select_range(self.session, self.meter.price, retain)
        if span is None or new_tokens(self.session, span, self.meter.price) < MIN_MANUAL_TOKENS:
            return False
        snapshot = tuple(self.session.surface)
        job = AheadJob(span, snapshot, turn, sum(self.meter.price(seq) for seq in span))
        if sent:
            job.sent.set()
        header = Header.of(envelope, pressure.header, self.settings.summarizer_model)

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
        self.job = job
        # The step opens only once the summary read the session as it is now: what it read
        # is then exactly ``snapshot``.
        reading = asyncio.ensure_future(job.read.wait())
        try:
            await asyncio.wait({reading, job.task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            reading.cancel()
        return True

    # --- committing ---------------------------------------------------------------------------

    def claim(self, attempt: Attempt) -> Attempt:
        """The attempt to commit: an automatic one takes the summary written ahead's range
        when that summary can still be used (one that cannot is discarded)."""
        job = self.job
        if job is None or attempt.trigger != "auto":
            return attempt
        why = self._unusable(job)
        if why is not None:
            self.discard(why)
            return attempt
        self.committing = job
        return dataclasses.replace(attempt, span=job.span, ahead=True)

    def release(self) -> None:
        """The claimed attempt is over, committed or not: its summary is spent."""
        if self.committing is not None:
            self.job = self.committing = None

    async def condense(
        self, compaction_id: str, span: list[int], attempt: Attempt, foreground: Foreground
    ) -> Condensed:
        """The summary of ``span`` at the checkpoint: the one written ahead when the attempt
        claimed it (its held records logged now, the rest awaited), else ``foreground``
        (timed for the pace)."""
        job = self.committing
        if job is None or span is not job.span or job.task is None:
            started = time.monotonic()
            condensed = await foreground()
            if condensed.fallback_reason is None:
                self.pace.summarized(time.monotonic() - started)
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
            return await foreground()
        for text in self.guards.model_summary(attempt.turn, condensed.fallback_reason):
            self.announce("warning", text)
        return condensed

    def mask_from(self, newest: int) -> int:
        """Surface position from which the checkpoint just landed masks nothing: ``newest``
        (the newest step), or earlier for a summary written ahead."""
        job = self.committing
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
                self.pace.summarized(time.monotonic() - job.since)

    # --- discarding ---------------------------------------------------------------------------

    def discard(self, why: str) -> None:
        """Stop the summary in flight, if any, and log what it spent as a discarded bracket
        (:func:`~compact.basic.ahead_job.log_discarded`). A log that cannot be written
        loses only this record."""
        job, self.job = self.job, None
        if job is None:
            return
        try:
            log_discarded(self.session, job, why)
        except CompactionError as exc:
            self.announce("warning", f"A summary written ahead was discarded: {exc.detail}")
