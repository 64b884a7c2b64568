"""How to start reefline again from here, as a line a person can paste: the hint printed on
leaving a session (``To go on with this session: reefline --resume api``).

``reefline`` is written only when that name, looked up on ``PATH``, is the program that runs;
after ``make run`` it is not on ``PATH``, and the hint names the script that ran
(``.venv/bin/reefline`` from the checkout, the full path elsewhere).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from pathlib import Path

from agent.log.names import name_of
from agent.log.session import Session

_PLAIN = re.compile(r"^[\w@%+=:,./~-]+$")


def reefline_command(argv0: str | None = None, cwd: str | None = None) -> str:
    """The command that starts this reefline from ``cwd`` (default: the working directory)."""
    script = Path(argv0 if argv0 is not None else sys.argv[0])
    if script.name != "reefline":  # python -m tui
        return f"{shlex.quote(sys.executable)} -m tui"
    found = shutil.which("reefline")
    try:
        if found is not None and os.path.samefile(found, script):
            return "reefline"
    except OSError:
        pass
    here = Path(cwd or os.getcwd())
    absolute = script if script.is_absolute() else here / script
    relative = os.path.relpath(absolute, here)
    if not relative.startswith(".."):
        return _quoted(relative if "/" in relative else f"./{relative}")
    home = os.path.expanduser("~")
    shown = str(absolute)
    if home != "/" and shown.startswith(home + os.sep):
        tilde = "~" + shown[len(home) :]
        if _PLAIN.match(tilde):
            return tilde
    return _quoted(shown)


def _quoted(text: str) -> str:
    return text if _PLAIN.match(text) else shlex.quote(text)


def resume_command(handle: str) -> str:
    """``reefline --resume HANDLE`` as it runs from here (``handle``: a name or an id)."""
    return f"{reefline_command()} --resume {_quoted(handle)}"


def resume_hint(handle: str) -> str:
    """What the front ends print on leaving a session that is kept, so the user knows how to
    go on with it."""
    return f"To go on with this session: {resume_command(handle)}"


def leaving_words(session: Session) -> str | None:
    """What to print once ``session`` is closed: how to go on with it (by its name when it
    has one), or, for a named session in which no prompt was sent (not kept: see
    :func:`agent.log.keeping.close_or_discard`), that it is gone; None for an
    unnamed session that was not kept."""
    name = name_of(session.events)
    if session.path.exists():
        return resume_hint(name or session.id)
    if name is not None:
        return f"Session {name!r} is not kept: no prompt was sent in it."
    return None
