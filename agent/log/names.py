"""Session names: what a person may call a session, and the name a log gives it.

A name is an event (``session/name``); the newest one is the session's name. A fork copies
its parent's events, names included, but is not its parent: only a name given after the
``session/fork`` is the fork's own.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from agent.log.catalogue import holder_of
from agent.log.events import Event, SessionFork, SessionName
from agent.log.session import Session

NAME_LIMIT = 60
"""Characters a name may have: it heads a listing row."""

LOOKS_LIKE_AN_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")


class BadName(ValueError):
    """A name that cannot be used, with what was wrong and what to do."""


def checked_name(text: str) -> str:
    """``text`` as a name: whitespace runs made one space, ends trimmed.

    Raises:
        BadName: empty, longer than :data:`NAME_LIMIT`, holding a character a terminal
            would act on or that draws nothing, or shaped like a session id.
    """
    name = " ".join(text.split())
    if not name:
        raise BadName("a name needs at least one visible character, e.g. /rename api-refactor")
    if len(name) > NAME_LIMIT:
        raise BadName(f"a name has at most {NAME_LIMIT} characters ({len(name)} given)")
    hidden = [c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp")]
    if hidden:
        shown = ", ".join(f"U+{ord(c):04X}" for c in dict.fromkeys(hidden))
        raise BadName(f"a name cannot hold control or invisible characters ({shown})")
    if LOOKS_LIKE_AN_ID.match(name):
        raise BadName("that is shaped like a session id; pick a name that is not")
    return name


def name_of(events: Iterable[Event]) -> str | None:
    """The session's current name: the newest ``session/name`` after its last fork."""
    name = None
    for event in events:
        if isinstance(event, SessionName):
            name = event.data.name
        elif isinstance(event, SessionFork):
            name = None  # the names before it are the parent's
    return name


def rename(session: Session, text: str) -> str:
    """Name ``session`` ``text`` (checked, see :func:`checked_name`): one ``session/name``
    event, none when it already has that name. Returns the name.

    Raises:
        BadName: the name cannot be used, or another stored session has it (names are
            what ``--resume NAME`` finds, so two sessions never share one).
        OSError: the log could not be written (the name is then unchanged).
    """
    name = checked_name(text)
    holder = holder_of(session.home, name, but=session.id)
    if holder is not None:
        raise BadName(
            f"another session is named {holder.name!r} already ({holder.id} in "
            f"{holder.cwd or 'a folder unknown'}): pick another name, or resume that one and "
            "rename it first"
        )
    if name_of(session.events) != name:
        session.append("session/name", {"name": name})
    return name
