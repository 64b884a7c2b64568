"""Which sessions are kept: one in which no prompt was ever sent is removed when it is
closed (whatever else was done in it: a name, ``/approve``, ``/context``), so a ``/new`` or a
start left at once does not clutter the list. A fork is kept (going back was asked for, if
only to before the first prompt)."""

from __future__ import annotations

from collections.abc import Sequence

from agent.log.events import Event, SessionFork, UserMessage
from agent.log.session import Session
from agent.log.store import remove_log


def prompted(events: Sequence[Event]) -> bool:
    """A prompt was sent in the session (or in the one it was forked from, before)."""
    return any(isinstance(e, UserMessage) and e.data.source == "user" for e in events)


def close_or_discard(session: Session) -> bool:
    """Close ``session``; remove it from disk instead when it is not kept (see the module
    docstring). True when it was removed; its files go while its writer lock is held."""
    forked = any(isinstance(e, SessionFork) for e in session.events)
    if session.readonly or session.closed or prompted(session.events) or forked:
        session.close()
        return False
    remove_log(session.path, session.spill_dir)
    session.close()
    return True
