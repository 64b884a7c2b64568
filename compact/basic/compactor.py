"""Compactions of the basic backend: one bracket (:mod:`compact.parts.transaction`) around
its summary, after it the retained tail's outputs the checkpoint read masked and what it left
measured; and at the mark, as many as it takes (at most ``1 + retries``) to get below it.

The summary is the one written ahead (:mod:`compact.basic.ahead`) when an automatic attempt
can use it, else written now (:class:`~compact.basic.condense.Condenser`): for automatic and
overflow compactions the model-free checkpoint when the model cannot deliver.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from agent.envelope import Envelope
from agent.log.session import Session
from agent.meter import TokenMeter
from compact.basic.ahead import Ahead
from compact.basic.condense import Condenser, Header, ModelFree
from compact.basic.guards import BREAKER_FAILURES, Guards
from compact.basic.prune import Pruner
from compact.basic.schedule import Schedule
from compact.basic.selection import (
    MIN_MANUAL_TOKENS,
    new_tokens,
    newest_step,
    not_worth_it,
    select_range,
)
from compact.contract.policy import CompactionSettings
from compact.contract.service import CompactionError, CompactionResult, NoticeLevel
from compact.parts.transaction import Attempt, Condensed, Lock, append, bracketed


class Compactor:
    """Compacts one range at a time for a :class:`~compact.basic.service.BasicCompactService`
    (it decides when and what; this writes the bracket)."""

    def __init__(
        self,
        session: Session,
        meter: TokenMeter,
        settings: CompactionSettings,
        schedule: Schedule,
        guards: Guards,
        condenser: Condenser,
        *,
        pruner: Pruner | None,
        ahead: Ahead | None,
        announce: Callable[[NoticeLevel, str], None],
    ) -> None:
        self.session = session
        self.meter = meter
        self.settings = settings
        self.schedule = schedule
        self.guards = guards
        self.condenser = condenser
        self.pruner = pruner
        self.ahead = ahead
        self.announce = announce
        self.lock = Lock(session)

    async def down(
        self, envelope: Envelope, retain: int, mark: int, signal: asyncio.Event | None
    ) -> tuple[CompactionResult | None, int]:
        """Compact automatically until what is left is below ``mark`` (at most ``1 +
        retries`` attempts, each leaving about ``retain`` tokens at the tail); the last result
        that landed, and how many attempts were made."""
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
                attempt = Attempt(span, "auto", self.session.open_turn, mark=mark)
                result = await self.bracket(envelope, attempt, signal)
            except CompactionError as exc:
                if result is None:
                    raise
                # A retry that fails does not undo the compaction that already landed.
                self.announce("warning", f"A further compaction failed: {exc.detail}")
                break
            if (self.schedule.left or 0) < mark:  # what the bracket measured it left
                break
        return result, attempts

    def header(self, envelope: Envelope) -> Header:
        """The header the coming request carries, as the summary calls replay it."""
        tokens = self.meter.measure(envelope).header
        return Header.of(envelope, tokens, self.settings.summarizer_model)

    async def bracket(
        self, envelope: Envelope, attempt: Attempt, signal: asyncio.Event | None
    ) -> CompactionResult:
        if self.ahead is not None:
            attempt = self.ahead.claim(attempt)
        try:
            return await self._commit(envelope, attempt, signal)
        finally:
            if self.ahead is not None:
                self.ahead.release()

    async def _commit(
        self, envelope: Envelope, attempt: Attempt, signal: asyncio.Event | None
    ) -> CompactionResult:
        """The bracket (:func:`compact.parts.transaction.bracketed`), then the retained
        tail's outputs its checkpoint read masked, and what it left measured."""
        header = self.header(envelope)
        read_all = False

        async def condense(compaction_id: str, span: list[int], shadowed: int) -> Condensed:
            nonlocal read_all
            condensed = await self._condense(compaction_id, header, span, attempt, shadowed)
            read_all = condensed.read_all
            return condensed

        result = await bracketed(self.session, self.meter, self.lock, attempt, condense, signal)
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
        newest = newest_step(self.session)
        return newest if self.ahead is None else self.ahead.mask_from(newest)

    async def _condense(
        self,
        compaction_id: str,
        header: Header,
        span: list[int],
        attempt: Attempt,
        shadowed_tokens: int,
    ) -> Condensed:
        """The summary of ``span``: the one written ahead when the attempt claimed it, else
        :meth:`_condense_now`."""

        def now() -> Awaitable[Condensed]:
            return self._condense_now(compaction_id, header, span, attempt, shadowed_tokens)

        if self.ahead is None:
            return await now()
        return await self.ahead.condense(compaction_id, span, attempt, now)

    async def _condense_now(
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
