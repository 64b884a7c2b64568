"""The event registry: event types by name, validation of every line read or appended, and
the checks a surface event must pass. ``compact`` registers its own types here; the core does
not know them."""

from __future__ import annotations

import re
from typing import Annotated, Any, Union

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from agent import redaction
from agent.log.events import (
    CORE_EVENTS,
    SURFACE_TYPES,
    Event,
    SurfaceOp,
    SurfaceRestore,
    SurfaceRevise,
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
        surface_op: SurfaceOp | dict[str, Any] | None = None,
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


_SURROGATE = re.compile("[\ud800-\udfff]")


def log_line(event: Event) -> tuple[Event, bytes]:
    """``event`` and its log line (no newline), rebuilt when its line cannot be written as it
    is, so that what the log holds and what memory holds are the same event:

    - text holding a lone surrogate (undecodable bytes in a path, a ``"\\ud800"`` a server
      sent) has no UTF-8 form: U+FFFD takes the place of each;
    - text holding an API key (a prompt, a reply, a command's output that echoes it) or the
      start of one left at a text's end gets it masked (:mod:`agent.redaction`): this is the
      one path every event takes to the log, so no key is ever written."""
    try:
        line = event.to_json().encode()
    except ValueError:  # pydantic's serialization error, or the encoder's
        dumped = _without_surrogates(event.model_dump(mode="json", exclude_none=True))
        event = type(event).model_validate(dumped)
        line = event.to_json().encode()
    if redaction.in_line(line):
        dumped = redaction.redact_json(event.model_dump(mode="json", exclude_none=True))
        event = type(event).model_validate(dumped)
        line = event.to_json().encode()
    return event, line


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {k: _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    return value


def check_surface_fields(event: Event) -> None:
    """Enforce the envelope rules that do not need the surface itself."""
    restore = isinstance(event.surface_op, SurfaceRestore | SurfaceRevise)
    if event.on_surface:
        if event.surface_op is None:
            raise EventError(f"{event.type} requires surface_op")
        if restore:
            op = event.surface_op.op
            raise EventError(f"{event.type} is a surface type and cannot carry a {op} op")
    else:
        if event.surface_op is not None and not restore:
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
