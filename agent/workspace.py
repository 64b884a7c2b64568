"""Workspace context: what the model should know about where it works.

Appended as a ``context/message`` before the first step, and again whenever a compaction
has taken it off the surface.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

AGENTS_FILE = "AGENTS.md"
MAX_AGENTS_CHARS = 8_000


def workspace_context(cwd: str, today: dt.date | None = None) -> str:
    """The working directory, today's date and the project's AGENTS.md (capped) if present."""
    today = today or dt.date.today()
    parts = [f"Working directory: {cwd}", f"Today's date: {today.isoformat()}"]
    agents = Path(cwd) / AGENTS_FILE
    try:
        text = agents.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = None
    if text:
        if len(text) > MAX_AGENTS_CHARS:
            text = text[:MAX_AGENTS_CHARS] + f"\n[… {AGENTS_FILE} truncated …]"
        parts.append(f"Project instructions from {AGENTS_FILE}:\n\n{text}")
    return "\n".join(parts)
