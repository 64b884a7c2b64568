"""Workspace context: what the model should know about where it works.

Appended as a ``context/message`` before the first step, and again whenever a compaction
has taken it off the surface: the working directory, the date and the instruction files
(:mod:`agent.memory`), read anew each time.
"""

from __future__ import annotations

import datetime as dt

from agent.memory import find_memory


def workspace_context(cwd: str, today: dt.date | None = None) -> str:
    """The working directory, today's date and the instruction files, nearest last."""
    today = today or dt.date.today()
    text = f"Working directory: {cwd}\nToday's date: {today.isoformat()}"
    for file in find_memory(cwd).files:
        text += f"\n\n{file.heading}:\n\n{file.text.rstrip()}"
    return text
