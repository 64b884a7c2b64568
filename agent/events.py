"""Session events: the typed vocabulary of the append-only log.

Every line of a session file is one :class:`Event` envelope::

    {"seq": 7, "type": "tool/result", "time": 1764441234.52, "data": {...},
     "surface_op": {"op": "append"}, "source_event_seqs": [3, 4]}

Each event type is a pydantic model whose ``type`` field is a literal; an
:class:`EventRegistry` maps type names to models and parses lines through a union
discriminated on ``type``. Core registers its own types here; other packages (compaction)
register theirs into the same registry without core knowing them. An unknown type is an
error, never silently dropped.

Only the five *surface types* may carry ``surface_op`` (and must) and
``source_event_seqs``; the set is closed.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError


class Data(BaseModel):
    """Base of every event payload: immutable, and strict about unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class SurfaceAppend(Data):
    op: Literal["append"] = "append"


class SurfaceReplace(Data):
    """Replace the surface span from ``start`` to ``end`` (seqs, by *position*) with this event."""

    op: Literal["replace"] = "replace"
    start: int
    end: int


SurfaceOp = Annotated[SurfaceAppend | SurfaceReplace, Field(discriminator="op")]


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


class Usage(Data):
    """Provider-reported token usage of one request (buckets as the OpenAI API reports them)."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def plus(self, other: Usage | None) -> Usage:
        """The usage of both requests (``other`` None: this one)."""
        if other is None:
            return self
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


TurnEndReason = Literal["completed", "cancelled", "error", "max-steps", "interrupted"]


# --- payloads ---------------------------------------------------------------------------------


class SessionStartData(Data):
    id: str
    version: int = 1
    cwd: str
    created_at: float


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
    params: dict[str, Any] = {}
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
    tool_calls: list[ToolCall] = []
    finish_reason: str
    usage: Usage | None = None
    model: str


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
    approval: Literal["once", "always", "deny"] | None = None
    """How the user answered the approval question for the call (None: not asked)."""


class LlmRetryData(Data):
    attempt: int
    error: str
    delay_s: float


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


SURFACE_TYPES = frozenset(
    {"user/message", "assistant/message", "tool/result", "context/message", "steering/message"}
)
"""The closed set of types that may sit on the surface."""

CORE_EVENTS: tuple[type[Event], ...] = (
    SessionStart,
    SessionResume,
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
)


class EventError(ValueError):
    """An event that does not fit the schema (bad type, payload or surface metadata)."""


def event_type_name(model: type[Event]) -> str:
    """The literal ``type`` name a model declares."""
    default = model.model_fields["type"].default
    if not isinstance(default, str):
        raise TypeError(f"{model.__name__} must declare a literal `type` with a default")
    return default


class EventRegistry:
    """Maps event type names to models; parses and builds events.

    ``EventRegistry()`` holds the core types. Packages add theirs with :meth:`register`
    (the Python form of declaration merging). New types can never join the surface set.
    """

    def __init__(self, models: tuple[type[Event], ...] = CORE_EVENTS) -> None:
        self._models: dict[str, type[Event]] = {}
        self._adapter: TypeAdapter[Event] | None = None
        for model in models:
            self.register(model)

    def register(self, model: type[Event]) -> None:
        """Add an event type. Registering the same model twice is a no-op."""
        name = event_type_name(model)
        known = self._models.get(name)
        if known is model:
            return
        if known is not None:
            raise EventError(f"event type {name!r} is already registered")
        if model.on_surface != (name in SURFACE_TYPES):
            raise EventError(f"{name!r}: the set of surface types is closed")
        self._models[name] = model
        self._adapter = None

    def __contains__(self, name: object) -> bool:
        return name in self._models

    @property
    def names(self) -> list[str]:
        return list(self._models)

    def model(self, name: str) -> type[Event]:
        try:
            return self._models[name]
        except KeyError:
            raise EventError(f"unknown event type {name!r}") from None

    def _union(self) -> TypeAdapter[Event]:
        # Rebuilt after each registration: one discriminated union over every known type.
        if self._adapter is None:
            models = tuple(self._models.values())
            union: Any = Annotated[Union[models], Field(discriminator="type")]  # noqa: UP007
            self._adapter = TypeAdapter(union)
        return self._adapter

    def parse(self, line: str | bytes) -> Event:
        """Parse one log line. Raises :class:`EventError` with a readable reason."""
        try:
            event = self._union().validate_json(line)
        except ValidationError as exc:
            raise EventError(_describe(exc)) from None
        check_surface_fields(event)
        return event

    def build(
        self,
        type_name: str,
        *,
        seq: int,
        time: float,
        data: BaseModel | dict[str, Any],
        surface_op: SurfaceAppend | SurfaceReplace | dict[str, Any] | None = None,
        source_event_seqs: list[int] | None = None,
    ) -> Event:
        """Build and validate an event of a registered type."""
        model = self.model(type_name)
        payload = data.model_dump() if isinstance(data, BaseModel) else data
        op = surface_op.model_dump() if isinstance(surface_op, BaseModel) else surface_op
        try:
            event = model.model_validate(
                {
                    "seq": seq,
                    "type": type_name,
                    "time": time,
                    "data": payload,
                    "surface_op": op,
                    "source_event_seqs": source_event_seqs,
                }
            )
        except ValidationError as exc:
            raise EventError(f"{type_name}: {_describe(exc)}") from None
        check_surface_fields(event)
        return event


def check_surface_fields(event: Event) -> None:
    """Enforce the envelope rules that do not need the surface itself."""
    if event.on_surface:
        if event.surface_op is None:
            raise EventError(f"{event.type} requires surface_op")
    else:
        if event.surface_op is not None:
            raise EventError(f"{event.type} is not a surface type and cannot carry surface_op")
        if event.source_event_seqs is not None:
            raise EventError(
                f"{event.type} is not a surface type and cannot carry source_event_seqs"
            )
    seqs = event.source_event_seqs
    if seqs is not None:
        if len(set(seqs)) != len(seqs):
            raise EventError("source_event_seqs must not repeat a seq")
        if any(s < 0 or s >= event.seq for s in seqs):
            raise EventError(f"source_event_seqs must all be in [0, {event.seq})")


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        if err["type"] == "union_tag_invalid":
            parts.append(f"unknown event type {(err.get('ctx') or {}).get('tag')!r}")
            continue
        where = ".".join(str(p) for p in err["loc"]) or "event"
        parts.append(f"{where}: {err['msg']}")
    more = exc.error_count() - 3
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")
