"""``/export [PATH]``: the session's transcript as Markdown, the same text ``reefline export``
writes (:func:`tui.view.export.export_markdown`), from the app, ``--plain`` and ``-p``.

A file is only ever created, never overwritten: with no PATH (or a folder) the name is
``reefline-<session id>.md``, made fresh (``-2``, ``-3``…) when taken; a PATH naming a file
that exists is refused, with what to do. Relative paths are read from the session's working
directory. The file is private (0600), like the log it comes from.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

from agent.formatting import plural
from tui.commands.effects import Effect, Said
from tui.runtime.runtime import Runtime
from tui.text import clean
from tui.view.export import export_markdown

_FRESH_TRIES = 100


class ExportRefused(Exception):
    """The file was not written; the message says why and what to do."""


async def export_command(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    """``/export [PATH]`` (registered by :mod:`tui.commands.handlers`): write the file, say
    where, or why not."""
    session = runtime.session
    # The file is read on terminals too (cat, less): written out, nothing obeyed.
    text = clean(export_markdown(session))
    target = Path(session.cwd) / Path(args.strip()).expanduser() if args.strip() else None
    try:
        written = await asyncio.to_thread(write_export, text, target, Path(session.cwd), session.id)
    except ExportRefused as exc:
        yield Said(str(exc), "warning")
        return
    lines = plural(text.count("\n"), "line")
    yield Said(f"Exported the transcript (Markdown, {lines}) to {clean(str(written))}")


def write_export(text: str, target: Path | None, cwd: Path, session_id: str) -> Path:
    """Create the export file and write ``text`` to it; the path written.

    ``target`` None or a folder: a fresh ``reefline-<id>.md`` there. ``target`` an existing
    file (or a link): refused, never overwritten. Raises :class:`ExportRefused`."""
    if target is None or target.is_dir():
        folder = cwd if target is None else target
        stem = f"reefline-{session_id}"
        names = [f"{stem}.md", *(f"{stem}-{n}.md" for n in range(2, _FRESH_TRIES))]
        for name in names:
            try:
                return _create(folder / name, text)
            except FileExistsError:
                continue
        raise ExportRefused(
            f"Not exported: {folder} already holds {stem}.md and its numbered copies."
        )
    try:
        return _create(target, text)
    except FileExistsError:
        raise ExportRefused(
            f"Not exported: {clean(str(target))} already exists and is not overwritten. "
            "Give another name, or /export with no path for a new file here."
        ) from None


def _create(path: Path, text: str) -> Path:
    """Write a new 0600 file at ``path`` (exclusive: an existing name, a link included, raises
    FileExistsError); other failures become :class:`ExportRefused` with the reason."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ExportRefused(f"Not exported: cannot create {clean(str(path))}: {reason}.") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path
