"""The basic compaction backend's service: when and what to compact, over one reading of the
context a step.

This module orchestrates; the parts live beside it: the pre-step reading in
:mod:`compact.basic.pressure`, range selection in :mod:`compact.basic.selection`, the
compactions themselves in :mod:`compact.basic.compactor`, the summary in
:mod:`compact.basic.condense` and :mod:`compact.basic.summarizers`, the breakers in
:mod:`compact.basic.guards`, summarizing ahead in :mod:`compact.basic.ahead`.

- **Pressure** (pre-step listener), with the window known: the checkpoint reads the context
  once (:class:`~compact.basic.pressure.Pressure`) and every decision reads that value.
  Nothing is rewritten below the *mark* — ``floor(window × threshold_ratio)`` (or
  ``threshold_tokens``, if lower: then the other ratios apply to the window that threshold
  implies), or earlier where compacting costs less over the coming steps than holding the
  context with a prompt cache (:mod:`compact.basic.schedule`). At the mark, compact a
  head-anchored range that leaves a retained tail of about ``retain`` tokens; while what it
  left is still at the mark, repeat at most ``retries`` more times. When the summary read
  the whole conversation (:mod:`compact.basic.suffix`), the retained tail's older tool
  outputs are masked right after it (their content is in the checkpoint; the newest step's
  stay): one rewrite, where a pass of the pruner of its own would void the provider's cache
  once more and hide what no checkpoint carries.
- **Range** (:mod:`compact.basic.selection`), **summary** (:mod:`compact.basic.condense`),
  **bracket** (:mod:`compact.basic.compactor`), **overflow** (:mod:`compact.basic.overflow`),
  **breakers and thrash guard** (:mod:`compact.basic.guards`): each described where it lives.
  Automatic and overflow compactions fall back to the model-free checkpoint when the model
  cannot deliver, so they always land; ``/compact`` and region compactions report the
  failure instead.
- **A cold cache**: at a checkpoint more than the provider's TTL after the last model
  request (:mod:`compact.parts.cold`, on the service's ``clock``), a compaction due within a
  few steps is made now when the schedule prices it cheaper so
  (:meth:`compact.basic.schedule.Schedule.cold_now`).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

from agent.envelope import Envelope
from agent.hooks import Hooks
from agent.llm.chat import ChatModel
from agent.llm.errors import ContextOverflow
from agent.llm.prompt_cache import CachePlan
from agent.log.session import Session
from agent.meter import TokenMeter
from compact.basic import pressure as pressures
from compact.basic.ahead import Ahead
from compact.basic.compactor import Compactor
from compact.basic.condense import Condenser, Header
from compact.basic.dry_run import Preview
from compact.basic.guards import Guards
from compact.basic.overflow import recover_overflow
from compact.basic.pressure import Pressure, due_when_cold, read_pressure
from compact.basic.prune import Pruner
from compact.basic.reading import RangeReader
from compact.basic.schedule import Schedule
from compact.basic.selection import (
    MIN_MANUAL_TOKENS,
    balanced_span,
    new_tokens,
    select_range,
)
from compact.basic.summarizers import ModelSummarizer
from compact.commands.uncompact import Excused
from compact.contract.events import PruneTrigger
from compact.contract.policy import CompactionSettings
from compact.contract.service import (
    Background,
    CompactionError,
    CompactionResult,
    CompactService,
    CostFigures,
    DryRun,
)
from compact.parts.checkpoint import Summary, SummaryJob
from compact.parts.cold import idle_s
from compact.parts.transaction import Attempt


class BasicCompactService(CompactService):
    """The basic backend for one session (see the module docstring).

    Args:
        session: the session to compact.
        meter: its token meter (prices and measurements).
        model: the model that writes summaries.
        settings: the policy.
        pruner: tried before any summary under pressure or overflow; None to skip pruning.
        ahead: write the automatic compaction's summary ahead (:mod:`compact.basic.ahead`),
            unless ``settings.ahead`` is off.
        cache_plan: the provider's prompt cache; its TTL says when the cache is cold
            (default: never).
        clock: seconds on the clock of the log's event times (default: the real one).
    """

    def __init__(
        self,
        session: Session,
        meter: TokenMeter,
        model: ChatModel,
        settings: CompactionSettings | None = None,
        *,
        pruner: Pruner | None = None,
        ahead: bool = False,
        cache_plan: CachePlan | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__()
        self.cache_plan = cache_plan or CachePlan(breakpoints=False, ttl_s=math.inf)
        self.clock = clock
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
        self.guards = Guards()
        self.schedule = Schedule(self.settings, pruner is not None, excused=Excused(session))
        self.ahead: Ahead | None = None
        if ahead and self.settings.ahead:
            self.ahead = Ahead(
                session,
                meter,
                self.settings,
                self.guards,
                self.summarize,
                self.announce,
            )
        self.preview = Preview(
            session, meter, self.settings, self.schedule, self.condenser, pruner is not None
        )
        self.compactor = Compactor(
            session,
            meter,
            self.settings,
            self.schedule,
            self.guards,
            self.condenser,
            pruner=pruner,
            ahead=self.ahead,
            announce=self.announce,
        )

    @property
    def model(self) -> ChatModel:
        """The model that writes summaries (settable, e.g. after ``/model``)."""
        return self.summarizer.model

    @model.setter
    def model(self, model: ChatModel) -> None:
        self.summarizer.model = model

    def install(self, hooks: Hooks) -> None:
        """Register the pressure and overflow listeners, and those of the part that writes
        summaries ahead (none when ``auto`` is off)."""
        if not self.settings.auto:
            return
        hooks.pre_step.append(self._on_pre_step)
        hooks.request_error.append(self._on_request_error)
        if self.ahead is not None:
            self.ahead.install(hooks)

    def close(self) -> None:
        if self.ahead is not None:
            self.ahead.close()
        self.compactor.lock.close()

    @property
    def locked(self) -> bool:
        """True while a compaction of this process is between start and end."""
        return self.compactor.lock.held

    @property
    def paused(self) -> str | None:
        """Why auto compaction is paused for the current turn, or None."""
        return self.guards.paused(self.session.open_turn)

    @property
    def model_off(self) -> bool:
        """True while automatic compactions skip the model (it failed too often this turn)."""
        return self.guards.model_off(self.session.open_turn)

    @property
    def background(self) -> Background | None:
        return None if self.ahead is None else self.ahead.background

    # --- listeners ----------------------------------------------------------------------------

    async def _on_pre_step(
        self, envelope: Envelope, turn: int, step: int, signal: asyncio.Event | None = None
    ) -> None:
        """The pre-step checkpoint: one reading of the context, then compaction at the mark
        and a summary started ahead before it, both reading that value."""
        ahead = self.ahead
        if ahead is not None:
            ahead.arrived(turn)
        self.guards.new_step(turn)
        paused = self.paused is not None
        pressure = await self.read_pressure(envelope, counted=not paused)
        if pressure is not None and not paused:
            if not pressure.due and pressure.measured and self.cold():
                pressure = due_when_cold(
                    pressure, self.schedule, written=self.background is not None
                )
            pressure = await self._relieve_auto(envelope, pressure, turn, signal)
        if ahead is not None:
            if pressure is not None:
                ahead.saw(pressure)
                if self._may_start_ahead(turn, step):
                    await ahead.maybe_start(envelope, turn, pressure)
            ahead.left(turn)

    def cold(self) -> bool:
        """Whether the provider's cache has expired: longer than its TTL since the
        session's newest model request (or none was made)."""
        return self.cache_plan.cold(idle_s(self.session, self.clock()))

    def _may_start_ahead(self, turn: int, step: int) -> bool:
        ahead = self.ahead
        paused = self.paused or self.model_off
        return ahead is not None and not paused and ahead.may_start(turn, self.locked, step)

    async def pause_began(self, envelope: Envelope, cache: CachePlan) -> None:
        """The person's pause after a turn: the summary the next turn's first compaction
        needs is written now when that compaction is near and the cache warm
        (:meth:`compact.basic.ahead.Ahead.pause`)."""
        ahead = self.ahead
        if ahead is None or not self.settings.auto or not self.meter.estimator.ready:
            return  # before the tokenizer loads the context is far below any mark
        if self.paused or self.model_off or self.locked:
            return
        pressure = await self.read_pressure(envelope, counted=False)
        if pressure is not None:
            await ahead.pause(envelope, pressure, cache)

    async def _relieve_auto(
        self, envelope: Envelope, pressure: Pressure, turn: int, signal: asyncio.Event | None
    ) -> Pressure:
        """:meth:`_relieve`, its failures counted by the breakers; the reading after it."""
        try:
            result, pressure = await self._relieve(envelope, pressure, signal)
        except CompactionError as exc:
            if exc.code != "cancelled":  # cancelled: the turn is being stopped, not a failure
                for text in self.guards.auto_failed(turn, exc.detail):
                    self.announce("warning", text)
            return pressure
        if result is not None:
            self.guards.auto_landed()
        return pressure

    async def _on_request_error(
        self,
        envelope: Envelope,
        error: ContextOverflow,
        turn: int,
        step: int,
        signal: asyncio.Event | None = None,
    ) -> bool:
        generation = self.session.replace_generation
        try:
            await self.compact_if_needed(envelope, "overflow", signal)
        except CompactionError as exc:
            if exc.code != "cancelled":
                self.announce(
                    "warning", f"Could not recover from the context overflow: {exc.detail}"
                )
        # Retry only on proof that the surface shrank (a prune alone counts).
        return self.session.replace_generation > generation

    # --- the contract -------------------------------------------------------------------------

    def threshold(self, window: int | None) -> int | None:
        """Where automatic compaction runs (:meth:`compact.basic.schedule.Schedule.mark`)."""
        if window is None or not self.settings.auto:
            return None
        return self.schedule.mark(window)

    def step_growth(self) -> int | None:
        return self.schedule.steps.growth()

    async def read_pressure(self, envelope: Envelope, *, counted: bool = True) -> Pressure | None:
        """The checkpoint's one reading (:func:`compact.basic.pressure.read_pressure`)."""
        early = None if self.ahead is None else self.ahead.early_mark
        return await read_pressure(self.meter, self.schedule, envelope, early, counted=counted)

    async def compact_if_needed(
        self,
        envelope: Envelope,
        trigger: PruneTrigger,
        signal: asyncio.Event | None = None,
    ) -> CompactionResult | None:
        if trigger == "overflow":
            return await recover_overflow(
                self.session,
                self.meter,
                self.pruner,
                lambda attempt: self._bracket(envelope, attempt, signal),
                signal,
            )
        pressure = await self.read_pressure(envelope)
        if pressure is None:
            return None
        result, _ = await self._relieve(envelope, pressure, signal)
        return result

    async def _relieve(
        self, envelope: Envelope, pressure: Pressure, signal: asyncio.Event | None
    ) -> tuple[CompactionResult | None, Pressure]:
        """Compact when ``pressure`` is due; what landed, and the reading after it."""
        if not pressure.due:
            return None, pressure
        window, threshold, mark = pressure.window, pressure.threshold, pressure.mark
        # Below the threshold the tail keeps its proportion to the mark, not to the window
        # (a 16% tail of 128k would leave nothing to compact at a 15k mark).
        retain = self.settings.retain(window) * min(mark, threshold) // threshold
        # No pass of the pruner here: a mask or a trim on its own rewrites history (the
        # provider's prefix cache is lost from there on) and hides what no checkpoint
        # carries. The compaction below masks what its checkpoint read, in the same rewrite.
        result, attempts = await self.compactor.down(envelope, retain, mark, signal)
        left = pressure.tokens if result is None else self.schedule.left or 0
        scale = self.settings.effective_window(window)
        in_tokens = threshold == self.settings.threshold_tokens
        turn = self.session.open_turn
        said = self.guards.after(turn, left, threshold, scale, attempts, in_tokens=in_tokens)
        if said is not None:
            self.announce("warning", said)
        if result is None:
            return None, pressure
        early = None if self.ahead is None else self.ahead.early_mark
        return result, pressures.after(pressure, self.schedule, left, early)

    def dry_run(self, envelope: Envelope) -> DryRun:
        return self.preview.dry_run(envelope)

    def forecast(self, envelope: Envelope) -> CostFigures | None:
        return self.preview.forecast(envelope)

    async def compact_region(
        self, start: int, end: int, envelope: Envelope, signal: asyncio.Event | None = None
    ) -> CompactionResult:
        span = balanced_span(self.session, start, end)
        return await self._bracket(
            envelope, Attempt(span, "region", self.session.open_turn), signal
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
        span = select_range(self.session, self.meter.price, 0)
        if span is None or new_tokens(self.session, span, self.meter.price) < MIN_MANUAL_TOKENS:
            return None
        attempt = Attempt(span, "manual", None, focus, source_command_id)
        result = await self._bracket(envelope, attempt, signal)
        if self.ahead is not None:
            self.ahead.discard("a manual compaction (/compact) replaced the history it summarized")
        return result

    def select_range(self, retain: int) -> list[int] | None:
        """The head-anchored range to compact keeping about ``retain`` tokens at the tail
        (see :func:`compact.basic.selection.select_range`)."""
        return select_range(self.session, self.meter.price, retain)

    # --- one compaction -----------------------------------------------------------------------

    def header(self, envelope: Envelope) -> Header:
        """The header the coming request carries, as the summary calls replay it."""
        return self.compactor.header(envelope)

    async def _bracket(
        self, envelope: Envelope, attempt: Attempt, signal: asyncio.Event | None
    ) -> CompactionResult:
        return await self.compactor.bracket(envelope, attempt, signal)

    async def summarize(self, job: SummaryJob) -> Summary:
        """Write the checkpoint for one :class:`SummaryJob` — the one hook for subclasses.

        The default asks the model (:class:`~compact.basic.summarizers.ModelSummarizer`). Raise
        :class:`~compact.parts.checkpoint.SummaryRejected` (``cut=True`` for a reply that hit
        ``job.max_tokens``) or :class:`CompactionError` ``summary`` when there is none.
        """
        return await self.summarizer(job)
