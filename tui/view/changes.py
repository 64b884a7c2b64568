"""A command's file changes in words every front end shows: ``2 files changed +14 −3``
and one line per path. Paths are the workspace's own, untrusted: callers show them through
the terminal sanitizer (:func:`tui.text.clean`) or as plain text, never as markup."""

from __future__ import annotations

from agent.log.files_data import FileChangeData, FilesData
from tui.text import clean

MARKS = {"added": "A", "modified": "M", "deleted": "D", "renamed": "R", "mode": "M", "type": "T"}


def summary(files: FilesData | None) -> str | None:
    """``2 files changed +14 −3`` (None: the command changed nothing, and says nothing)."""
    if files is None or not files.changes:
        return None
    n = len(files.changes)
    added = sum(c.added or 0 for c in files.changes)
    removed = sum(c.removed or 0 for c in files.changes)
    return f"{n} file{'s' if n != 1 else ''} changed +{added} −{removed}"


def change_line(change: FileChangeData) -> str:
    """``M src/app.py +3 −1``; ``R old → new``; ``binary`` for a file recorded by hash."""
    where = change.path if change.old_path is None else f"{change.old_path} → {change.path}"
    if change.kind == "mode":
        counts = "mode changed"
    elif change.added is None:
        counts = "binary"
    else:
        counts = f"+{change.added} −{change.removed}"
    return f"{MARKS[change.kind]} {where} {counts}"


def plain_lines(files: FilesData | None) -> list[str]:
    """What ``--plain`` prints under a command that changed files: the summary, then one
    line per file (paths made safe for the terminal); nothing when nothing changed."""
    changed = summary(files)
    if changed is None or files is None:
        return []
    lines = [f"  {changed} (/diff shows it)"]
    return lines + [f"    {clean(change_line(change))}" for change in files.changes]
