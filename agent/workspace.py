"""Workspace context: what the model should know about where it works.

Appended as a ``context/message`` before the first step, and again whenever a compaction
has taken it off the surface.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from tools import beneath

AGENTS_FILE = "AGENTS.md"
MAX_AGENTS_CHARS = 8_000


def workspace_context(cwd: str, today: dt.date | None = None) -> str:
    """The working directory, today's date and the project's AGENTS.md (capped) if present."""
    today = today or dt.date.today()
    parts = [f"Working directory: {cwd}", f"Today's date: {today.isoformat()}"]
    text = read_workspace_file(Path(cwd), AGENTS_FILE, MAX_AGENTS_CHARS)
    if text:
        parts.append(f"Project instructions from {AGENTS_FILE}:\n\n{text}")
    return "\n".join(parts)


def read_workspace_file(folder: Path, name: str, limit: int) -> str | None:
    """``folder/name`` as text when it is a regular file of the folder itself, at most
    ``limit`` characters; None otherwise.

    A cloned repository decides what its files are: a symlink (to ``/proc/self/environ``, a
    key file, anything outside the folder) is not followed, a FIFO or device is not opened
    for reading (:mod:`tools.beneath`: ``O_NOFOLLOW | O_NONBLOCK``, then checked with
    ``fstat``), and no more than ``4 × limit`` bytes are read, so nothing outside the
    project reaches the model and a special file can neither hang the turn nor fill the
    memory.
    """
    data = beneath.read_beneath(os.path.realpath(folder), [name], 4 * limit + 4)
    if data is None:
        return None
    text = data.decode("utf-8", errors="replace")
    if len(text) > limit or len(data) > 4 * limit:
        text = text[:limit] + f"\n[… {name} truncated …]"
    return text or None
