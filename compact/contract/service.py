"""The compaction seam: what compaction does, never how.

This module owns the :class:`CompactionResult` vocabulary, the error taxonomy and the
abstract :class:`CompactService`. A compaction is a bracket of ``compact/*`` events in the log,
drawn in :mod:`compact.contract.events` (their one home) and written by
:func:`compact.parts.transaction.bracketed`; the tool-pairing edge helpers every backend uses
are in :mod:`compact.parts.pairing`.

A crash inside the bracket leaves an unmatched ``compact/start``: inert, because nothing
reached the surface, and recognisable as a crash orphan by its position before the newest
``session/resume``.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from agent.envelope import Envelope
from agent.hooks import Hooks
from agent.llm.chat import ChatModel
from agent.llm.prompt_cache import CachePlan
from agent.log.session import Session
from agent.meter import TokenMeter
from compact.contract.events import PruneTrigger, Trigger
from compact.contract.policy import CompactionSettings

ErrorCode = Literal["busy", "cancelled", "changed", "summary", "commit", "persistence"]


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

    @property
    def explained(self) -> str:
        """The plain sentence, and the detail when it says more (why the summary failed:
        the server unreachable, a reply cut off, a timeout): what a person who asked for the
        compaction reads."""
        if self.detail == self.sentence:
            return self.sentence
        return f"{self.sentence} Why: {self.detail.rstrip('.')}."


@dataclass(frozen=True)
class CostFigures:
    """What one compaction not yet run would read, write and make uncached, in tokens (a
    backend's estimate; :mod:`compact.reports.compaction_cost` prices and words it)."""

    summarizer: str
    """The model that would write the summary (its price prices the summary call)."""
    model: str
    """The conversation's model (its price prices the re-read and the saving)."""
    prefix: int
    """Tokens the summary call replays of the conversation's last request (the header and
    the messages): a cache hit while the cache is warm."""
    new: int
    """Tokens it reads after that prefix (the instruction, originals, a focus): uncached."""
    output: int
    """Tokens it is expected to write: about the checkpoint."""
    reread: int
    """Tokens of the context after it that the next request reads anew: the checkpoint
    and the kept tail."""
    reread_extra: int
    """Of those, what a cached read would have served without the rewrite (the newest
    step is new to any request; :func:`compact.basic.schedule.rewrite_reread`)."""
    before: int
    """The context now."""
    after: int
    """The context right after it."""
    mark: int | None
    """Where automatic compaction runs (None: auto off or the window unknown)."""
    growth: int | None
    """The typical growth of one step (None: not measured yet)."""
    header_reread: bool = False
    """The re-read includes the header (system prompt and tools): alone it is shorter than
    a provider caches, so nothing before the checkpoint stays cached."""


@dataclass(frozen=True)
class DryRun:
    """What ``/compact`` would do now (``summarized`` empty: nothing)."""

    summarized: list[int]
    summarized_tokens: int
    kinds: dict[str, int]
    """Summarized items by event type."""
    kept: list[int]
    kept_tokens: int
    total: int
    window: int | None
    cost: CostFigures | None = None
    """What it would cost and leave (None: the backend cannot tell)."""


NoticeLevel = Literal["info", "warning"]
"""How much a compaction notice matters to the person."""


@dataclass(frozen=True)
class CompactNotice:
    """Something a backend wants the user to know (a failed auto compaction, the circuit
    breaker or thrash guard pausing auto compaction, an unknown window...)."""

    level: NoticeLevel
    text: str


NoticeListener = Callable[[CompactNotice], None]


@dataclass(frozen=True)
class Background:
    """Compaction work in the background: what (``summarizing ahead``), since when
    (``time.monotonic()``), and whether it is done and waits for its checkpoint."""

    label: str
    since: float
    ready: bool = False


# --- the contract -----------------------------------------------------------------------------


@dataclass(frozen=True)
class BackendParts:
    """What the composition root builds a backend from: the session to compact, its token
    meter, the model that writes summaries and the ``[compaction]`` settings; the
    provider's prompt cache (how long it keeps a prefix: a backend may rewrite history when
    the cache has gone cold) and the clock the time since the last request is read on."""

    session: Session
    meter: TokenMeter
    model: ChatModel
    settings: CompactionSettings
    cache_plan: CachePlan | None = None
    """The provider's cache plan (None: a cache that never expires)."""
    clock: Callable[[], float] = time.time
    """Seconds on the clock the log's event times are on (tests and benches move it)."""


BuildBackend = Callable[[BackendParts], "CompactService"]
"""A backend: a function from its parts to the service (registered by name in
:mod:`compact.backends`)."""


class CompactService(ABC):
    """The compaction capability. The composition root builds the backend the settings name
    (:mod:`compact.backends`), lets it :meth:`install` its listeners on the loop's hooks and
    hands it, typed as this contract, to its consumers (``/compact``, the timeline). Every
    method takes the request's
    :class:`~agent.envelope.Envelope` (model, system prompt, tools, window) as a value: what
    a summary replays and what the context is measured against.

    ``signal`` is an optional :class:`asyncio.Event`; setting it asks the compaction to stop
    (it then fails with ``cancelled``). Cancelling the calling task works too.

    Consumers subscribe to :class:`CompactNotice` values with :meth:`add_listener`.
    """

    def __init__(self) -> None:
        self._listeners: list[NoticeListener] = []

    @abstractmethod
    def install(self, hooks: Hooks) -> None:
        """Register the backend's listeners on the loop's ``hooks`` (the pre-step checkpoint,
        a context overflow...); called once, before the first turn. Installing nothing is a
        backend that compacts only when asked."""

    @abstractmethod
    def close(self) -> None:
        """Stop observing the session; called once when the runtime closes."""

    def add_listener(self, listener: NoticeListener) -> Callable[[], None]:
        """Call ``listener(notice)`` for every notice; returns the unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def announce(self, level: NoticeLevel, text: str) -> None:
        """Tell every listener (backends call this)."""
        notice = CompactNotice(level, text)
        for listener in list(self._listeners):
            listener(notice)

    @property
    def background(self) -> Background | None:
        """Compaction work running in the background now (nothing reached the log yet), for
        a status line; None when there is none (the default: a backend without any)."""
        return None

    @abstractmethod
    def threshold(self, window: int | None) -> int | None:
        """The context size at which automatic compaction runs for ``window`` (None: the
        window is unknown or automatic compaction is off)."""

    def step_growth(self) -> int | None:
        """The typical growth of one step's context, once measured (None: not yet, or a
        backend that does not measure it); for the gauge's "compacting soon"."""
        return None

    async def pause_began(self, envelope: Envelope, cache: CachePlan) -> None:
        """The person's pause began: a front end that waits for the next message (the app,
        ``--plain``; not ``-p``) calls this right after a turn ended, while the provider's
        ``cache`` still holds the last request's prefix. A backend may start work the next
        turn would otherwise wait for (the basic one: the summary of the coming
        compaction); it returns once that work is under way, which runs on until the next
        turn uses it or :meth:`close` stops it. The default does nothing."""
        return None

    def dry_run(self, envelope: Envelope) -> DryRun | None:
        """What :meth:`compact_now` would replace and keep now, without calling the model or
        writing anything (None: a backend that cannot tell)."""
        return None

    def forecast(self, envelope: Envelope) -> CostFigures | None:
        """The automatic compaction that would run at the mark, as if it ran now: what it
        would read, write and make uncached, without calling the model or writing anything
        (None: nothing to compact, auto off, or a backend that cannot tell)."""
        return None

    @abstractmethod
    async def compact_if_needed(
        self,
        envelope: Envelope,
        trigger: PruneTrigger,
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
