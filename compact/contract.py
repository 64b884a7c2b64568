"""The compaction seam: what compaction does, never how.

This module owns the ``compact/*`` session events (registered into a session's event
registry; core does not know them), the :class:`CompactionResult` vocabulary, the error
taxonomy, the abstract :class:`CompactService`, and the tool-pairing edge helpers that every
backend uses to avoid splitting a tool call from its result.

A compaction is a bracket in the log::

    compact/start    log-only; acquires the lock
    compact/progress log-only, one per summarizer call (a chunk, a terser retry, a failure)
    compact/summary  log-only; raw summary, shadowed range and seqs, their token price
    user/message     surface_op replace: the framed checkpoint takes the range's place
    compact/end      log-only; releases the lock (with ``error`` when the attempt failed)

A crash inside the bracket leaves an unmatched ``compact/start``: inert, because nothing
reached the surface, and recognisable as a crash orphan by its position before the newest
``session/resume``.
"""

from __future__ import annotations

import asyncio
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from pydantic import Field

from agent.envelope import Envelope
from agent.events import AssistantMessage, Data, Event, ToolResult, Usage
from agent.registry import EventRegistry
from agent.session import Session
from agent.surface import SurfaceError

Trigger = Literal["auto", "manual", "overflow", "region"]
ErrorCode = Literal["busy", "cancelled", "changed", "summary", "commit", "persistence"]


# --- events -----------------------------------------------------------------------------------


class Range(Data):
    """A positional surface range: the seqs at its first and last position."""

    start: int
    end: int


class CompactStartData(Data):
    compaction_id: str
    trigger: Trigger
    turn: int | None = None
    focus: str | None = None
    source_command_id: str | None = None


class CompactSummaryData(Data):
    compaction_id: str
    summary: str
    """The raw summary as the summarizer wrote it (the checkpoint frames it)."""
    shadowed_range: Range
    shadowed_seqs: list[int]
    """Every shadowed seq, in surface order."""
    shadowed_tokens: int
    """Estimated price of the shadowed nodes."""
    summary_tokens: int = 0
    """Estimated price of the framed checkpoint that replaces them."""
    model: str
    """The summarizer model, or ``fallback`` for the model-free checkpoint."""
    usage: Usage | None = None
    """Summed over every summarizer call of the compaction (see ``compact/progress``)."""
    max_tokens: int | None = None
    fallback_reason: str | None = None
    """Why the model-free checkpoint took the model's place (None: it did not)."""


class CompactProgressData(Data):
    """One summarizer call inside a compaction's bracket (log-only): a chunk read, a terser
    retry after a cut, or a failure the model-free checkpoint then covered."""

    compaction_id: str
    chunk: int = Field(ge=1)
    """Which chunk of the range this call read (1-based, oldest first)."""
    chunks: int = Field(ge=1)
    """How many chunks the range was planned in."""
    items: int = Field(ge=0)
    """Surface items of the range this chunk covers."""
    input_tokens: int = Field(ge=0)
    """Estimated tokens of what the call read (originals of pruned results included)."""
    status: Literal["ok", "cut", "failed"]
    """``cut``: the reply hit its output cap (a terser retry follows, or the failure)."""
    reason: str | None = None
    model: str | None = None
    usage: Usage | None = None
    max_tokens: int | None = None
    elapsed_s: float = Field(default=0.0, ge=0)


class CompactEndData(Data):
    compaction_id: str
    turn: int | None = None
    error: str | None = None


class CompactPruneData(Data):
    """The shadow price of one pruned tool result (followed by its replacement)."""

    shadowed_range: Range
    shadowed_seqs: list[int]
    shadowed_tokens: int
    kind: Literal["trim", "mask"] = "mask"
    trigger: Literal["pressure", "overflow"] = "pressure"


class CompactStart(Event):
    type: Literal["compact/start"] = "compact/start"
    data: CompactStartData


class CompactSummary(Event):
    type: Literal["compact/summary"] = "compact/summary"
    data: CompactSummaryData


class CompactEnd(Event):
    durable: ClassVar[bool] = True
    type: Literal["compact/end"] = "compact/end"
    data: CompactEndData


class CompactPrune(Event):
    type: Literal["compact/prune"] = "compact/prune"
    data: CompactPruneData


class CompactProgress(Event):
    type: Literal["compact/progress"] = "compact/progress"
    data: CompactProgressData


COMPACT_EVENTS: tuple[type[Event], ...] = (
    CompactStart,
    CompactProgress,
    CompactSummary,
    CompactEnd,
    CompactPrune,
)


def register_events(registry: EventRegistry) -> EventRegistry:
    """Add the ``compact/*`` types to ``registry`` (idempotent); returns it."""
    for model in COMPACT_EVENTS:
        registry.register(model)
    return registry


# --- results and errors -----------------------------------------------------------------------


@dataclass(frozen=True)
class CompactionResult:
    """A committed compaction."""

    compaction_id: str
    trigger: Trigger
    start_seq: int
    summary_seq: int
    replacement_seq: int
    end_seq: int
    shadowed_range: tuple[int, int]
    shadowed_seqs: list[int]
    shadowed_tokens: int
    summary_tokens: int
    summary: str
    model: str


ERROR_SENTENCES: dict[ErrorCode, str] = {
    "busy": "Compaction is unavailable: another compaction is running or the agent is busy.",
    "cancelled": "Compaction cancelled.",
    "changed": (
        "The history selected for compaction changed before it could be replaced. The "
        "conversation is unchanged; the attempt is recorded in the session log."
    ),
    "summary": (
        "Compaction could not produce a useful summary. The conversation is unchanged; the "
        "attempt is recorded in the session log."
    ),
    "commit": (
        "Compaction did not finish cleanly; some session history may have changed. Inspect "
        "the session before retrying."
    ),
    "persistence": "Compaction could not be saved: writing the session log failed.",
}
"""A plain sentence per error code, for any front end."""


class CompactionError(Exception):
    """A compaction that did not commit. ``code`` is one of :data:`ErrorCode`."""

    def __init__(self, code: ErrorCode, detail: str | None = None) -> None:
        super().__init__(detail or ERROR_SENTENCES[code])
        self.code: ErrorCode = code
        self.detail = detail or ERROR_SENTENCES[code]

    @property
    def sentence(self) -> str:
        return ERROR_SENTENCES[self.code]


@dataclass(frozen=True)
class CompactNotice:
    """Something a backend wants the user to know (a failed auto compaction, the circuit
    breaker or thrash guard pausing auto compaction, an unknown window...)."""

    level: Literal["info", "warning"]
    text: str


NoticeListener = Callable[[CompactNotice], None]


# --- the contract -----------------------------------------------------------------------------


class CompactService(ABC):
    """The compaction capability. The composition root builds one backend and hands it,
    typed as this contract, to its consumers (``/compact``, the timeline); the backend
    installs its own listeners on the loop's hooks. Every method takes the request's
    :class:`~agent.envelope.Envelope` (model, system prompt, tools, window) as a value: what
    a summary replays and what the context is measured against.

    ``signal`` is an optional :class:`asyncio.Event`; setting it asks the compaction to stop
    (it then fails with ``cancelled``). Cancelling the calling task works too.

    Consumers subscribe to :class:`CompactNotice` values with :meth:`add_listener`.
    """

    def __init__(self) -> None:
        self._listeners: list[NoticeListener] = []

    @abstractmethod
    def close(self) -> None:
        """Stop observing the session; called once when the runtime closes."""

    def add_listener(self, listener: NoticeListener) -> Callable[[], None]:
        """Call ``listener(notice)`` for every notice; returns the unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def announce(self, level: Literal["info", "warning"], text: str) -> None:
        """Tell every listener (backends call this)."""
        notice = CompactNotice(level, text)
        for listener in list(self._listeners):
            listener(notice)

    @abstractmethod
    def threshold(self, window: int | None) -> int | None:
        """The context size at which automatic compaction runs for ``window`` (None: the
        window is unknown or automatic compaction is off)."""

    @abstractmethod
    async def compact_if_needed(
        self,
        envelope: Envelope,
        trigger: Literal["pressure", "overflow"],
        signal: asyncio.Event | None = None,
    ) -> CompactionResult | None:
        """Compact if the context needs it: ``pressure`` (at the pre-step checkpoint) or
        ``overflow`` (the provider refused the request as too long). None when nothing was
        compacted. Raises :class:`CompactionError`."""

    @abstractmethod
    async def compact_region(
        self, start: int, end: int, envelope: Envelope, signal: asyncio.Event | None = None
    ) -> CompactionResult:
        """Compact the surface range from seq ``start`` to seq ``end`` (by position). Raises
        ``ValueError`` for a range that is not on the surface or splits a tool call from its
        result, :class:`CompactionError` when the attempt fails."""

    @abstractmethod
    async def compact_now(
        self,
        envelope: Envelope,
        signal: asyncio.Event | None = None,
        focus: str | None = None,
        source_command_id: str | None = None,
    ) -> CompactionResult | None:
        """Manual compaction between turns, whatever the pressure. None when there is
        nothing to compact yet. Raises :class:`CompactionError` (``busy`` while a turn is
        open in the log or another compaction runs)."""


# --- tool pairing -----------------------------------------------------------------------------


@dataclass
class _Pairing:
    generation: int
    nodes: list[int] = field(default_factory=list)
    position: dict[int, int] = field(default_factory=dict)
    open_after: list[int] = field(default_factory=lambda: [0])
    """``open_after[i]``: calls minus results after the first ``i`` nodes (cut ``i``)."""


_PAIRING: weakref.WeakKeyDictionary[Session, _Pairing] = weakref.WeakKeyDictionary()


def _fold(cache: _Pairing, session: Session, seqs: list[int]) -> None:
    opened = cache.open_after[-1]
    added: list[int] = []
    for seq in seqs:
        event = session.events[seq]
        if isinstance(event, AssistantMessage):
            opened += len(event.data.tool_calls)
        elif isinstance(event, ToolResult):
            opened -= 1
            if opened < 0:
                raise SurfaceError(f"corrupt surface: tool result {seq} answers no open tool call")
        added.append(opened)
    # Validated first, then committed: a corrupt tail leaves the cache as it was.
    for seq, value in zip(seqs, added, strict=True):
        cache.position[seq] = len(cache.nodes)
        cache.nodes.append(seq)
        cache.open_after.append(value)


def _pairing(session: Session) -> _Pairing:
    """The per-session cache: folds appended nodes while ``replace_generation`` holds,
    rebuilds after a replace."""
    surface = session.surface
    cache = _PAIRING.get(session)
    if (
        cache is None
        or cache.generation != session.replace_generation
        or len(cache.nodes) > len(surface)
    ):
        cache = _Pairing(session.replace_generation)
        _fold(cache, session, list(surface))
        _PAIRING[session] = cache
    elif len(cache.nodes) < len(surface):
        _fold(cache, session, list(surface[len(cache.nodes) :]))
    return cache


def _position(session: Session, seq: int) -> tuple[_Pairing, int]:
    cache = _pairing(session)
    try:
        return cache, cache.position[seq]
    except KeyError:
        raise SurfaceError(f"seq {seq} is not on the surface") from None


def tool_pairing_balanced_before(session: Session, seq: int) -> bool:
    """True when a cut just before ``seq`` splits no tool call from its result."""
    cache, i = _position(session, seq)
    return cache.open_after[i] == 0


def tool_pairing_balanced_after(session: Session, seq: int) -> bool:
    """True when a cut just after ``seq`` splits no tool call from its result."""
    cache, i = _position(session, seq)
    return cache.open_after[i + 1] == 0


def open_calls_at_cuts(session: Session) -> list[int]:
    """``open_after`` for every cut of the current surface (index ``i`` = before node ``i``)."""
    return list(_pairing(session).open_after)
