"""Workspace context: what the model should know about where it works.

Appended as a ``context/message`` before the first step, and again whenever a compaction
has taken it off the surface.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from pathlib import Path

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
    for reading (``O_NOFOLLOW | O_NONBLOCK``, then checked with ``fstat``), and no more than
    ``4 × limit`` bytes are read, so nothing outside the project reaches the model and a
    special file can neither hang the turn nor fill the memory.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(folder / name, flags)
    except OSError:
        return None  # missing, a symlink (ELOOP), unreadable
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = 4 * limit + 4
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="replace")
    if len(text) > limit or len(data) > 4 * limit:
        text = text[:limit] + f"\n[… {name} truncated …]"
    return text or None
