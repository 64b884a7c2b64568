"""The app's bash approver (a mixin of :class:`tui.app.ReeflineApp`): a modal the turn waits
on, showing byte for byte what will run (:class:`~tui.screens.approval.ApprovalScreen`).

Keys typed in the moment the dialog opens were meant for the prompt (steering typed ahead):
they go on there instead of answering a question the person has not read.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, TypeVar

from textual.widget import Widget

from tools.base import ApprovalDecision
from tui.runtime import Runtime
from tui.screens.approval import ApprovalScreen
from tui.widgets.prompt import PromptArea
from tui.widgets.status import StatusLine
from tui.widgets.transcript import Transcript

W = TypeVar("W", bound=Widget)

ALWAYS_NOTICE = (
    "From now on commands run without asking, for the rest of this session (you chose "
    "“always”). /approve ask asks again."
)
"""Said when the person chooses "always"; how the next commands run is added to it."""


class ApprovalHost(Protocol):
    """What the approver needs of the app that mixes it in (this module never imports it)."""

    runtime: Runtime
    approval_arm_s: float
    _approving: bool

    @property
    def transcript(self) -> Transcript: ...
    @property
    def status(self) -> StatusLine: ...
    @property
    def screen_stack(self) -> list[Any]: ...
    def part(self, kind: type[W]) -> W: ...
    def push_screen(self, screen: Any, callback: Any = None) -> Any: ...
    def _main_mounted(self) -> bool: ...
    def _type_ahead(self, text: str) -> None: ...


class Approvals:
    """The approver; ``runtime.bash.approver`` is set to :meth:`_approve`."""

    async def _approve(self: ApprovalHost, command: str) -> ApprovalDecision:
        """Ask in a modal; the turn waits for the answer (deny when the app goes away)."""
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()

        def answered(decision: ApprovalDecision | None) -> None:
            if not future.done():
                future.set_result(decision or "deny")

        screen = ApprovalScreen(
            command,
            cwd=str(self.runtime.bash.cwd),
            forward=self._type_ahead,
            arm_s=self.approval_arm_s,
            sandbox=self.runtime.sandbox_words,
        )
        self._approving = True
        for card in self.transcript.running_cards():
            card.awaiting_approval = True
        self.status.set_activity("approval", detail=command)
        await self.push_screen(screen, callback=answered)
        try:
            decision = await future
        finally:
            self._approving = False
            if self._main_mounted():
                if screen in self.screen_stack:
                    screen.dismiss("deny")
                for card in self.transcript.running_cards():
                    card.awaiting_approval = False
        self.status.set_activity("bash", detail=command)
        if decision == "always":
            after = f" The next ones run {self.runtime.bash.sandbox.describe('auto')}."
            await self.transcript.add_notice(ALWAYS_NOTICE + after, "warning")
        return decision

    def _type_ahead(self: ApprovalHost, text: str) -> None:
        """Keys typed while the approval dialog was not yet taking them: they were meant for
        the prompt, so they go on there (Enter sends, as it would have)."""
        prompt = self.part(PromptArea)
        if text == "\n":
            prompt.submit()
        elif text == "\b":
            prompt.action_delete_left()
        else:
            prompt.insert(text)
