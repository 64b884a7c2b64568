"""``--plain``'s approval question: the command byte for byte, then a line typed after it
answers, and only a line that is exactly an answer (:data:`ANSWERS`).

Lines typed before the question (while the agent worked, for the agent) are kept as steering,
whatever they say: a "yes" typed ahead approves nothing. The line being typed when the question
came stays on its input line and goes to the agent once finished, never as an answer, whatever
its last word ("then say yes"). Any other line is kept as steering too, an empty one is no
answer, and the question is asked again after each. A slash command among those lines is
never a message: it is refused, said, and not sent to the model. Ctrl+C interrupts the turn
(the command never ran); the end of input denies.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from agent.formatting import plural
from agent.redaction import redact
from agent.turns import TurnResult
from tools.base import ApprovalDecision, ProposedEdit
from tools.question import ToolQuestion
from tui.commands.run import parse_slash
from tui.line.input import Ahead, ReadInterrupted, ReadLine, TypedAhead
from tui.runtime.runtime import Runtime
from tui.text import command_shape

ANSWERS: dict[str, ApprovalDecision] = {
    "y": "once",
    "yes": "once",
    "always": "always",
    "n": "deny",
    "no": "deny",
}
"""The lines that answer the question, and nothing else (case aside): an empty line, or a
sentence that holds one of them, is no answer."""

QUESTION = "[y] once  [always] this session  [n] deny › "


class Terminal(Protocol):
    """What the question needs of the REPL (:class:`tui.line.repl.PlainRepl`)."""

    runtime: Runtime
    read: ReadLine
    ahead: TypedAhead | None
    current_turn: asyncio.Future[TurnResult] | None

    def say(self, text: str = "") -> None: ...

    def show_command(self, command: str, indent: str = "  ") -> None: ...

    def say_diff(self, diff: str) -> None: ...


async def ask(terminal: Terminal, command: str | ProposedEdit) -> ApprovalDecision:
    """Ask about ``command`` (or an edit, shown as its diff) on ``terminal``; see the module
    docstring."""
    runtime = terminal.runtime
    jail = runtime.sandbox_words
    if isinstance(command, ProposedEdit):
        terminal.say(f"Apply this edit? {command.summary}")
        terminal.say_diff(redact(command.diff))  # a key in the file shows as ***, as on /diff
    else:
        if isinstance(command, ToolQuestion):
            terminal.say(f"{command.asks} It runs {command.where}, as you.")
        else:
            shape = command_shape(command)
            terminal.say(f"Run this command, {jail}?" + (f"  ({shape})" if shape else ""))
        terminal.show_command(command)
    typing = _take_typed_ahead(terminal)
    while True:
        try:
            answer = await terminal.read(QUESTION)
        except ReadInterrupted:
            await _interrupt_turn(terminal)
            return "deny"  # not reached: the turn is cancelled
        if answer is None:
            return "deny"
        line = answer.strip()
        began, typing = typing, ""
        choice = None if began and line.startswith(began) else ANSWERS.get(line.lower())
        if choice == "always" and isinstance(command, ProposedEdit):
            terminal.say(
                "From now on commands and edits run without asking, for the rest of this "
                f"session; the next commands {runtime.bash.sandbox.describe('auto')}."
            )
        elif choice == "always" and isinstance(command, ToolQuestion):
            terminal.say(command.always)
        elif choice == "always":
            terminal.say(
                "From now on commands run without asking, for the rest of this session; "
                f"this one {jail}, the next ones {runtime.bash.sandbox.describe('auto')}."
            )
        if choice is not None:
            return choice
        if not line:
            terminal.say("(an empty line is no answer: type y, always or n)")
            continue
        if _keep(terminal, line):
            terminal.say("(kept as a message for the agent; answer y, always or n)")
        else:
            terminal.say("(answer y, always or n)")


def _keep(terminal: Terminal, line: str) -> bool:
    """Keep ``line`` as a message for the agent; a slash command is never one: it is refused,
    said, and not run (the question and the turn wait), so it never reaches the model. True
    when it was kept."""
    slash = parse_slash(line)
    if slash is None:
        terminal.runtime.agent.steer(line)
        return True
    terminal.say(
        f"(/{slash[0]} is a command, not a message: not run and not sent to the agent while "
        "the question waits; type it again when the turn has ended)"
    )
    return False


def _take_typed_ahead(terminal: Terminal) -> str:
    """Keep the lines typed before the question as steering; return the line being typed
    (put back on the question's input line), stripped, or ``""``."""
    early = terminal.ahead() if terminal.ahead is not None else Ahead()
    kept = [line for line in early.lines if _keep(terminal, line.strip())]
    if kept:
        terminal.say(
            f"(typed before this question, so no answer to it: "
            f"{plural(len(kept), 'line')} kept as a message for the agent)"
        )
    typing = early.unfinished.strip()
    if typing:
        terminal.say(
            "(what you were typing stays on the line below: finished, it goes to the agent "
            "as a message, not as an answer)"
        )
    return typing


async def _interrupt_turn(terminal: Terminal) -> None:
    """Ctrl+C at the question: the turn is cancelled here, as Ctrl+C anywhere in it."""
    task = terminal.current_turn
    if task is not None and not task.done():
        task.cancel()
        await asyncio.sleep(0)  # the cancellation lands at this await
