"""The stored sessions as a person finds them: name, folder, age, size, prompts; and the
session a name (or an id) given to ``--resume`` means.

A session in which no prompt was ever sent (a fork aside) is not listed (and is removed
when its process closes it: :func:`agent.log.keeping.close_or_discard`): a start
left at once, or a process killed before anything was sent, leaves nothing a person would
look for.

Each log is read line by line; only the lines that say a name, a prompt, a turn or a fork are
parsed (their ``"type"`` is found in the bytes first), so a listing of long sessions parses
little of them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agent.log.store import FirstPrompt, StoredSession, first_prompt, list_sessions

_NAME = b'"type":"session/name"'
_FORK = b'"type":"session/fork"'
_PROMPT = b'"type":"user/message"'
_TURN = b'"type":"turn/start"'


@dataclass(frozen=True)
class Listed:
    """What a listing shows of one stored session."""

    stored: StoredSession
    head: FirstPrompt
    """Its first prompt, whether it is a fork, or why its log cannot be read."""
    cwd: str | None
    """The folder it was started in (None: its first line says none)."""
    name: str | None
    last_prompt: str | None
    prompts: int
    turns: int

    @property
    def id(self) -> str:
        return self.stored.id

    @property
    def empty(self) -> bool:
        """No prompt was ever sent in it, and it is no fork (a log that cannot be read is
        never empty: it is listed, with why)."""
        return self.prompts == 0 and self.head.problem is None and self.head.forked_from is None


def read_listed(stored: StoredSession) -> Listed:
    """What :class:`Listed` says of ``stored``, read from its log (see the module docstring)."""
    head = first_prompt(stored.path)
    cwd = name = last = None
    prompts = turns = 0
    for lineno, line in _lines(stored.path):
        if lineno == 1:
            cwd = _field(_parsed(line), "cwd")
        elif _NAME in line:
            name = _field(_parsed(line), "name") or name
        elif _FORK in line:
            name = None  # the names before it are the parent's
        elif _PROMPT in line:
            data = _parsed(line)
            if data is not None and data.get("source", "user") == "user":
                prompts += 1
                last = _field(data, "content") or last
        elif _TURN in line:
            turns += 1
    return Listed(stored, head, cwd, name, last, prompts, turns)


def catalogue(home: Path) -> list[Listed]:
    """Every stored session in which a prompt was sent, most recently changed first."""
    return [listed for listed in map(read_listed, list_sessions(home)) if not listed.empty]


def latest(home: Path, folder: str | None = None) -> str | None:
    """The most recently changed session in which a prompt was sent, among those started in
    ``folder`` when it is given (``--continue`` goes on with this folder's work, never with
    another project's); only as many logs are read as it takes to find it. A log that cannot
    be read (whose folder nobody can tell) is taken too, so that opening it says why rather
    than a newer session starting in its place."""
    for stored in list_sessions(home):
        listed = read_listed(stored)
        unreadable = listed.head.problem is not None
        if not listed.empty and (folder is None or listed.cwd == folder or unreadable):
            return stored.id
    return None


def here_first(listed: list[Listed], folder: str) -> list[Listed]:
    """``listed`` with the sessions started in ``folder`` first (each part keeps its order)."""
    return sorted(listed, key=lambda item: item.cwd != folder)


class NoSuchSession(LookupError):
    """``--resume TEXT`` names no session, or several: the message says which and what to do."""

    def __init__(self, message: str, *, matches: tuple[Listed, ...] = ()) -> None:
        super().__init__(message)
        self.matches = matches


def resolve(home: Path, text: str) -> str:
    """The id of the session ``text`` means: an id; else a name (case aside); else the one
    session whose name or id starts with ``text``.

    Raises:
        NoSuchSession: nothing matches, or several do (the message lists them).
    """
    stored = list_sessions(home)
    if any(item.id == text for item in stored):
        return text
    listed = [item for item in map(read_listed, stored) if not item.empty]
    wanted = text.strip().casefold()
    exact = [item for item in listed if item.name is not None and item.name.casefold() == wanted]
    if len(exact) == 1:
        return exact[0].id
    matches = exact or [
        item
        for item in listed
        if item.id.startswith(text.strip())
        or (item.name is not None and item.name.casefold().startswith(wanted))
    ]
    if len(matches) == 1:
        return matches[0].id
    if not matches:
        raise NoSuchSession(f"no session is named {text!r} or has that id")
    rows = "; ".join(describe(item) for item in matches[:8])
    more = f"; and {len(matches) - 8} more" if len(matches) > 8 else ""
    raise NoSuchSession(
        f"{text!r} matches {len(matches)} sessions: {rows}{more}. Give more of the name, or the id",
        matches=tuple(matches),
    )


def holder_of(home: Path, name: str, *, but: str) -> Listed | None:
    """The other stored session (not ``but``) already called ``name`` (case aside)."""
    wanted = name.casefold()
    for item in catalogue(home):
        if item.id != but and item.name is not None and item.name.casefold() == wanted:
            return item
    return None


def describe(item: Listed) -> str:
    """``'api' (20261203-101010-3f2a9c in /home/me/src/shop)``: a session in a sentence."""
    where = item.cwd or "a folder unknown"
    if item.name is None:
        return f"{item.id} in {where}"
    return f"{item.name!r} ({item.id} in {where})"


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    with os.fdopen(fd, "rb") as f:
        try:
            yield from enumerate(f, start=1)
        except OSError:
            return


def _parsed(line: bytes) -> dict[str, object] | None:
    """The ``data`` of an event line; None when the line is no such object (a torn tail)."""
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    data = event.get("data") if isinstance(event, dict) else None
    return data if isinstance(data, dict) else None


def _field(data: dict[str, object] | None, key: str) -> str | None:
    value = None if data is None else data.get(key)
    return value if isinstance(value, str) else None
