"""The one command layer of the front ends: the slash-command table, its parsing, and the
actions the app and the REPL share (switch session, rewind, switch model, set the approval policy;
``/compact`` goes through the runtime's :class:`~compact.command.CompactCommand`).

An action changes the runtime and returns what to tell the person (:class:`Said`); the app
shows it as a notice, the REPL prints it. What only one front end can do (open a screen,
toggle the timeline panel) stays with that front end.
"""

from __future__ import annotations

import asyncio
import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent.fork import ForkError, ForkPoint, fork_points, fork_session
from agent.settings import SettingsError
from compact.dry_run import report
from compact.uncompact import uncompact
from tools.base import POLICIES
from tui.file_commands import restore_files
from tui.runtime import Runtime, StartupError
from tui.wiring import build_runtime

SLASH_COMMANDS: dict[str, str] = {
    "help": "List the commands.",
    "compact": "Condense older history now; optional focus text steers the summary.",
    "uncompact": "Undo the newest compaction (or #N): its shadowed history comes back.",
    "context": "Show what fills the context window, by category.",
    "timeline": "Show every compaction and prune of this session.",
    "new": "Start a new session.",
    "sessions": "List stored sessions.",
    "resume": "Continue a stored session by id.",
    "rewind": "Go back to before an earlier prompt, files too if asked (esc twice).",
    "diff": "Show what the last command that changed files changed.",
    "model": "Switch the model for the next request.",
    "approve": "Set the bash approval policy: ask, auto or deny.",
    "quit": "Leave reefline.",
}
"""Every slash command every front end offers: name -> one-line help."""

SLASH_USAGE: dict[str, str] = {
    "help": "/help",
    "compact": "/compact [--dry-run] [focus]",
    "uncompact": "/uncompact [N]",
    "context": "/context",
    "timeline": "/timeline",
    "new": "/new",
    "sessions": "/sessions",
    "resume": "/resume <id>",
    "rewind": "/rewind [n]",
    "diff": "/diff",
    "model": "/model <name>",
    "approve": "/approve ask|auto|deny",
    "quit": "/quit",
}
"""How each command is typed (for help and completion)."""

_SLASH = re.compile(r"/([A-Za-z][A-Za-z0-9_-]*)(?:\s+(.*))?", re.DOTALL)


def parse_slash(text: str) -> tuple[str, str] | None:
    """Split a slash command into ``(name, args)``; None when ``text`` is not one.

    ``"/compact the parser"`` -> ``("compact", "the parser")``. The name is lowercased and
    the args stripped. Text that merely starts with a slash — a path such as ``/etc/hosts``,
    ``//`` or a lone ``/`` — is not a command, so it can be sent as a message. Unknown names
    are still parsed (see :func:`closest_command` for the "did you mean" hint).
    """
    match = _SLASH.fullmatch(text.strip())
    if match is None:
        return None
    return match.group(1).lower(), (match.group(2) or "").strip()


def closest_command(name: str) -> str | None:
    """The known command ``name`` most likely meant: itself, a unique prefix match, or the
    closest spelling (``compcat`` -> ``compact``); None when nothing is close."""
    name = name.lower().lstrip("/")
    if name in SLASH_COMMANDS:
        return name
    if name:
        prefixed = [c for c in SLASH_COMMANDS if c.startswith(name)]
        if len(prefixed) == 1:
            return prefixed[0]
    close = difflib.get_close_matches(name, list(SLASH_COMMANDS), n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_command_text(name: str) -> str:
    """``Unknown command /compcat — did you mean /compact?`` (or a pointer to /help)."""
    guess = closest_command(name)
    if guess is not None and guess != name:
        return f"Unknown command /{name} — did you mean /{guess}?"
    return f"Unknown command /{name} — type /help for the list."


def slash_help() -> str:
    """One line per command: usage, then help."""
    width = max(len(u) for u in SLASH_USAGE.values())
    return "\n".join(f"{SLASH_USAGE[n]:<{width}}  {h}" for n, h in SLASH_COMMANDS.items())


# --- shared actions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Said:
    """What an action tells the person who ran it."""

    text: str
    level: Literal["info", "warning", "error"] = "info"


async def switch_model(runtime: Runtime, args: str) -> Said:
    """``/model [name]``: show the model, or switch to ``name`` for the next request (its
    window follows: asked of the server once, else the table)."""
    if not args.strip():
        return Said(f"Model: {runtime.model_label}. /model <name> switches.")
    name = args.split()[0]
    if runtime.is_demo:
        # The scripted model answers whatever is asked for: a new name would be a false label.
        return Said(
            f"The offline demo model answers here, whatever the name; /model {name} would "
            "change only the label. Connect a real model to switch models (--base-url, or "
            "OPENAI_API_KEY / DEEPSEEK_API_KEY).",
            "warning",
        )
    runtime.switch_model(name)
    await runtime.window_asker.ensure()
    window = runtime.windows.current
    known = window.label() if window.tokens else "window unknown — set --context-window"
    return Said(f"Model set to {name} for the next request ({known}).")


DRY_RUN = "--dry-run"


def compact_dry_run(runtime: Runtime, args: str) -> Said | None:
    """``/compact --dry-run``: what ``/compact`` would summarize and keep, and the token
    figures (:mod:`compact.dry_run`); None when ``args`` do not ask for a dry run."""
    if DRY_RUN not in args.split():
        return None
    run = runtime.compaction.dry_run(runtime.agent.envelope())
    return Said(report(run))


def undo_compaction(runtime: Runtime, args: str) -> Said | None:
    """``/uncompact [N]``: undo compaction #N, or the newest one standing
    (:func:`compact.uncompact.uncompact`), between turns only. What it did or why not is
    logged (``command/done`` says it: None is returned then)."""
    if runtime.agent.busy or runtime.compact_command.running:
        return Said("A compaction is undone between turns: wait, or press esc.", "warning")
    uncompact(runtime.session, runtime.meter, runtime.agent.envelope(), args)
    return None


def set_approval(runtime: Runtime, args: str) -> Said | None:
    """``/approve [ask|auto|deny]``: show the policy, or set it (logged, so the log's
    ``command/done`` says it: None is returned then)."""
    policy = args.strip().lower()
    if not policy:
        return Said(
            f"Bash approval policy: {runtime.bash.policy}. /approve ask|auto|deny changes it."
        )
    if policy not in POLICIES:
        return Said("Usage: /approve ask|auto|deny", "warning")
    runtime.set_approval(policy)  # type: ignore[arg-type]
    return None


@dataclass(frozen=True)
class Rewound:
    """A rewind that worked: the forked session's runtime and the prompt to edit."""

    runtime: Runtime
    prompt: str
    said: Said


def rewind_points(runtime: Runtime) -> list[ForkPoint]:
    """The prompts ``/rewind`` offers, oldest first (numbered from 1 where they are listed)."""
    return fork_points(runtime.session)


async def rewind(
    old: Runtime, point: ForkPoint, *, files: bool = False, scripted_delay_s: float = 0.0
) -> Rewound | Said:
    """``/rewind``: a new session forked just before ``point``'s turn (the old one is left as
    it was), with the shell back in the directory of that moment; with ``files``, the files
    the later commands changed put back too. The caller closes ``old`` once it shows the new
    one and puts :attr:`Rewound.prompt` in the input."""
    if old.agent.busy:
        return Said("A turn is running: interrupt it (Esc) before going back.", "warning")
    try:
        new_id, point = await asyncio.to_thread(fork_session, old.session, point.seq)
    except (ForkError, OSError) as exc:
        return Said(f"Cannot go back: {exc}", "error")
    new = await switch_session(old, new_id, scripted_delay_s=scripted_delay_s)
    if isinstance(new, Said):
        return new
    text = (
        f"Back before turn {point.turn}: session {new_id} goes on from there (session "
        f"{old.session.id} is kept as it was). Your prompt is in the input to edit and send."
    )
    level: Literal["info", "warning", "error"] = "info"
    if files:
        told, how = await restore_files(old.session, new, point.seq)
        text, level = f"{text}\n{told}", how
    return Rewound(new, point.prompt, Said(text, level))


async def switch_session(
    old: Runtime, resume: str | None, *, scripted_delay_s: float = 0.0
) -> Runtime | Said:
    """``/new`` (``resume`` None) or ``/resume <id>``: the new runtime, built off the event
    loop (loading a long session prices every message of it); or what went wrong. The caller
    closes ``old`` once it shows the new one.

    ``/new`` keeps the approval policy in use. A resumed session takes the one its log
    chose (:mod:`agent.carryover`), else the front end's default, exactly as ``--resume``
    does: a session left in ``ask`` never runs commands unasked because the session open
    before it ran in ``auto`` (a ``--approve`` flag given at start still wins)."""
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
            scripted_delay_s=scripted_delay_s,
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
