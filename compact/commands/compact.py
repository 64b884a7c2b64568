"""Consumer tier: the ``/compact [focus]`` command, over the compaction contract only.

:class:`CompactCommand` calls :meth:`~compact.contract.service.CompactService.compact_now` on
whatever backend the composition root hands it (typed as the contract; this module never
imports a backend) and turns the outcome into one plain line for a person. It brackets each
invocation with ``command/run`` / ``command/done`` in the session log (log-only events).

It runs only between turns. While it runs, a front end that wants to start a turn first
awaits :meth:`CompactCommand.wait_idle`, so a prompt submitted during ``/compact`` starts
only after the compaction has committed (or failed).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

from agent.envelope import Envelope
from agent.formatting import fmt_tokens
from agent.log.events import CommandDoneData, CommandRunData, UserMessage
from agent.log.session import Session
from compact.contract.service import (
    ERROR_SENTENCES,
    CompactionError,
    CompactionResult,
    CompactService,
)

NOTHING_TO_COMPACT = "Nothing to compact yet."
NOTHING_NEW = "Nothing new to compact since the last checkpoint."
CANCELLED = ERROR_SENTENCES["cancelled"]
BUSY = ERROR_SENTENCES["busy"]


@dataclass(frozen=True)
class CommandOutcome:
    """What a command tells the person who ran it. ``result`` is set when it compacted."""

    ok: bool
    text: str
    result: CompactionResult | None = None


def success_text(result: CompactionResult) -> str:
    """``Compacted 42 history items (~38.1k → 2.3k tokens).``"""
    n = len(result.shadowed_seqs)
    items = "history item" if n == 1 else "history items"
    return (
        f"Compacted {n} {items} "
        f"(~{fmt_tokens(result.shadowed_tokens)} → {fmt_tokens(result.summary_tokens)} tokens)."
    )


class CompactCommand:
    """``/compact [focus]`` for one session, over any :class:`CompactService`.

    One invocation at a time: a second ``run`` while one is in flight, or any ``run`` while
    the agent is in a turn, answers with the ``busy`` sentence and does not call the service.
    """

    name = "compact"

    def __init__(self, service: CompactService, session: Session) -> None:
        self.service = service
        self.session = session
        self._running = False
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def running(self) -> bool:
        """True from the start of :meth:`run` until its ``command/done`` is logged."""
        return self._running

    async def wait_idle(self) -> None:
        """Return once no ``/compact`` is running.

        Returns at once when idle. The check is repeated after each wake-up, so a command
        started in between is waited for too; a caller that starts its turn without awaiting
        anything after this returns cannot interleave with a new ``/compact``.
        """
        while self._running:
            await self._idle.wait()

    async def run(
        self, envelope: Envelope, args: str = "", signal: asyncio.Event | None = None
    ) -> CommandOutcome:
        """Compact now, focused on ``args`` (stripped; empty means no focus).

        Outcomes: success (``Compacted … tokens).``), nothing to compact (yet, or since the
        last checkpoint: both ok, and no bracket is written), the plain sentence of a
        :class:`CompactionError` code with its detail (ok False), or ``Compaction cancelled.`` when
        ``signal`` is set. Cancelling the task logs ``command/done`` and re-raises; any other
        exception from the backend is logged as a failed ``command/done`` and re-raised.
        """
        focus = args.strip() or None
        command_id = f"cmd-{uuid.uuid4().hex[:12]}"
        self.session.append(
            "command/run", CommandRunData(command_id=command_id, name=self.name, args=focus or "")
        )
        # Claimed before the first await: a turn started after wait_idle() cannot slip in.
        if self.session.open_turn is not None or self._running:
            return self._done(command_id, CommandOutcome(False, BUSY))
        if signal is not None and signal.is_set():
            return self._done(command_id, CommandOutcome(False, CANCELLED))
        self._running = True
        self._idle.clear()
        try:
            try:
                result = await self.service.compact_now(
                    envelope, signal=signal, focus=focus, source_command_id=command_id
                )
            except CompactionError as exc:
                cancelled = exc.code == "cancelled" or (signal is not None and signal.is_set())
                outcome = CommandOutcome(False, CANCELLED if cancelled else exc.explained)
            except asyncio.CancelledError:
                self._done(command_id, CommandOutcome(False, CANCELLED))
                raise
            except Exception as exc:
                self._done(
                    command_id,
                    CommandOutcome(False, f"Compaction failed: {type(exc).__name__}: {exc}"),
                )
                raise
            else:
                if result is not None:
                    # A committed compaction is reported as such even if the signal came
                    # late: the history did change.
                    outcome = CommandOutcome(True, success_text(result), result)
                elif signal is not None and signal.is_set():
                    outcome = CommandOutcome(False, CANCELLED)
                else:
                    outcome = CommandOutcome(True, self._nothing())
            return self._done(command_id, outcome)
        finally:
            self._running = False
            self._idle.set()

    def _nothing(self) -> str:
        """Why there was nothing to compact: no history yet, or none since a checkpoint."""
        events = self.session.events
        for seq in self.session.surface:
            event = events[seq]
            if isinstance(event, UserMessage) and event.data.source == "compact":
                return NOTHING_NEW
        return NOTHING_TO_COMPACT

    def _done(self, command_id: str, outcome: CommandOutcome) -> CommandOutcome:
        self.session.append(
            "command/done", CommandDoneData(command_id=command_id, ok=outcome.ok, text=outcome.text)
        )
        return outcome
