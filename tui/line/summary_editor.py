"""``/summary edit`` in a line front end: the newest checkpoint's summary in ``$EDITOR``.

The summary is written to a private temporary file, the editor (``$VISUAL``, else
``$EDITOR``, split like a shell would) runs on the terminal, and what the file holds when it
exits is saved (:func:`tui.commands.summary.save_summary`). No editor set, one that cannot
start, or one that exits with an error: a line says so, the summary is unchanged, and any
text already written stays in the file the line names.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tui.commands.summary import save_summary
from tui.runtime.runtime import Runtime

NO_EDITOR = (
    "No editor to open: set EDITOR (e.g. EDITOR=nano) and run /summary edit again. "
    "The summary is unchanged."
)


@dataclass(frozen=True)
class Edited:
    """What the editor left: the file's text, or the line saying why there is none."""

    text: str | None
    said: str | None = None


def editor_command() -> list[str] | None:
    """The editor to run, as an argument list; None when neither variable names one."""
    for name in ("VISUAL", "EDITOR"):
        value = os.environ.get(name, "").strip()
        if value:
            try:
                return shlex.split(value)
            except ValueError:
                return [value]
    return None


async def edit_text(text: str, number: int) -> Edited:
    """Open the editor on ``text``; what the file held when it exited (see the module)."""
    command = editor_command()
    if command is None:
        return Edited(None, NO_EDITOR)
    fd, name = tempfile.mkstemp(prefix=f"reefline-summary-{number}-", suffix=".md")
    path = Path(name)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    try:
        done = await asyncio.to_thread(subprocess.run, [*command, str(path)], check=False)
    except OSError as exc:
        path.unlink(missing_ok=True)
        return Edited(None, f"The editor {command[0]!r} could not start ({exc}). {NO_EDITOR}")
    edited = path.read_text(encoding="utf-8", errors="replace")
    if done.returncode != 0:
        kept = f" What the file held is kept in {path}." if edited != text else ""
        if not kept:
            path.unlink(missing_ok=True)
        return Edited(None, f"The editor exited with code {done.returncode}: nothing saved.{kept}")
    path.unlink(missing_ok=True)
    return Edited(edited)


async def edit_summary_in_editor(
    runtime: Runtime, summary: str, number: int, say: Callable[[str], None]
) -> None:
    """The whole ``/summary edit`` of a line front end: edit, then save what changed (the
    log's ``command/done`` says the outcome, refused or saved)."""
    edited = await edit_text(summary, number)
    if edited.text is None:
        say(f"! {edited.said}")
        return
    if edited.text.strip() == summary.strip():
        say("Nothing changed: the summary stays as it was.")
        return
    save_summary(runtime, edited.text)
