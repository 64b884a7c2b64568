"""A session forked from another just before one of its prompts ("rewind").

The log is append-only, so going back is a new session: its history is the parent's events
before the chosen turn, copied as they were (same seqs, times and spans, so every reference
inside them still holds), then ``session/fork`` naming the parent and the seq. The parent is
only read. Forks happen at a turn's start: every copied turn is closed, every call answered.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from agent.log.events import (
    SessionFork,
    SessionForkData,
    SessionStart,
    SessionStartData,
    TurnStart,
    UserMessage,
)
from agent.log.session import Session
from agent.log.store import new_session_id, session_path, sessions_dir


@dataclass(frozen=True)
class ForkPoint:
    """A turn one can go back to: forking at ``seq`` (its ``turn/start``) keeps everything
    before it; ``prompt`` is what was asked there, for the person to edit and send again."""

    seq: int
    turn: int
    prompt: str
    prompt_seq: int


class ForkError(ValueError):
    """The seq is not the start of a turn with a prompt (the message lists the ones that are)."""


def fork_points(session: Session) -> list[ForkPoint]:
    """Every turn of ``session`` that began with a prompt of the user's, oldest first."""
    points: list[ForkPoint] = []
    events = session.events
    for i, event in enumerate(events):
        if not isinstance(event, TurnStart):
            continue
        asked = next(
            (
                e
                for e in events[i + 1 : i + 4]
                if isinstance(e, UserMessage) and e.data.source == "user"
            ),
            None,
        )
        if asked is not None:
            points.append(ForkPoint(event.seq, event.data.turn, asked.data.content, asked.seq))
    return points


def fork_session(parent: Session, at_seq: int, home: Path | None = None) -> tuple[str, ForkPoint]:
    """Write a new session holding ``parent``'s events before ``at_seq`` and a
    ``session/fork``; returns its id (open it to go on) and the point it was forked at.
    ``at_seq`` is a :class:`ForkPoint` seq, or the seq of that turn's prompt. Raises
    :class:`ForkError` for any other seq, ``OSError`` when the file cannot be written."""
    points = fork_points(parent)
    point = _point(points, at_seq)
    home = Path(home) if home is not None else parent.home
    new_id = new_session_id()
    path = session_path(home, new_id)
    sessions_dir(home)
    first = parent.events[0]
    assert isinstance(first, SessionStart)
    start = SessionStart(
        seq=0,
        time=time.time(),
        data=SessionStartData(
            id=new_id,
            cwd=first.data.cwd,
            created_at=time.time(),
            forked_from=parent.id,
            provider=first.data.provider,  # later changes are in the copied events
        ),
    )
    fork = SessionFork(
        seq=point.seq,
        time=time.time(),
        data=SessionForkData(parent=parent.id, at_seq=point.seq),
    )
    copied = _logged_prefix(parent, point.seq)
    if copied is None:  # the file is not (or no longer) the events in memory: write those
        copied = "".join(event.to_json() + "\n" for event in parent.events[1 : point.seq]).encode()
    body = (start.to_json() + "\n").encode() + copied + (fork.to_json() + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(body)
        f.flush()
        os.fsync(f.fileno())
    return new_id, point


def _logged_prefix(parent: Session, end_seq: int) -> bytes | None:
    """The parent's log lines of seqs 1 to ``end_seq - 1`` as bytes, copied rather than
    serialized again (which cost about as much as loading them): line ``i`` of the log holds
    seq ``i`` when the file has exactly one line per event in memory. None when it has not
    (a file changed behind the session): the caller serializes the events instead."""
    try:
        raw = parent.path.read_bytes()
    except OSError:
        return None
    if raw.count(b"\n") != len(parent.events) or not raw.endswith(b"\n"):
        return None
    start = raw.index(b"\n") + 1
    end = start
    last = start
    for _ in range(end_seq - 1):
        last, end = end, raw.index(b"\n", end) + 1
    if end_seq > 1 and _seq_of(raw[last:end]) != end_seq - 1:
        return None
    return raw[start:end]


def _seq_of(line: bytes) -> object:
    try:
        return json.loads(line).get("seq")
    except (ValueError, AttributeError):
        return None


def _point(points: list[ForkPoint], at_seq: int) -> ForkPoint:
    for point in points:
        if at_seq in (point.seq, point.prompt_seq):
            return point
    starts = ", ".join(str(p.seq) for p in points) or "none"
    raise ForkError(
        f"seq {at_seq} does not start a turn with a prompt; the turns that do start at: {starts}"
    )
