"""What can go wrong opening or appending to a session log, and what opening one found and
did (a torn last line moved aside, an interrupted turn closed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


class SessionError(Exception):
    """Base for session misuse and load failures."""


class SessionLoadError(SessionError, ValueError):
    """A log that cannot be loaded; names the file and line. The file is left untouched.

    A ``ValueError`` too (bad data, like :class:`~agent.log.store.InvalidSessionId`), so front
    ends that turn a bad resume target into a readable error catch it with the rest."""

    def __init__(self, path: Path, line: int | None, reason: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


class ReentrantAppend(SessionError):
    """An observer tried to append while being notified of an append."""


@dataclass
class LoadReport:
    """What opening a log found and did."""

    torn_bytes: int = 0
    """Size of an incomplete last line (a crash mid-write), 0 if none."""
    torn_path: Path | None = None
    """Side file holding those bytes (None when nothing was torn, or opened read-only)."""
    repaired: list[int] = field(default_factory=list)
    """Seqs of the closers appended for an interrupted turn."""
    read: int = 0
    """Events read from the file; the ones after them this process appended."""

    def notices(self) -> list[str]:
        """One human sentence per thing the user should know."""
        out = []
        if self.torn_bytes and self.torn_path is not None:
            out.append(
                f"The session log ended with an incomplete line ({self.torn_bytes} bytes, from a "
                f"crash mid-write); it was moved to {self.torn_path}."
            )
        elif self.torn_bytes:
            out.append(f"The session log ends with an incomplete line ({self.torn_bytes} bytes).")
        if self.repaired:
            out.append(
                "The last turn was interrupted (the process stopped mid-turn); it was closed: "
                "what it lacked was appended as repair events."
            )
        return out
