"""Session events: the typed vocabulary of the append-only log.

Every line of a session file is one :class:`Event` envelope::

    {"seq": 7, "type": "tool/result", "time": 1764441234.52, "data": {...},
     "surface_op": {"op": "append"}, "source_event_seqs": [3, 4]}

Each event type is a pydantic model whose ``type`` field is a literal; an
:class:`EventRegistry` maps type names to models and parses lines through a union
discriminated on ``type``. Core registers its own types here; other packages (compaction)
register theirs into the same registry without core knowing them. An unknown type is an
error, never silently dropped.

Only the five *surface types* may carry an ``append`` or ``replace`` ``surface_op`` (and
must) and ``source_event_seqs``; the set is closed. A ``restore`` op, which only puts back
what a replacement shadowed, and a ``revise`` op, which gives a node new text, are carried by
log-only events (``compact/undo``, ``compact/edit``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.log.event_data import Data
from agent.log.files_data import FilesData, FilesRestoreData
from agent.log.surface_ops import (
    SurfaceAppend,
    SurfaceOp,
    SurfaceReplace,
    SurfaceRestore,
    SurfaceRevise,
)
from agent.log.usage_data import CacheExpected, ReportedUsage, Usage
from tools.modes import ApprovalDecision, ApprovalPolicy, SandboxMode

# Re-exported: payloads elsewhere build on them, and the surface ops events carry.
__all__ = ["CacheExpected", "Data", "FilesData", "ReportedUsage", "Usage"]
__all__ += ["SurfaceAppend", "SurfaceOp", "SurfaceReplace", "SurfaceRestore", "SurfaceRevise"]


class Event(BaseModel):
    """The envelope shared by all event types. Subclasses narrow ``type`` and ``data``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    on_surface: ClassVar[bool] = False
    """True for the five surface types; they alone may carry ``surface_op``."""
    durable: ClassVar[bool] = False
    """True when the store must fsync right after writing this event."""

    seq: int = Field(ge=0)
    type: str
    time: float
    data: Data
    surface_op: SurfaceOp | None = None
    source_event_seqs: list[int] | None = None

    def to_json(self) -> str:
        """Serialize as one log line (without the newline)."""
        return self.model_dump_json(exclude_none=True)


# --- shared values ----------------------------------------------------------------------------


class ToolCall(Data):
    """A tool call requested by the model; ``arguments`` is the raw JSON text it produced."""

    id: str
    name: str
    arguments: str


ProviderKind = Literal["openai-compatible", "scripted"]
"""A real model over HTTP, or the offline demo model."""
TurnEndReason = Literal["completed", "cancelled", "error", "max-steps", "interrupted"]


# --- payloads ---------------------------------------------------------------------------------


class ProviderData(Data):
    """Where a session's requests go, so that a resume sends them to the same place: the
    endpoint, the model and the NAME of the variable holding the API key (never the key)."""

    kind: ProviderKind
    name: str
    """openai, deepseek, local, openai-compatible or scripted."""
    model: str
    base_url: str | None = None
    api_key_env: str | None = None


class SessionStartData(Data):
    id: str
    version: int = 1
    cwd: str
    created_at: float
    forked_from: str | None = None
    """The parent session's id when this one is a fork (its ``session/fork`` says where),
    here too so that a listing, which reads only a log's first lines, can say so."""
    provider: ProviderData | None = None
    """Where the session's requests went at its start (logs older than it have none)."""


class EmptyData(Data):
    pass


class TurnData(Data):
    turn: int = Field(ge=1)


class TurnEndData(Data):
    turn: int = Field(ge=1)
    reason: TurnEndReason
    error: str | None = None


class StepData(Data):
    turn: int = Field(ge=1)
    step: int = Field(ge=1)


class RequestHeaderData(Data):
    provider: str
    model: str
    system: str
    tools: list[dict[str, Any]]
    params: dict[str, Any] = Field(default_factory=dict)
    context_window: int | None = None


class UserMessageData(Data):
    content: str
    source: Literal["user", "compact"] = "user"
    compaction_id: str | None = None


class ContextMessageData(Data):
    content: str
    source: str = "workspace"


class SteeringMessageData(Data):
    content: str


class AssistantMessageData(Data):
    turn: int = Field(ge=1)
    step: int = Field(ge=1)
    text: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str
    usage: ReportedUsage = None
    model: str
    cache_expected: CacheExpected | None = None
    """What the provider should have served from its cache (None: nothing expected)."""


class ToolStartData(Data):
    turn: int = Field(ge=1)
    step: int = Field(ge=1)
    call_id: str
    name: str
    arguments: str


class ToolResultData(Data):
    turn: int = Field(ge=1)
    step: int = Field(ge=1)
    call_id: str
    name: str
    content: str
    is_error: bool = False
    exit_code: int | None = None
    duration_s: float | None = None
    truncated: bool | None = None
    spill_path: str | None = None
    cwd: str | None = None
    """The working directory after the call: a resumed session goes on there."""
    approval: ApprovalDecision | None = None
    """How the user answered the approval question for the call (None: not asked)."""
    interrupted: bool | None = None
    """The user interrupted the call; ``content`` holds what it printed until then."""
    sandbox: SandboxMode | None = None
    """The sandbox the command ran under (None: no command ran, or a log older than the
    sandbox)."""
    files: FilesData | None = None
    """The snapshots around the command and what it changed (None: none taken, as in a
    ``read-only`` sandbox, or a log older than snapshots)."""


class LlmRetryData(Data):
    attempt: int
    error: str
    delay_s: float


class SessionNameData(Data):
    name: str
    """The session's name as the person gave it (``/rename``, ``--name``): checked by
    :func:`agent.log.names.checked_name`."""


PolicySource = Literal["flag", "setting", "chosen", "default"]
"""What gave a run its approval policy: ``--approve``, a variable or the config file, a
choice made in the session (``/approve``, "always"), or the front end's default."""


class SessionApprovalData(Data):
    policy: ApprovalPolicy
    given_by: PolicySource
    """A flag and a setting hold for the run they were given to: a resume does not restore
    them, only a choice made in the session (README: Sessions)."""


class CommandRunData(Data):
    command_id: str
    name: str
    args: str = ""


class CommandDoneData(Data):
    command_id: str
    ok: bool
    text: str = ""


# --- envelopes --------------------------------------------------------------------------------


class SessionStart(Event):
    type: Literal["session/start"] = "session/start"
    data: SessionStartData


class SessionForkData(Data):
    parent: str
    """The session this one was forked from (left as it was)."""
    at_seq: int = Field(ge=1)
    """The parent's events before this seq are this session's history."""


class SessionFork(Event):
    durable: ClassVar[bool] = True
    type: Literal["session/fork"] = "session/fork"
    data: SessionForkData


class SessionProvider(Event):
    """The session's provider changed (a flag on resume, ``/model``), or is recorded for a
    log that began without it; later resumes use the newest."""

    type: Literal["session/provider"] = "session/provider"
    data: ProviderData


class SessionName(Event):
    """The person named the session (or renamed it); the newest one is its name."""

    type: Literal["session/name"] = "session/name"
    data: SessionNameData


class SessionApproval(Event):
    """The approval policy a run began with and what gave it: a resume says so when it goes
    on with another."""

    type: Literal["session/approval"] = "session/approval"
    data: SessionApprovalData


class SessionResume(Event):
    durable: ClassVar[bool] = True
    type: Literal["session/resume"] = "session/resume"
    data: EmptyData = EmptyData()


class TurnStart(Event):
    type: Literal["turn/start"] = "turn/start"
    data: TurnData


class TurnEnd(Event):
    durable: ClassVar[bool] = True
    type: Literal["turn/end"] = "turn/end"
    data: TurnEndData


class StepStart(Event):
    type: Literal["step/start"] = "step/start"
    data: StepData


class StepEnd(Event):
    type: Literal["step/end"] = "step/end"
    data: StepData


class RequestHeader(Event):
    type: Literal["request/header"] = "request/header"
    data: RequestHeaderData


class UserMessage(Event):
    on_surface: ClassVar[bool] = True
    type: Literal["user/message"] = "user/message"
    data: UserMessageData


class ContextMessage(Event):
    on_surface: ClassVar[bool] = True
    type: Literal["context/message"] = "context/message"
    data: ContextMessageData


class SteeringMessage(Event):
    on_surface: ClassVar[bool] = True
    type: Literal["steering/message"] = "steering/message"
    data: SteeringMessageData


class AssistantMessage(Event):
    on_surface: ClassVar[bool] = True
    type: Literal["assistant/message"] = "assistant/message"
    data: AssistantMessageData


class ToolStart(Event):
    type: Literal["tool/start"] = "tool/start"
    data: ToolStartData


class ToolResult(Event):
    on_surface: ClassVar[bool] = True
    type: Literal["tool/result"] = "tool/result"
    data: ToolResultData


class LlmRetry(Event):
    type: Literal["llm/retry"] = "llm/retry"
    data: LlmRetryData


class CommandRun(Event):
    type: Literal["command/run"] = "command/run"
    data: CommandRunData


class CommandDone(Event):
    type: Literal["command/done"] = "command/done"
    data: CommandDoneData


class FilesRestore(Event):
    """A rewind put the working directory's files back (or undid that)."""

    durable: ClassVar[bool] = True
    type: Literal["files/restore"] = "files/restore"
    data: FilesRestoreData


SURFACE_TYPES = frozenset(
    {"user/message", "assistant/message", "tool/result", "context/message", "steering/message"}
)
"""The closed set of types that may sit on the surface."""

CORE_EVENTS: tuple[type[Event], ...] = (
    SessionStart,
    SessionFork,
    SessionProvider,
    SessionResume,
    SessionName,
    SessionApproval,
    TurnStart,
    TurnEnd,
    StepStart,
    StepEnd,
    RequestHeader,
    UserMessage,
    ContextMessage,
    SteeringMessage,
    AssistantMessage,
    ToolStart,
    ToolResult,
    LlmRetry,
    CommandRun,
    CommandDone,
    FilesRestore,
)
