"""Memory: the instruction files the model is given with the workspace context (before the
first step, and again after every checkpoint), and the lines ``/remember`` adds to them.

Found, in the order they are sent (nearest last, so the most specific word comes last):

1. the user's own file, ``AGENTS.md`` in reefline's config folder (``~/.config/reefline``);
2. one file per folder from the project root down to the working directory: ``AGENTS.md``,
   or ``CLAUDE.md`` where the folder has no ``AGENTS.md``. The project root is the nearest
   folder up from the working directory that holds ``.git``; without one, the working
   directory alone.

Each is read by :func:`read_workspace_file` (the one reader: regular files only, no link
followed, a limit on what is read) and capped at :data:`MAX_MEMORY_CHARS` with a note saying
so; together they are held to :data:`MAX_TOTAL_CHARS`, the nearest files first.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent.config_file import config_dir
from tools import beneath

AGENTS_FILE = "AGENTS.md"
CLAUDE_FILE = "CLAUDE.md"
MEMORY_NAMES = (AGENTS_FILE, CLAUDE_FILE)
"""What a folder's instructions are called, the first that is a regular file wins."""
MAX_MEMORY_CHARS = 8_000
MAX_TOTAL_CHARS = 32_000

Scope = Literal["user", "project"]


@dataclass(frozen=True)
class MemoryFile:
    """One instruction file as it is sent: ``text`` capped (with the note when ``cut``)."""

    path: Path
    scope: Scope
    text: str
    cut: bool

    @property
    def heading(self) -> str:
        """What the model is told the text is."""
        if self.scope == "user":
            return f"The user's own instructions, for every project ({self.path})"
        return f"Project instructions from {self.path}"


@dataclass(frozen=True)
class Unread:
    """A file where one was looked for that is not sent, and why."""

    path: Path
    why: str


@dataclass(frozen=True)
class Memory:
    """What :func:`find_memory` found: the files in the order sent, what was left unread, the
    project root and the file ``/remember`` writes to in each scope."""

    files: tuple[MemoryFile, ...]
    unread: tuple[Unread, ...]
    root: Path
    cwd: Path
    user_file: Path

    @property
    def project_file(self) -> Path:
        """Where a project line goes: the root's file the model reads (its ``CLAUDE.md`` when
        it has only that, so the line is not hidden behind a new ``AGENTS.md``), else a new
        ``AGENTS.md`` there."""
        for file in self.files:
            if file.scope == "project" and file.path.parent == self.root:
                return file.path
        return self.root / AGENTS_FILE

    def target(self, scope: Scope) -> Path:
        return self.user_file if scope == "user" else self.project_file


def project_root(cwd: Path) -> Path:
    """The nearest folder from ``cwd`` up that holds ``.git`` (a folder, or a worktree's
    file); ``cwd`` itself when none does."""
    for folder in (cwd, *cwd.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return cwd


def user_memory_file() -> Path:
    """``AGENTS.md`` in reefline's config folder (``$XDG_CONFIG_HOME/reefline``)."""
    return config_dir() / AGENTS_FILE


def find_memory(cwd: str | Path, user_file: Path | None = None) -> Memory:
    """The instruction files for work in ``cwd`` (see the module docstring)."""
    here = Path(os.path.realpath(cwd))
    root = project_root(here)
    user_file = user_file or user_memory_file()
    parts = here.relative_to(root).parts
    levels = [root.joinpath(*parts[:n]) for n in range(len(parts) + 1)]
    found: list[MemoryFile] = []
    unread: list[Unread] = []
    left = MAX_TOTAL_CHARS
    # The nearest first for the budget, the user's file last; sent in the opposite order.
    places: list[tuple[Scope, Path, tuple[str, ...]]] = [
        *(("project", level, MEMORY_NAMES) for level in reversed(levels)),
        ("user", user_file.parent, (user_file.name,)),
    ]
    for scope, folder, names in places:
        for name in names:
            why = _not_regular(folder / name)
            if why is not None:
                if why:
                    unread.append(Unread(folder / name, why))
                continue
            if left <= 0:
                full = f"not sent: nearer files took the {MAX_TOTAL_CHARS:,} characters allowed"
                unread.append(Unread(folder / name, full))
                break
            text = read_workspace_file(folder, name, min(MAX_MEMORY_CHARS, left))
            if text is not None:
                cut = text.endswith(cut_note(name, min(MAX_MEMORY_CHARS, left)))
                found.append(MemoryFile(folder / name, scope, text, cut))
                left -= len(text)
            break
    return Memory(tuple(reversed(found)), tuple(unread), root, here, user_file)


def _not_regular(path: Path) -> str | None:
    """None when ``path`` is a regular file; "" when nothing is there; else why it is not
    read (said by ``/memory``)."""
    try:
        found = os.lstat(path)
    except OSError:
        return ""
    if stat.S_ISREG(found.st_mode):
        return None
    if stat.S_ISLNK(found.st_mode):
        return "a symlink: not followed (only a regular file of the folder is read)"
    return "not a regular file: not read"


def cut_note(name: str, limit: int) -> str:
    """The note that ends a file cut at ``limit`` characters."""
    return f"\n[… {name} truncated at {limit:,} characters …]"


def read_workspace_file(folder: Path, name: str, limit: int) -> str | None:
    """``folder/name`` as text when it is a regular file of the folder itself, at most
    ``limit`` characters (then :func:`cut_note`); None otherwise.

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
        text = text[:limit] + cut_note(name, limit)
    return text or None


def remembered_line(text: str) -> str:
    """``text`` as the line ``/remember`` writes: one Markdown item, on one line."""
    return f"- {' '.join(text.split())}"


def remember(path: Path, text: str) -> str:
    """Add ``text`` to the instruction file at ``path`` as one line (``- text``), the file
    made when missing (the user's config folder too, private); returns the line written.

    Raises:
        OSError: the file is a symlink or not a regular file (never followed or opened), or
            its folder cannot be reached or written; the message says which.
    """
    line = remembered_line(text)
    if path.parent == user_memory_file().parent:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        top = beneath.open_root(path.parent)
        try:
            beneath.append_line(top, path.name, line)
        finally:
            os.close(top)
    except OSError as exc:
        raise OSError(exc.errno, unwritable(path) or f"{path}: {exc.strerror or exc}") from None
    return line


def unwritable(path: Path) -> str | None:
    """Why ``/remember`` will not write ``path`` (a symlink, not a regular file), or None."""
    why = _not_regular(path)
    if not why:
        return None
    return (
        f"{path} is {why.split(':')[0]}: reefline adds lines only to a regular file, never "
        "through a link; add the line to the file yourself"
    )
