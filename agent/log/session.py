"""The session: an append-only event log, its surface, and the messages derived from it.

The log is the truth. ``append()`` validates an event, writes its line, then updates memory,
then notifies observers synchronously: if the write fails, memory is unchanged and the
caller gets the error, so the file and memory never disagree. Observers may not append.

Opening a log repairs it: a torn last line (a crash mid-write) is saved to a side file and
cut; an open tail turn is closed (:mod:`agent.log.repair`); ``session/resume`` is appended."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent.log.bulk_load import without_collector
from agent.log.events import (
    Event,
    SessionStart,
    SessionStartData,
    SurfaceAppend,
    SurfaceOp,
)
from agent.log.load_report import LoadReport, ReentrantAppend, SessionError, SessionLoadError
from agent.log.messages import ChatMessage, SurfaceMessages, node_message
from agent.log.registry import EventError, EventRegistry, log_line
from agent.log.repair import Closer, dangling_call_closers, interrupted_turn_closers
from agent.log.store import (
    LogFile,
    default_home,
    new_session_id,
    remove_log,
    session_path,
    sessions_dir,
    torn_side_file,
    validate_session_id,
)
from agent.log.surface import Surface, SurfaceError
from tools.spill import SpillFolder

Observer = Callable[[Event], None]

__all__ = [
    "LoadReport",
    "Observer",
    "ReentrantAppend",
    "Session",
    "SessionError",
    "SessionLoadError",
    "SurfaceError",
]


class Session:
    """An open session log. Build with :meth:`create` or :meth:`open`."""

    def __init__(
        self,
        *,
        home: Path,
        session_id: str,
        path: Path,
        registry: EventRegistry,
        log: LogFile | None,
    ) -> None:
        self.home = home
        self.id = session_id
        self.path = path
        self.registry = registry
        self.report = LoadReport()
        self._log = log
        self._events: list[Event] = []
        self._surface = Surface()
        self._observers: list[Observer] = []
        self._notifying = False
        self._messages = SurfaceMessages()
        self._last_resume: int | None = None
        self._open_turn: int | None = None

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        home: Path | None = None,
        *,
        cwd: str | Path,
        registry: EventRegistry | None = None,
        session_id: str | None = None,
        provider: dict[str, Any] | None = None,
    ) -> Session:
        """Start a new session log whose first event is ``session/start`` (with ``provider``)."""
        home = Path(home) if home is not None else default_home()
        sessions_dir(home)
        sid = new_session_id() if session_id is None else validate_session_id(session_id)
        path = session_path(home, sid)
        session = cls(
            home=home,
            session_id=sid,
            path=path,
            registry=registry or EventRegistry(),
            log=LogFile(path, create=True),
        )
        start = SessionStartData(id=sid, cwd=str(cwd), created_at=time.time(), provider=provider)
        try:
            session.append("session/start", start)
            session._log_sync()
        except OSError:  # e.g. a full disk: a log without its start would block --continue
            remove_log(path, session.spill_dir)
            session.close()
            raise
        return session

    @classmethod
    def open(
        cls,
        home: Path | None,
        session_id: str,
        *,
        registry: EventRegistry | None = None,
        readonly: bool = False,
    ) -> Session:
        """Load an existing log, repair it and append ``session/resume``.

        With ``readonly`` the file is not touched at all (no cut, repair or resume) and
        appends are refused: for viewers such as ``reefline timeline``, which must not
        disturb a session another process is running.

        Raises:
            InvalidSessionId: the id could escape the sessions folder.
            FileNotFoundError: no such session.
            SessionLoadError: a line other than the last is bad (file untouched).
            SessionBusy: another process holds the log open for writing.
        One function, in this order under the lock: read, cut a torn tail, replay, close, resume.
        """
        home = Path(home) if home is not None else default_home()
        path = session_path(home, session_id)
        if path.is_symlink():
            raise SessionLoadError(
                path,
                None,
                f"a symbolic link; a session log is never followed out of {home / 'sessions'} "
                "(replace the link with the file itself)",
            )
        if not path.is_file():
            raise FileNotFoundError(f"no session {session_id!r} under {home / 'sessions'}")
        session = cls(
            home=home,
            session_id=session_id,
            path=path,
            registry=registry or EventRegistry(),
            log=None,
        )
        if not readonly:
            # The writer's lock first, then the read: a writer finishing in between would
            # otherwise append lines this process never read, and seqs would repeat.
            session._log = LogFile(path, create=False)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
            with os.fdopen(fd, "rb") as f:
                # Streamed line by line: the whole file is never held next to its events.
                cut, torn = session._replay(f)
        except BaseException:
            if session._log is not None:
                session._log.close()
            raise
        session.report.torn_bytes = len(torn)
        session.report.read = len(session._events)
        if readonly:
            return session
        if torn and session._log is not None:  # (always, once not read-only)
            session.report.torn_path = torn_side_file(path, torn)
            session._log.truncate(cut)
            session._log_sync()
        session.report.repaired += session.close_dangling_turn()
        session.report.repaired += session.answer_dangling_calls()
        session.append("session/resume", {})
        return session

    def close_dangling_turn(self) -> list[int]:
        """Close the last turn if it is still open (see
        :func:`agent.log.repair.interrupted_turn_closers`); returns the seqs appended. Run on
        load (a crash mid-turn) and, by the loop, before it opens a turn: a ``turn/end``
        that could not be written must not leave the session busy for good. Only when no
        turn runs, which the caller knows."""
        if self._open_turn is None:
            return []
        return self._append_closers(interrupted_turn_closers(self._events))

    def answer_dangling_calls(self) -> list[int]:
        """Give every tool call on the surface without a result one (see
        :func:`agent.log.repair.dangling_call_closers`); returns the seqs appended. Run on load
        and before a turn appends to the surface, so a failed write cannot leave a session
        every later request of which a provider refuses. Raises ``OSError`` if the log still
        cannot be written."""
        return self._append_closers(dangling_call_closers(self._events, self._surface.nodes))

    def _append_closers(self, closers: Iterable[Closer]) -> list[int]:
        appended = []
        for closer in closers:
            ev = self.append(
                closer.type,
                closer.data,
                surface_op=closer.surface_op,
                source_event_seqs=closer.source_event_seqs,
            )
            appended.append(ev.seq)
        return appended

    @without_collector
    def _replay(self, lines: Iterable[bytes]) -> tuple[int, bytes]:
        """Fold every complete line into memory; return the byte offset where a torn
        (unterminated) last line begins and that line's bytes (empty when none)."""
        pos = 0
        for lineno, raw in enumerate(lines, start=1):
            if not raw.endswith(b"\n"):
                return self._checked(pos), raw  # the write never completed
            pos += len(raw)
            try:
                event = self.registry.parse(raw[:-1])
                if event.seq != len(self._events):
                    raise EventError(f"seq {event.seq} where {len(self._events)} was expected")
                if lineno == 1 and not isinstance(event, SessionStart):
                    raise EventError("the first event must be session/start")
                span = self._surface.check(event, self._events)
            except EventError as exc:
                raise SessionLoadError(self.path, lineno, str(exc)) from None
            self._commit(event, span)
        return self._checked(pos), b""

    def _checked(self, pos: int) -> int:
        """``pos``, once the log is known to hold at least its ``session/start``."""
        if not self._events:
            # Also when the only line is torn: a log without its session/start is unloadable.
            raise SessionLoadError(self.path, None, "empty session log (no complete session/start)")
        return pos

    # --- reading ------------------------------------------------------------------------------

    @property
    def events(self) -> Sequence[Event]:
        """Every event, in seq order (``events[seq]``). Read-only by contract."""
        return self._events

    @property
    def surface(self) -> Sequence[int]:
        """The seqs the model sees, in order. Read-only by contract."""
        return self._surface.nodes

    @property
    def replace_generation(self) -> int:
        """How many replaces the surface has seen."""
        return self._surface.generation

    @property
    def last_resume_seq(self) -> int | None:
        """Seq of the newest ``session/resume``: events before it came from an earlier process."""
        return self._last_resume

    @property
    def open_turn(self) -> int | None:
        """The number of the turn in progress (``turn/start`` without its ``turn/end``),
        None between turns: the one answer to "is a turn running?"."""
        return self._open_turn

    def shadowed(self, seq: int) -> list[int]:
        """The seqs (in surface order) that the replace event ``seq`` took off the surface
        (for a restore, the replacement it took off); empty for any other event."""
        return list(self._surface.shadowed.get(seq, ()))

    def node_message(self, seq: int) -> ChatMessage | None:
        """The chat message surface node ``seq`` contributes as it stands (its newest
        revision's text, if a log-only event revised it)."""
        return node_message(self._surface, self._events, seq)

    def revision(self, seq: int) -> tuple[int, int | None] | None:
        """For a revising event ``seq``: (the node it revised, the revision it followed);
        None for any other event."""
        return self._surface.revisions.get(seq)

    def revised_by(self, node: int) -> int | None:
        """The seq of the revising event whose text node ``node`` shows now, or None."""
        return self._surface.revised.get(node)

    @property
    def cwd(self) -> str:
        start = self._events[0]
        assert isinstance(start, SessionStart)
        return start.data.cwd

    @property
    def spill_dir(self) -> Path:
        """Folder for this session's side files (full tool output)."""
        return self.path.with_name(f"{self.id}.spill")

    @functools.cached_property
    def spill(self) -> SpillFolder:
        """:attr:`spill_dir` worked on through one descriptor (:mod:`tools.spill`)."""
        return SpillFolder(self.spill_dir)

    @property
    def readonly(self) -> bool:
        return self._log is None

    def derive_messages(self) -> list[ChatMessage]:
        """The chat messages of the surface, in order (system prompt not included).

        Cached: extends with appended nodes; any replace rebuilds. The returned list is new;
        the message dicts are shared and must not be mutated.
        """
        return self._messages.read(self._surface, self._events)

    # --- writing ------------------------------------------------------------------------------

    def append(
        self,
        type: str,
        data: BaseModel | dict[str, Any],
        *,
        surface_op: SurfaceOp | dict[str, Any] | None = None,
        source_event_seqs: list[int] | None = None,
    ) -> Event:
        """Validate, write, commit and announce one event; return it.

        Surface types default to ``{"op": "append"}``. Raises :class:`EventError` (including
        :class:`SurfaceError`) for an invalid event, ``OSError`` when the write fails (memory
        unchanged in both cases), :class:`ReentrantAppend` from inside an observer.
        """
        if self._notifying:
            raise ReentrantAppend("an observer may not append to the session it observes")
        if self._log is None:
            raise SessionError(f"session {self.id} is open read-only")
        model = self.registry.model(type)
        if surface_op is None and model.on_surface:
            surface_op = SurfaceAppend()
        event = self.registry.build(
            type,
            seq=len(self._events),
            time=time.time(),
            data=data,
            surface_op=surface_op,
            source_event_seqs=source_event_seqs,
        )
        span = self._surface.check(event, self._events)
        event, line = log_line(event)
        self._log.append(line)
        if event.durable:
            self._log_sync()
        self._commit(event, span)
        self._notifying = True
        try:
            for observer in list(self._observers):
                observer(event)
        finally:
            self._notifying = False
        return event

    def _commit(self, event: Event, span: tuple[int, int] | None) -> None:
        self._events.append(event)
        self._surface.apply(event, span)
        if event.type == "session/resume":
            self._last_resume = event.seq
        elif event.type == "turn/start":
            self._open_turn = event.data.turn  # type: ignore[attr-defined]
        elif event.type == "turn/end":
            self._open_turn = None

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer(event)`` after each append; returns the unsubscribe function."""
        self._observers.append(observer)

        def unsubscribe() -> None:
            if observer in self._observers:
                self._observers.remove(observer)

        return unsubscribe

    def close(self) -> None:
        """Fsync and close the log. Idempotent."""
        if self._log is not None:
            self._log.close()

    @property
    def closed(self) -> bool:
        """Its log is closed (or was opened read-only): nothing more is written."""
        return self._log is None or self._log.closed

    def _log_sync(self) -> None:
        if self._log is not None:
            self._log.sync()

    def __repr__(self) -> str:
        return f"Session({self.id!r}, events={len(self._events)}, surface={len(self.surface)})"
