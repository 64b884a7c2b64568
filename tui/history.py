"""Prompt history, persisted per user and shared by the app and the plain REPL.

The file uses prompt-toolkit's ``FileHistory`` format (``# <time>`` then ``+<line>`` per
line of an entry), so the REPL reads it with ``FileHistory`` and the app with
:class:`PromptHistory`. It lives at ``$REEFLINE_HOME/prompt-history`` and is private (0600).
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from agent.log.store import open_private

FILE_NAME = "prompt-history"
MAX_ENTRIES = 1000


def history_path(home: Path) -> Path:
    return home / FILE_NAME


class PromptHistory:
    """Entries oldest first; :meth:`add` appends to the file (consecutive repeats skipped)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: list[str] = self._load() if path is not None else []

    def _load(self) -> list[str]:
        assert self.path is not None
        try:
            raw = self.path.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            return []
        entries: list[str] = []
        lines: list[str] = []
        for line in raw.splitlines(keepends=True):
            if line.startswith("+"):
                lines.append(line[1:])
            else:
                if lines:
                    entries.append("".join(lines).removesuffix("\n"))
                lines = []
        if lines:
            entries.append("".join(lines).removesuffix("\n"))
        return entries[-MAX_ENTRIES:]

    def add(self, text: str) -> None:
        if not text.strip() or (self.entries and self.entries[-1] == text):
            return
        self.entries.append(text)
        if self.path is None:
            return
        record = f"\n# {dt.datetime.now()}\n" + "".join(f"+{ln}\n" for ln in text.split("\n"))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = open_private(self.path, os.O_WRONLY | os.O_APPEND)
            with os.fdopen(fd, "ab") as f:
                f.write(record.encode("utf-8", errors="replace"))
        except OSError:
            pass  # history is a convenience: never fail a prompt over it
