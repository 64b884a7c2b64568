"""The tool protocol shared by every tool the agent can call (the approval and sandbox
vocabulary it speaks is :mod:`tools.modes`).

A tool turns a JSON ``arguments`` object from the model into a :class:`ToolOutput`. Tools
report every failure the model can act on (bad arguments, a denied command, a timeout) as a
``ToolOutput`` with ``is_error=True``; they raise only for programmer bugs and for
cancellation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tools.modes import POLICIES as POLICIES
from tools.modes import SANDBOX_MODES as SANDBOX_MODES
from tools.modes import ApprovalDecision as ApprovalDecision
from tools.modes import ApprovalPolicy as ApprovalPolicy
from tools.modes import SandboxMode as SandboxMode
from tools.question import ProposedEdit as ProposedEdit

if TYPE_CHECKING:
    from tools.snapshots.changes import Recorded

Approver = Callable[[str | ProposedEdit], Awaitable[ApprovalDecision]]
"""Front-end callback asked to approve a command (called with the full command text) or an
edit (called with the diff of exactly what will be written)."""


@dataclass(frozen=True)
class ToolOutput:
    """The result of one tool call."""

    content: str
    """Exactly the text the model sees."""
    is_error: bool = False
    """The call could not do its job (invalid arguments, denied, timed out). A command that
    ran and exited non-zero is not an error: its exit code is data."""
    exit_code: int | None = None
    """Exit status of a command that finished (128 + N when killed by signal N)."""
    duration_s: float | None = None
    """Wall-clock time the command ran, in seconds."""
    truncated: bool = False
    """The content shows only the head and tail of the output."""
    spill_path: str | None = None
    """File holding the complete output when ``truncated`` is set."""
    cwd: str | None = None
    """The working directory after the call (logged, so a resumed session goes on there)."""
    approval: ApprovalDecision | None = None
    """How the user answered the approval question for this call (None: not asked)."""
    interrupted: bool = False
    """The user interrupted the call; the content is what it printed until then."""
    sandbox: SandboxMode | None = None
    """The sandbox mode the command ran under (None: no command ran)."""
    files: Recorded | None = None
    """The snapshots taken around the command and what it changed (None: none taken)."""


OutputListener = Callable[[str], None]
"""Told a tool's output as it arrives (cleaned text, a few chunks a second at most): for
display only; the model gets the :class:`ToolOutput`."""


class ToolInterrupted(asyncio.CancelledError):
    """Raised by a cancelled tool that has something to keep: :attr:`output` is what it had
    printed, so the log's result for the call is that, not a bare "interrupted"."""

    def __init__(self, output: ToolOutput) -> None:
        super().__init__()
        self.output = output


class ToolNotStarted(asyncio.CancelledError):
    """Raised by a tool cancelled before it started anything (while the user was being asked
    to approve it): the call did nothing, and the log must not say its effects may be
    partial."""


class Tool(Protocol):
    """Something the model can call.

    ``schema()`` describes the tool to the model as an OpenAI Chat Completions tool entry:
    ``{"type": "function", "function": {"name", "description", "parameters"}}`` where
    ``parameters`` is a JSON schema and ``function.name`` equals :attr:`name`.

    ``run()`` never raises for anything the model did wrong; it returns an error
    ``ToolOutput`` instead. Cancellation is asyncio task cancellation: a cancelled tool
    stops its work (killing any processes it started), then re-raises ``CancelledError``.
    """

    name: str

    def schema(self) -> dict[str, Any]:
        """Return the OpenAI Chat Completions tool entry for this tool."""
        ...

    async def run(
        self, arguments: dict[str, Any], on_output: OutputListener | None = None
    ) -> ToolOutput:
        """Run the tool with the model's decoded arguments; ``on_output`` hears its output
        as it comes. A cancelled tool that printed something raises :class:`ToolInterrupted`."""
        ...
