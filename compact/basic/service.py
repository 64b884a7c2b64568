"""The basic compaction backend: the RFC's algorithm, plus a pruner and two guards.

This module orchestrates; the parts live beside it: range selection in
:mod:`compact.basic.selection`, the bracket in :mod:`compact.parts.transaction`, the summary in
:mod:`compact.basic.condense` and :mod:`compact.basic.summarizers`, the breakers in
:mod:`compact.basic.guards`.

- **Pressure** (pre-step listener), with the window known: nothing is rewritten below the
  *mark* — ``floor(window × threshold_ratio)`` (or ``threshold_tokens``, if lower: then the
  other ratios apply to the window that threshold implies), or earlier where compacting
  costs less over the coming steps than holding the context with a prompt cache
  (:mod:`compact.basic.schedule`). At the mark, compact a head-anchored range that leaves a
  retained tail of about ``retain`` tokens; re-measure and repeat at most ``retries`` more
  times. When the summary read the whole conversation (:mod:`compact.basic.suffix`), the retained
  tail's older tool outputs are masked right after it (their content is in the checkpoint;
  the newest step's stay): one rewrite, where a pass of the pruner of its own would void the
  provider's cache once more and hide what no checkpoint carries.
- **Range**: walk from the tail summing node prices until the retention is reached (always
  keeping the newest node), move the cut head-ward until it splits no tool call from its
  result; the range is everything before the cut, so an earlier checkpoint at the head is
  merged into the new one. Nothing before the cut → decline (None).
- **Summary** (:mod:`compact.basic.condense`): the whole conversation as its next request would
  carry it, continued by the instruction (the prompt cache serves it), with the originals of
  pruned results after it; or, when that does not fit the window, the range as the model
  first saw it (originals of pruned results), in chunks when it is more than one call may
  read; each call capped, timed, logged as ``compact/progress`` and retried once tersely
  after a cut. Automatic and
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
from typing import Any

from agent.chat import ChatModel
from agent.envelope import Envelope
from agent.hooks import Hooks
from agent.llm.errors import ContextOverflow
from agent.log.session import Session
from agent.meter import TokenMeter
from compact.basic.condense import Condenser, Header, ModelFree
from compact.basic.dry_run import dry_run
from compact.basic.guards import BREAKER_FAILURES, Guards
from compact.basic.prune import Pruner
from compact.basic.reading import RangeReader
from compact.basic.schedule import Schedule
from compact.basic.selection import (
    balanced_span,
    new_tokens,
    newest_step,
    not_worth_it,
    select_range,
    tail_start,
)
from compact.basic.summarizers import ModelSummarizer
from compact.commands.uncompact import Excused
from compact.contract.events import PruneTrigger
from compact.contract.policy import CompactionSettings
from compact.contract.service import CompactionError, CompactionResult, CompactService, DryRun
from compact.parts.checkpoint import (
    Summary,
    SummaryJob,
)
from compact.parts.transaction import Attempt, Condensed, Lock, append, bracketed

MIN_MANUAL_TOKENS = 512
"""Below this much new history a summary cannot save anything worth a model call (the
checkpoint's own sections cost about that much)."""


class BasicCompactService(CompactService):
    """The basic backend for one session (see the module docstring).

    Args:
        session: the session to compact.
        meter: its token meter (prices and measurements).
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
        self.guards = Guards()
        self.schedule = Schedule(self.settings, pruner is not None, excused=Excused(session))
        self._lock = Lock(session)

    @property
    def model(self) -> ChatModel:
        """The model that writes summaries (settable, e.g. after ``/model``)."""
        return self.summarizer.model

    @model.setter
    def model(self, model: ChatModel) -> None:
        self.summarizer.model = model

    def install(self, hooks: Hooks) -> None:
        """Register the pressure and overflow listeners (none when ``auto`` is off)."""
        if not self.settings.auto:
            return
        hooks.pre_step.append(self._on_pre_step)
        hooks.request_error.append(self._on_request_error)

    def close(self) -> None:
        self._lock.close()

    @property
    def locked(self) -> bool:
        """True while a compaction of this process is between start and end."""
        return self._lock.held

    @property
    def paused(self) -> str | None:
        """Why auto compaction is paused for the current turn, or None."""
        return self.guards.paused(self.session.open_turn)

    @property
    def model_off(self) -> bool:
        """True while automatic compactions skip the model (it failed too often this turn)."""
        return self.guards.model_off(self.session.open_turn)

    # --- listeners ----------------------------------------------------------------------------

    async def _on_pre_step(
        self, envelope: Envelope, turn: int, step: int, signal: asyncio.Event | None = None
    ) -> None:
        self.guards.new_step(turn)
        if self.paused:
            return
        try:
            result = await self.compact_if_needed(envelope, "pressure", signal)
        except CompactionError as exc:
            if exc.code == "cancelled":
                return  # the turn is being stopped: not a failure of compaction
            for text in self.guards.auto_failed(turn, exc.detail):
                self.announce("warning", text)
            return
        if result is not None:
            self.guards.auto_landed()

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

    async def compact_if_needed(
        self,
        envelope: Envelope,
        trigger: PruneTrigger,
        signal: asyncio.Event | None = None,
    ) -> CompactionResult | None:
        if trigger == "overflow":
            return await self._recover_overflow(envelope, signal)
        window = envelope.window
        if window is None:
            return None
        threshold = self.settings.threshold(window)
        mark = self.schedule.mark(window)
        # A load begun at an earlier checkpoint: every step from here on is measured.
        await self.meter.estimator.warmed()
        # Far below the mark: decided without waiting for the tokenizer, which starts
        # loading once the history is halfway there.
        bound = self.meter.bound(envelope, warm_at=mark // 2)
        if self.meter.estimator.ready:  # a byte bound would make steps look 2-3x their size
            self.schedule.steps.saw(bound)
        if bound < mark:
            return None
        await self.meter.settle()  # a long resumed log is priced with pauses, not at once
        measurement = self.meter.measure(envelope)
        self.schedule.header = measurement.header
        total, mark = measurement.total, self.schedule.mark(window)
        if total < mark:
            return None
        # Below the threshold the tail keeps its proportion to the mark, not to the window
        # (a 16% tail of 128k would leave nothing to compact at a 15k mark).
        retain = self.settings.retain(window) * min(mark, threshold) // threshold
        scale = self.settings.effective_window(window)
        # No pass of the pruner here: a mask or a trim on its own rewrites history (the
        # provider's prefix cache is lost from there on) and hides what no checkpoint
        # carries. The compaction below masks what its checkpoint read, in the same rewrite.
        result, attempts = await self._compact_down(envelope, retain, mark, signal)
        turn = self.session.open_turn
        total = self.meter.measure(envelope).total
        in_tokens = threshold == self.settings.threshold_tokens
        said = self.guards.after(turn, total, threshold, scale, attempts, in_tokens=in_tokens)
        if said is not None:
            self.announce("warning", said)
        return result

    async def _compact_down(
        self, envelope: Envelope, retain: int, threshold: int, signal: asyncio.Event | None
    ) -> tuple[CompactionResult | None, int]:
        """Compact until the context is below ``threshold`` (at most ``1 + retries``
        attempts); the last result that landed, and how many attempts were made."""
        result = None
        attempts = 0
        for _ in range(1 + self.settings.retries):
            span = select_range(self.session, self.meter.price, retain)
            if span is None or new_tokens(self.session, span, self.meter.price) < MIN_MANUAL_TOKENS:
                break  # nothing, or too little for a summary to save anything
            if result is not None and not_worth_it(span, result, self.meter.price):
                break
            attempts += 1
            try:
                attempt = Attempt(span, "auto", self.session.open_turn, mark=threshold)
                result = await self._bracket(envelope, attempt, signal)
            except CompactionError as exc:
                if result is None:
                    raise
                # A retry that fails does not undo the compaction that already landed.
                self.announce("warning", f"A further compaction failed: {exc.detail}")
                break
            if self.meter.measure(envelope).total < threshold:
                break
        return result, attempts

    def dry_run(self, envelope: Envelope) -> DryRun:
        return dry_run(self.session, self.meter, envelope, MIN_MANUAL_TOKENS)

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
        return await self._bracket(envelope, attempt, signal)

    def select_range(self, retain: int) -> list[int] | None:
        """The head-anchored range to compact keeping about ``retain`` tokens at the tail
        (see :func:`compact.basic.selection.select_range`)."""
        return select_range(self.session, self.meter.price, retain)

    # --- one compaction -----------------------------------------------------------------------

    def header(self, envelope: Envelope) -> Header:
        """The header the coming request carries, as the summary calls replay it."""
        tokens = self.meter.measure(envelope).header
        model = self.settings.summarizer_model or envelope.model
        return Header(model, envelope.system, envelope.tools, tokens, envelope.window)

    async def _bracket(
        self, envelope: Envelope, attempt: Attempt, signal: asyncio.Event | None
    ) -> CompactionResult:
        header = self.header(envelope)
        read_all = False

        async def condense(compaction_id: str, span: list[int], shadowed: int) -> Condensed:
            nonlocal read_all
            condensed = await self._condense(compaction_id, header, span, attempt, shadowed)
            read_all = condensed.read_all
            return condensed

        result = await bracketed(self.session, self.meter, self._lock, attempt, condense, signal)
        self.schedule.last_summary = result.summary_tokens
        if read_all and self.pruner is not None and attempt.trigger == "auto":
            # The checkpoint read the retained tail too: what the tail's older outputs said
            # is in it, so they leave the view now, before the next request (one rewrite,
            # not two). The newest step's results stay: the model is acting on them.
            await self.pruner.prune(
                protect_from=self._mask_from(),
                trigger="pressure",
                kinds=("mask",),
                carried_by=result.compaction_id,
            )
        self.schedule.left = self.meter.measure(envelope).total
        return result

    def _mask_from(self) -> int:
        """Surface position from which the checkpoint just landed masks nothing."""
        return newest_step(self.session)

    async def _condense(
        self,
        compaction_id: str,
        header: Header,
        span: list[int],
        attempt: Attempt,
        shadowed_tokens: int,
    ) -> Condensed:
        """The summary of ``span``: the model's, or for automatic and overflow compactions
        the model-free checkpoint when the model cannot deliver (announced, and counted by
        the model breaker)."""
        automatic = attempt.trigger in ("auto", "overflow")
        turn = self.session.open_turn
        mode: ModelFree = "never"
        if automatic:
            mode = "only" if self.guards.model_off(turn) else "on_failure"

        def record(data: dict[str, Any]) -> None:
            append(self.session, "compact/progress", {"compaction_id": compaction_id, **data})

        condensed = await self.condenser.condense(
            header, span, shadowed_tokens, record, focus=attempt.focus, model_free=mode
        )
        if mode == "only":
            why = f"the model failed to summarize {BREAKER_FAILURES} times in a row this turn"
            return Condensed(condensed.summary, why)
        if automatic:
            for text in self.guards.model_summary(turn, condensed.fallback_reason):
                self.announce("warning", text)
        return condensed

    async def summarize(self, job: SummaryJob) -> Summary:
        """Write the checkpoint for one :class:`SummaryJob` — the one hook for subclasses.

        The default asks the model (:class:`~compact.basic.summarizers.ModelSummarizer`). Raise
        :class:`~compact.parts.checkpoint.SummaryRejected` (``cut=True`` for a reply that hit
        ``job.max_tokens``) or :class:`CompactionError` ``summary`` when there is none.
        """
        return await self.summarizer(job)

    async def _recover_overflow(
        self, envelope: Envelope, signal: asyncio.Event | None
    ) -> CompactionResult | None:
        await self.meter.settle()
        if self.pruner is not None:
            protect = tail_start(self.session.surface, self.meter.price, 0)
            await self.pruner.prune(protect_from=protect, trigger="overflow", signal=signal)
        if signal is not None and signal.is_set():
            raise CompactionError("cancelled")
        span = select_range(self.session, self.meter.price, 0)
        if span is None:
            return None
        return await self._bracket(
            envelope, Attempt(span, "overflow", self.session.open_turn), signal
        )
