"""The app's bash approver: a modal the turn waits on, showing byte for byte what will run
(:class:`~tui.screens.approval.ApprovalScreen`), over the main screen.

Keys typed at the dialog that are no deliberate answer (steering typed ahead, a sentence)
were meant for the prompt: they go on there (:meth:`ModalApprover.type_ahead`) instead of
answering a question the person has not read.
"""

from __future__ import annotations

import asyncio
import time

from tools.base import ApprovalDecision, ProposedEdit
from tools.question import ToolQuestion
from tui.quiet import QUIET_S
from tui.screens.approval import ApprovalScreen, Clock
from tui.screens.edit_approval import EditApprovalScreen
from tui.screens.main import MainScreen

ALWAYS_NOTICE = (
    "From now on commands run without asking, for the rest of this session (you chose "
    "“always”). /approve ask asks again."
)
"""Said when the person chooses "always"; how the next commands run is added to it."""


class ModalApprover:
    """``runtime.bash.approver`` for the app: asks over ``screen``."""

    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen
        self.quiet_s = QUIET_S
        """The dialog's quiet moment (see :mod:`tui.screens.approval`)."""
        self.clock: Clock = time.monotonic
        """The dialog's time (tests set it rather than wait)."""

    async def __call__(self, command: str | ProposedEdit) -> ApprovalDecision:
        """Ask in a modal (an edit's shows its diff); the turn waits for the answer (deny
        when the app goes away)."""
        main = self.screen
        runtime = main.runtime
        assert runtime is not None  # a turn runs only on a session that is shown
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()

        def answered(decision: ApprovalDecision | None) -> None:
            if not future.done():
                future.set_result(decision or "deny")

        screen: ApprovalScreen
        question = command if isinstance(command, ToolQuestion) else None
        if isinstance(command, ProposedEdit):
            screen = EditApprovalScreen(
                command,
                cwd=runtime.session.cwd,
                forward=self.type_ahead,
                quiet_s=self.quiet_s,
                clock=self.clock,
            )
        else:
            screen = ApprovalScreen(
                command,
                cwd=str(runtime.bash.cwd),
                forward=self.type_ahead,
                quiet_s=self.quiet_s,
                sandbox=question.where if question is not None else runtime.sandbox_words,
                clock=self.clock,
                asks=question.asks if question is not None else None,
            )
        main.approving = True
        for card in main.transcript.running_cards():
            card.awaiting_approval = True
        main.fold.asking(command.summary if isinstance(command, ProposedEdit) else command)
        main.show_status()
        await main.app.push_screen(screen, callback=answered)
        try:
            decision = await future
        finally:
            main.approving = False
            main.fold.asking(None)
            if main.live:
                if screen in main.app.screen_stack:
                    screen.dismiss("deny")
                for card in main.transcript.running_cards():
                    card.awaiting_approval = False
                main.show_status()
        if decision == "always" and isinstance(command, ToolQuestion):
            await main.transcript.add_notice(command.always, "warning")
        elif decision == "always":
            after = f" The next ones run {runtime.bash.sandbox.describe('auto')}."
            said = ALWAYS_NOTICE
            if isinstance(command, ProposedEdit):  # one policy: commands follow it too
                said = said.replace("commands run", "commands and edits run")
            await main.transcript.add_notice(said + after, "warning")
        return decision

    def type_ahead(self, text: str) -> None:
        """Keys typed at the dialog that answer nothing: they were meant for the prompt, so
        they go on there (Enter sends, as it would have: steering for the turn)."""
        prompt = self.screen.prompt
        if text == "\n":
            prompt.submit()
        elif text == "\b":
            prompt.action_delete_left()
        else:
            prompt.insert(text)
