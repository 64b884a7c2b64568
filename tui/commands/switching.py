"""Opening another session in place of the open one: a new one, a stored one, or a fork of
this one just before an earlier prompt (``/new``, ``/resume``, ``/rewind``).

Each builds the new runtime off the event loop (loading a long session prices every message
of it) and returns it, or what went wrong; the front end shows the new one and closes the old
(:class:`tui.commands.effects.Adopt`)."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

from agent.log.catalogue import NoSuchSession, resolve
from agent.log.fork import ForkError, ForkPoint, fork_points, fork_session
from agent.settings import SettingsError
from tui.commands.effects import Level, Said
from tui.commands.files import restore_files
from tui.runtime.runtime import Runtime, StartupError
from tui.runtime.wiring import build_runtime


@dataclass(frozen=True)
class Rewound:
    """A rewind that worked: the forked session's runtime and the prompt to edit."""

    runtime: Runtime
    prompt: str
    said: Said


def rewind_points(runtime: Runtime) -> list[ForkPoint]:
    """The prompts ``/rewind`` offers, oldest first (numbered from 1 where they are listed)."""
    return fork_points(runtime.session)


async def rewind(old: Runtime, point: ForkPoint, *, files: bool = False) -> Rewound | Said:
    """``/rewind``: a new session forked just before ``point``'s turn (the old one is left as
    it was), with the shell back in the directory of that moment; with ``files``, the files
    the later commands changed put back too. The caller closes ``old`` once it shows the new
    one and gives :attr:`Rewound.prompt` back to edit."""
    if old.agent.busy:
        return Said("A turn is running: interrupt it (Esc) before going back.", "warning")
    try:
        new_id, point = await asyncio.to_thread(fork_session, old.session, point.seq)
    except (ForkError, OSError) as exc:
        return Said(f"Cannot go back: {exc}", "error")
    new = await switch_session(old, new_id)
    if isinstance(new, Said):
        return new
    text = (
        f"Back before turn {point.turn}: session {new_id} goes on from there (session "
        f"{old.session.id} is kept as it was). Your prompt is back to edit and send."
    )
    level: Level = "info"
    if files:
        told, level = await restore_files(old, new, point.seq)
        text = f"{text}\n{told}"
    return Rewound(new, point.prompt, Said(text, level))


async def switch_session(old: Runtime, resume: str | None) -> Runtime | Said:
    """``/new`` (``resume`` None) or ``/resume <id>``: the new runtime, or what went wrong.

    ``/new`` keeps the approval policy in use. A resumed session takes the one its log
    chose (:mod:`agent.carryover`), else the front end's default, exactly as ``--resume``
    does: a session left in ``ask`` never runs commands unasked because the session open
    before it ran in ``auto`` (a ``--approve`` flag given at start still wins)."""
    if resume is not None:
        with contextlib.suppress(NoSuchSession):  # building the runtime says why
            resume = resolve(old.home, resume)
    if resume == old.session.id:
        return Said(f"Already in session {resume}.")
    cwd = Path(old.session.cwd) if Path(old.session.cwd).is_dir() else None
    try:
        new = await asyncio.to_thread(
            build_runtime,
            old.settings,
            resume=resume,
            default_approve=old.default_approve if resume else old.bash.policy,
            cwd=cwd,
            scripted_delay_s=old.scripted_delay_s,
        )
    except StartupError as exc:
        return Said(exc.said_in("/sessions"), "error")
    except (SettingsError, OSError) as exc:
        return Said(str(exc), "error")
    if resume is None:
        new.bash.policy = old.bash.policy
    elif new.bash.policy != old.bash.policy:
        new.notices.append(
            f"Bash approval policy: {new.bash.policy}, this session's (the session before "
            f"ran in {old.bash.policy})."
        )
    return new
