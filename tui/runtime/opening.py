"""Which stored session a run opens: the one ``--resume`` names, or with ``--continue`` the
newest one started in this folder (never another project's), or none (a new one)."""

from __future__ import annotations

from pathlib import Path

from agent.log.catalogue import NoSuchSession, latest, resolve
from agent.log.registry import EventRegistry
from agent.log.session import Session
from agent.log.store import SessionBusy
from tui.runtime.runtime import StartupError

NOTHING_TO_CONTINUE = (
    "--continue: no session was started in this folder yet, so this is a new one "
    "(`reefline sessions --all` lists the others; `--resume NAME` continues one of them)."
)


def open_session(
    home: Path,
    registry: EventRegistry,
    *,
    resume: str | None,
    continue_last: bool,
    folder: str | None = None,
) -> Session | None:
    """Resume ``resume`` (an id, a name, or a unique start of either:
    :func:`agent.log.catalogue.resolve`), or with ``continue_last`` the most recent session
    started in ``folder``;
    None when a new one is to be created (once its provider is known: its first event
    records it)."""
    if resume is not None and continue_last:
        raise StartupError("use either --resume ID or --continue, not both")
    if continue_last:
        resume = latest(home, folder)
    elif resume is not None:
        try:
            resume = resolve(home, resume)
        except NoSuchSession as exc:
            raise StartupError(f"cannot resume: {exc}", listing=not exc.matches) from None
    if resume is None:
        return None
    try:
        return Session.open(home, resume, registry=registry)
    except (ValueError, FileNotFoundError, SessionBusy) as exc:
        message = f"cannot resume session {resume!r}: {exc}"
        raise StartupError(message, listing=True) from None
