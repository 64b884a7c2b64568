"""JSONL persistence for session logs.

One file per session at ``<home>/sessions/<id>.jsonl``. Each append writes one line and
flushes it; :meth:`LogFile.sync` fsyncs (the session calls it after durable events and on
close). Directories are created 0700 and files 0600: a session log holds everything the
user and the model said.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

import platformdirs

SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SUFFIX = ".jsonl"


class SessionBusy(OSError):
    """Another process holds the session log open for writing."""


class InvalidSessionId(ValueError):
    """A session id that could escape the sessions folder or is not one we would create."""


def default_home() -> Path:
    """``$REEFLINE_HOME`` if set, else the platform user data dir (``~/.local/share/reefline``)."""
    env = os.environ.get("REEFLINE_HOME")
    return Path(env).expanduser() if env else Path(platformdirs.user_data_dir("reefline"))


def validate_session_id(session_id: str) -> str:
    """Return ``session_id`` if safe to use as a file name, else raise InvalidSessionId."""
    if not SESSION_ID.match(session_id) or ".." in session_id:
        raise InvalidSessionId(
            f"invalid session id {session_id!r}: use the id shown by `reefline sessions` "
            "(letters, digits, '.', '_' and '-', no path separators or '..')"
        )
    return session_id


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if missing; the leaf is made 0700."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def sessions_dir(home: Path) -> Path:
    ensure_private_dir(home)
    return ensure_private_dir(home / "sessions")


def session_path(home: Path, session_id: str) -> Path:
    return home / "sessions" / f"{validate_session_id(session_id)}{SUFFIX}"


def new_session_id() -> str:
    """Sortable and unique enough: ``YYYYMMDD-HHMMSS-xxxxxx``."""
    return time.strftime("%Y%m%d-%H%M%S", time.localtime()) + "-" + os.urandom(3).hex()


@dataclass(frozen=True)
class StoredSession:
    """A session file found on disk."""

    id: str
    path: Path
    modified: float
    size: int


def list_sessions(home: Path) -> list[StoredSession]:
    """Session files under ``home``, most recently modified first."""
    folder = home / "sessions"
    if not folder.is_dir():
        return []
    found = []
    for path in folder.glob(f"*{SUFFIX}"):
        sid = path.name[: -len(SUFFIX)]
        if not SESSION_ID.match(sid) or not path.is_file():
            continue
        st = path.stat()
        found.append(StoredSession(sid, path, st.st_mtime, st.st_size))
    found.sort(key=lambda s: (s.modified, s.id), reverse=True)
    return found


FIRST_PROMPT_LINES = 200
"""How far into a log :func:`first_prompt` looks (it sits near the top: seq 1 or 2)."""


@dataclass(frozen=True)
class FirstPrompt:
    """What a listing shows of a log: its first user request, or why its head is unreadable."""

    text: str | None
    """The first user request; None when there is none near the top."""
    problem: str | None = None
    """Why the log cannot be loaded, found in its first lines ("line 2 is nested too
    deeply"); the session cannot be resumed or viewed until it is mended."""
    forked_from: str | None = None
    """The parent's id when the session is a fork (a listing would show both alike)."""

    @property
    def listed(self) -> str:
        """One line for a listing: the request (``fork of ID: `` first for a fork), or the
        problem in parentheses."""
        if self.problem:
            return f"(unreadable log: {self.problem})"
        fork = f"fork of {self.forked_from}: " if self.forked_from else ""
        return fork + (self.text or "")


def first_prompt(path: Path) -> FirstPrompt:
    """The first user request of a session log, read from its first lines only (a listing
    of many long sessions must not parse them whole). A line there that is no JSON object
    (or nests beyond the parser's depth) is reported, not raised: one bad log must not stop
    the listing of the others. A torn last line (a crash mid-write) is no problem: the next
    load repairs it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return FirstPrompt(None, f"cannot be opened ({exc.strerror or exc})")
    parent = None
    with os.fdopen(fd, "rb") as f:
        try:
            for lineno, line in zip(range(1, FIRST_PROMPT_LINES + 1), f, strict=False):
                if lineno == 1:
                    parent = _parent_in(line)
                found = _prompt_in(line, lineno)
                if found is not None:
                    return replace(found, forked_from=parent)
        except OSError as exc:
            return FirstPrompt(None, f"cannot be read ({exc.strerror or exc})")
    return FirstPrompt(None, forked_from=parent)


def _parent_in(line: bytes) -> str | None:
    """The ``forked_from`` of a ``session/start`` line (None for any other line, or none)."""
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None  # reported as the line is read for the prompt
    data = event.get("data") if isinstance(event, dict) else None
    parent = data.get("forked_from") if isinstance(data, dict) else None
    return parent if isinstance(parent, str) and SESSION_ID.match(parent) else None


def _prompt_in(line: bytes, lineno: int) -> FirstPrompt | None:
    """The listing's answer if ``line`` settles it, None to read on."""
    try:
        event = json.loads(line)
    except RecursionError:
        return FirstPrompt(None, f"line {lineno} is nested too deeply")
    except ValueError:
        torn = not line.endswith(b"\n")
        return FirstPrompt(None, None if torn else f"line {lineno} is not JSON")
    if not isinstance(event, dict):
        return FirstPrompt(None, f"line {lineno} is not a JSON object")
    if event.get("type") != "user/message":
        return None
    data = event.get("data")
    if isinstance(data, dict) and data.get("source", "user") == "user":
        content = data.get("content")
        return FirstPrompt(content if isinstance(content, str) else None)
    return None


def is_open_for_writing(path: Path) -> bool:
    """True when a reefline process holds ``path`` open for appending (its writer lock)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def open_private(path: Path, flags: int) -> int:
    """A file descriptor for writing ``path`` (``flags``: ``os.O_WRONLY | os.O_APPEND`` or
    ``| os.O_TRUNC``), created if missing. The file is 0600 afterwards whatever the umask,
    and also when it already existed with wider permissions (the mode given to ``open``
    applies only to a file it creates)."""
    fd = os.open(path, flags | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise
    return fd


def write_private(path: Path, data: bytes) -> None:
    """Write a new 0600 file (used for side files such as a torn tail)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


class LogFile:
    """An open session log: append lines, flush each, fsync on request."""

    def __init__(self, path: Path, *, create: bool) -> None:
        self.path = path
        flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW
        flags |= os.O_CREAT | os.O_EXCL if create else 0
        fd = os.open(path, flags, 0o600)
        try:
            os.fchmod(fd, 0o600)
            # One writer per session: a second process appending would interleave seqs.
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SessionBusy(
                f"session log {path} is open in another reefline process; "
                "close it there or start a new session"
            ) from None
        self._file: BinaryIO | None = os.fdopen(fd, "ab", buffering=0)

    def append(self, line: bytes) -> None:
        """Write one line (newline added). Raises OSError on failure; then nothing was written
        as far as the log is concerned: a partial line is a torn tail the next load repairs,
        and we try to cut it right away so later appends stay well-formed.

        A short write is continued: it may be a harmless interruption, and when the disk is
        full (or the file at its size limit) the next write fails with the real reason
        (ENOSPC, EFBIG), which the error then carries along with the log's path."""
        f = self._require()
        data = line + b"\n"
        start = os.fstat(f.fileno()).st_size
        try:
            done = 0
            while done < len(data):
                written = f.write(memoryview(data)[done:])
                if not written:
                    raise OSError(errno.EIO, f"short write ({done} of {len(data)} bytes)")
                done += written
        except OSError as exc:
            with contextlib.suppress(OSError):
                self.truncate(start)
            if exc.filename is None and exc.errno is not None:
                raise OSError(exc.errno, exc.strerror, str(self.path)) from exc
            raise

    def truncate(self, size: int) -> None:
        """Cut the log to ``size`` bytes: the file this object holds open and locked, not
        whatever the path names now (a file put in its place is left alone)."""
        os.ftruncate(self._require().fileno(), size)

    def sync(self) -> None:
        os.fsync(self._require().fileno())

    def close(self) -> None:
        if self._file is not None:
            try:
                self.sync()
            finally:
                self._file.close()
                self._file = None

    @property
    def closed(self) -> bool:
        return self._file is None

    def _require(self) -> BinaryIO:
        if self._file is None:
            raise ValueError(f"session log {self.path} is closed")
        return self._file


def torn_side_file(path: Path, torn: bytes) -> Path:
    """Save a torn tail next to the log before it is cut, so nothing is lost."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        side = path.with_name(f"{path.name}.torn-{stamp}" + (f"-{n}" if n else ""))
        try:
            write_private(side, torn)
            return side
        except FileExistsError:
            continue
    raise OSError(f"could not create a side file for the torn tail of {path}")


def remove_log(path: Path, spill_dir: Path) -> None:
    """Remove a session log nothing happened in, and its (empty) spill folder."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    with contextlib.suppress(OSError):
        spill_dir.rmdir()  # only ever empty here: nothing ran
