"""What becomes of a message the person sends in the app: a turn, steering for the turn that
runs, or a message held until ``/compact`` ends.

A message typed while ``/compact`` runs is not sent to the model until the compaction lands,
so it is shown queued (as steering is) and the status line stays on the compaction, with
"1 queued", rather than claiming the model is thinking.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.worker import Worker, WorkerState

from agent.turns import TurnCancelled, TurnResult
from tui.runtime.runtime import Runtime
from tui.screens.main import MainScreen


class Sender:
    """Runs the person's messages as turns, one at a time, in a worker of ``app`` (Esc
    cancels it). ``runtime()``: the runtime open now; ``compacting()``: ``/compact`` runs."""

    def __init__(
        self,
        app: App[Any],
        screen: MainScreen,
        runtime: Callable[[], Runtime],
        compacting: Callable[[], bool],
    ) -> None:
        self.app = app
        self.screen = screen
        self.runtime = runtime
        self.compacting = compacting
        self.worker: Worker[TurnResult | None] | None = None
        self.held: str | None = None
        """The message waiting for ``/compact`` to end before its turn starts."""

    @property
    def running(self) -> bool:
        return self.worker is not None and not self.worker.is_finished

    def send(self, text: str) -> None:
        """A turn for ``text``, or steering for the turn that runs: the loop's one steering
        queue, delivered at the next step if one comes; never a step of its own (the model
        may be writing its final answer): when the turn ends first, it is the next message."""
        if self.running:
            self.screen.transcript.queue_steering(text)
            self.runtime().agent.steer(text, extend_turn=False)
            self.show_queued()
        else:
            self.start(text)

    def show_queued(self) -> None:
        held = 1 if self.held is not None else 0
        self.screen.show_status(queued=len(self.runtime().agent.pending_steering) + held)

    def start(self, prompt: str) -> None:
        if self.compacting():
            self.held = prompt
            self.screen.transcript.queue_message(prompt, "queued · sent when the compaction ends")
            self.show_queued()
        self.worker = self.app.run_worker(self._turn(prompt), group="turn", exclusive=True)

    async def _turn(self, prompt: str) -> TurnResult | None:
        runtime = self.runtime()
        screen = self.screen
        try:
            await runtime.compact_command.wait_idle()
        except asyncio.CancelledError:
            if self.held is not None and screen.live:
                self.held = None
                screen.prompt.give_back(prompt)  # Esc stopped the compaction and what waited on it
            raise
        if self.held is not None:
            self.held = None
            if runtime is self.runtime() and screen.live:
                self.show_queued()  # it is sent now: no longer waiting
        try:
            result = await runtime.agent.run_turn(prompt)
            # The person reads the answer and types: compaction may use that pause.
            await runtime.pause_began()
            return result
        except TurnCancelled:
            return None
        except OSError as exc:
            await screen.transcript.add_notice(f"Cannot write the session log: {exc}", "error")
            return None
        finally:
            if runtime is self.runtime() and screen.live:
                screen.fold.ended()  # whatever the log could not say: nothing runs now
                screen.show_status()
                screen.refresh_gauge()

    def finished(self, worker: Worker[Any]) -> None:
        """After the turn's worker ends: text no step delivered is sent as the next message
        (or, after an interruption or error, given back to the prompt)."""
        if worker is not self.worker or not worker.is_finished or not self.screen.live:
            return
        result = worker.result if worker.state == WorkerState.SUCCESS else None
        unsent = self.runtime().agent.take_steering()
        self.screen.transcript.unqueue_all()
        if unsent:
            text = "\n\n".join(unsent)
            if result is not None and result.reason == "completed":
                self.start(text)
            else:
                self.screen.prompt.give_back(text)
        self.show_queued()
