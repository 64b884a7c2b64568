"""What becomes of a prompt the user sends (a mixin of :class:`tui.app.ReeflineApp`): a slash
command, a turn, steering for the turn that runs, or a message held until ``/compact`` ends.

A message typed while ``/compact`` runs is not sent to the model until the compaction lands,
so it is shown queued (as steering is) and the status line stays on the compaction, with
"1 queued", rather than claiming the model is thinking.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, TypeVar

from textual import work
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from agent.turns import TurnCancelled, TurnResult
from tui.commands import parse_slash
from tui.runtime import Runtime
from tui.widgets.prompt import PromptArea, PromptSubmitted
from tui.widgets.status import StatusLine
from tui.widgets.transcript import Transcript

W = TypeVar("W", bound=Widget)


class SendingHost(Protocol):
    """What sending needs of the app that mixes it in."""

    runtime: Runtime
    turn_worker: Worker[TurnResult | None] | None
    compact_worker: Any
    _held: str | None

    @property
    def transcript(self) -> Transcript: ...
    @property
    def status(self) -> StatusLine: ...
    def part(self, kind: type[W]) -> W: ...
    def _main_mounted(self) -> bool: ...
    def _update_gauge(self) -> None: ...
    def _show_queued(self) -> None: ...
    def _steer(self, text: str) -> None: ...
    def _release_unsent(self, completed: bool) -> None: ...
    def start_turn(self, prompt: str) -> None: ...
    def _turn(self, prompt: str) -> Worker[TurnResult | None]: ...
    def _give_back(self, text: str) -> None: ...
    async def run_slash(self, name: str, args: str = "") -> None: ...


class Sending:
    _held: str | None = None
    """The message waiting for ``/compact`` to end before its turn starts."""

    async def on_prompt_submitted(self: SendingHost, message: PromptSubmitted) -> None:
        self.transcript.follow()  # what is sent, and what answers it, is in view
        text = message.text
        slash = parse_slash(text)
        if slash is not None:
            await self.run_slash(*slash)
        elif self.turn_worker is not None and not self.turn_worker.is_finished:
            self._steer(text)
        else:
            self.start_turn(text)

    def _steer(self: SendingHost, text: str) -> None:
        """Text typed while a turn runs goes to the loop's one steering queue, delivered at
        the next step if one comes; it never makes a step of its own (the model may be
        writing its final answer): when the turn ends first, it becomes the next message."""
        self.transcript.queue_steering(text)
        self.runtime.agent.steer(text, extend_turn=False)
        self._show_queued()

    def _show_queued(self: SendingHost) -> None:
        held = 1 if self._held is not None else 0
        self.status.queued = len(self.runtime.agent.pending_steering) + held
        self.status.refresh()

    def _give_back(self: SendingHost, text: str) -> None:
        """Put text that was not sent back in the prompt, before what is typed there now."""
        prompt = self.part(PromptArea)
        prompt.load_text("\n\n".join(filter(None, [text, prompt.text])))
        prompt.move_cursor(prompt.document.end)

    def _release_unsent(self: SendingHost, completed: bool) -> None:
        """The turn ended with text no step delivered: send it as the next message (or,
        after an interruption or error, give it back to the prompt)."""
        unsent = self.runtime.agent.take_steering()
        self.transcript.unqueue_all()
        if not unsent:
            self._show_queued()
            return
        text = "\n\n".join(unsent)
        if completed:
            self.start_turn(text)
        else:
            self._give_back(text)
        self._show_queued()

    def on_worker_state_changed(self: SendingHost, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker is self.turn_worker and worker.is_finished and self._main_mounted():
            result = worker.result if worker.state == WorkerState.SUCCESS else None
            self._release_unsent(completed=result is not None and result.reason == "completed")

    def start_turn(self: SendingHost, prompt: str) -> None:
        compacting = self.compact_worker is not None and not self.compact_worker.is_finished
        if compacting:
            self._held = prompt
            self.transcript.queue_message(prompt, "queued · sent when the compaction ends")
            self._show_queued()
        else:
            self.status.set_activity("thinking")
        self.turn_worker = self._turn(prompt)

    @work(exclusive=True, group="turn")
    async def _turn(self: SendingHost, prompt: str) -> TurnResult | None:
        runtime = self.runtime
        try:
            await runtime.compact_command.wait_idle()
        except asyncio.CancelledError:
            if self._held is not None and self._main_mounted():
                self._held = None
                self._give_back(prompt)  # Esc stopped the compaction and what waited on it
            raise
        if self._held is not None:
            self._held = None
            self.status.set_activity("thinking")
        try:
            return await runtime.agent.run_turn(prompt)
        except TurnCancelled:
            return None
        except OSError as exc:
            await self.transcript.add_notice(f"Cannot write the session log: {exc}", "error")
            return None
        finally:
            if runtime is self.runtime and self._main_mounted():
                self.status.set_activity("idle")
                self._update_gauge()
