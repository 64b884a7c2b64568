"""What a person is shown of a session, as values: one item per thing that happened.

Items are frozen; when something later changes one (a tool call gets its result, the pruner
shortens what the model sees of it, a checkpoint's compaction ends) the fold hands out a new
item in the same place. Text is held as the log has it: each renderer makes it safe for its
medium (the terminal ones through :func:`tui.text.clean`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.closing import INTERRUPTED_RUNNING, NOT_RUN_ERROR
from agent.log.events import ToolResultData, TurnEndReason
from compact.reports.records import TimelineRecord
from tools.bash import NOT_RUN
from tools.bash_call import command_of
from tools.edit.call import NOT_MADE, path_of
from tui.text import first_line, raw_command


def call_subject(name: str, arguments: str) -> str:
    """What a call runs, for showing after the tool's name (a front end says the name, or
    ``$`` for bash): a bash call's command, an edit's path, else the raw arguments. Unsafe
    to print as is (a command is byte for byte)."""
    if name == "bash":
        return raw_command(arguments)
    if name == "edit" and (path := path_of(arguments)) is not None:
        return path
    return arguments


DECLINED = "The user declined"
"""How a declined call's result begins (what a log from before ``approval: deny`` says)."""


@dataclass(frozen=True)
class SessionOpened:
    """The session's first event: where and when it began."""

    seq: int
    session_id: str
    cwd: str
    created_at: float


@dataclass(frozen=True)
class SessionForked:
    """The session was forked from ``parent``: its history is the parent's before ``at_seq``."""

    seq: int
    parent: str
    at_seq: int


@dataclass(frozen=True)
class SessionResumed:
    """A later process picked the session up."""

    seq: int


@dataclass(frozen=True)
class TurnOpened:
    seq: int
    turn: int


@dataclass(frozen=True)
class Prompt:
    """What the person wrote: a turn's message, or ``steering`` typed while the agent worked."""

    seq: int
    text: str
    steering: bool = False


@dataclass(frozen=True)
class Answer:
    """One assistant reply: its text and reasoning; ``cut`` when it stopped at the output cap."""

    seq: int
    text: str
    reasoning: str | None
    cut: bool

    @property
    def empty(self) -> bool:
        """Neither text nor reasoning (a reply that only called tools)."""
        return not self.text.strip() and not (self.reasoning or "").strip()


@dataclass(frozen=True)
class ToolRun:
    """One tool call from its start to its result.

    ``arguments`` is the call's raw JSON; :attr:`command` is what a bash call runs, exactly
    (unsafe to print: render it through the terminal filter). ``result`` is None while the
    call runs (or when none was ever recorded); ``pruned`` once the model sees a shortened
    form of the output.
    """

    seq: int
    call_id: str
    name: str
    arguments: str
    started: float
    result: ToolResultData | None = None
    pruned: bool = False

    @property
    def bash_command(self) -> str | None:
        """The command a bash call runs; None for another tool or arguments that are not
        the expected JSON."""
        return command_of(self.arguments) if self.name == "bash" else None

    @property
    def command(self) -> str:
        """What the call runs, for showing (:func:`call_subject`)."""
        return call_subject(self.name, self.arguments)

    @property
    def running(self) -> bool:
        return self.result is None

    @property
    def not_run(self) -> bool:
        """The call was refused before it ran (the approval policy, or no one to ask)."""
        return (
            self.result is not None
            and self.result.is_error
            and (self.result.content.startswith((NOT_RUN, NOT_MADE)))
        )

    @property
    def outcome(self) -> str | None:
        """``interrupted`` when the user stopped the call while it ran, ``not run`` when the
        turn ended before it started (interrupted while asking for approval, or failed),
        ``declined`` when the person answered no;
        None otherwise (its exit code or error says how it went)."""
        result = self.result
        if result is None:
            return None
        if result.interrupted or (
            result.is_error and result.content.startswith(INTERRUPTED_RUNNING)
        ):
            return "interrupted"
        if result.is_error and result.content.startswith(NOT_RUN_ERROR):
            return "not run"
        if result.approval == "deny" or (
            result.is_error and result.content.startswith(DECLINED)  # a log before the record
        ):
            return "declined"
        return None


@dataclass(frozen=True)
class Checkpoint:
    """Where a compaction's summary landed; ``record`` is its timeline record (None until
    the fold has one), ``content`` the replacement message as the model reads it."""

    seq: int
    compaction_id: str
    content: str
    record: TimelineRecord | None = None


@dataclass(frozen=True)
class PruneBatch:
    """A run of old tool results the pruner replaced by placeholders."""

    seq: int
    record: TimelineRecord


@dataclass(frozen=True)
class ContextSent:
    """Context reefline gave the model on its own (workspace facts)."""

    seq: int
    text: str


@dataclass(frozen=True)
class RetryPlanned:
    """A model request failed and will be tried again."""

    seq: int
    error: str
    attempt: int
    delay_s: float


@dataclass(frozen=True)
class CommandOutcome:
    """What a slash command reported (``/approve auto``, ``/compact`` with nothing to do)."""

    seq: int
    text: str
    ok: bool


@dataclass(frozen=True)
class TurnClosed:
    """A turn ended; :attr:`stopped` when it did not simply complete."""

    seq: int
    turn: int
    reason: TurnEndReason
    error: str | None

    @property
    def stopped(self) -> bool:
        return self.reason != "completed"


ViewItem = (
    SessionOpened
    | SessionForked
    | SessionResumed
    | TurnOpened
    | Prompt
    | Answer
    | ToolRun
    | Checkpoint
    | PruneBatch
    | ContextSent
    | RetryPlanned
    | CommandOutcome
    | TurnClosed
)


def recap_entries(items: Sequence[object]) -> list[Prompt | ToolRun | Answer]:
    """The entries a resumed session's recap picks from: prompts, commands and answers
    with text, in order."""
    return [
        item
        for item in items
        if isinstance(item, Prompt | ToolRun) or (isinstance(item, Answer) and item.text.strip())
    ]


def tool_label(name: str, arguments: str) -> str:
    """A running tool call that runs no command, in a few words: ``edit app.py``, or the
    tool's name (an MCP tool's arguments are on its card)."""
    if name == "edit" and (path := path_of(arguments)) is not None:
        return f"edit {first_line(path, 120)}"
    return name
