"""What changed between two snapshots: the paths with their line counts, and the patch."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from tools.modes import ChangeKind
from tools.snapshots import stubs
from tools.snapshots.git import Git

_KINDS: dict[str, ChangeKind] = {
    "A": "added",
    "M": "modified",
    "D": "deleted",
    "R": "renamed",
    "T": "type",
}


DIFF_ARGS = ("-r", "-z", "-M", "--raw", "--numstat")
"""How a diff between two snapshots is asked for (:func:`parse_changes` reads it)."""


@dataclass(frozen=True)
class Change:
    """One changed path. ``added``/``removed`` are line counts, None for a file recorded by
    hash (binary, or too large) or a symlink's target change."""

    path: str
    kind: ChangeKind
    added: int | None = None
    removed: int | None = None
    old_path: str | None = None
    """The path it was renamed from (``kind`` renamed)."""

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the change touched (a rename: both)."""
        return (self.path,) if self.old_path is None else (self.old_path, self.path)


@dataclass(frozen=True)
class Recorded:
    """The snapshots taken around one command and the paths that changed between them."""

    before: str
    after: str
    changes: tuple[Change, ...] = ()


def changes(git: Git, before: str, after: str) -> list[Change]:
    """The paths that differ from snapshot ``before`` to ``after``, in path order."""
    if before == after:
        return []
    return parse_changes(git.run(["diff-tree", *DIFF_ARGS, before, after]))


def parse_changes(out: bytes) -> list[Change]:
    """The changes a ``git diff-tree`` or ``diff-index`` with :data:`DIFF_ARGS` printed."""
    fields = os.fsdecode(out).split("\0")
    raw: list[tuple[str, str, str, str | None]] = []  # status, modes, path, old path
    counts: dict[str, tuple[int | None, int | None]] = {}
    i = 0
    while i < len(fields) and fields[i]:
        field = fields[i]
        if field.startswith(":"):
            parts = field[1:].split()
            status = parts[4][0]
            if status in "RC":
                raw.append((status, parts[0] + parts[1], fields[i + 2], fields[i + 1]))
                i += 3
            else:
                raw.append((status, parts[0] + parts[1], fields[i + 1], None))
                i += 2
            continue
        added, removed, path = field.split("\t", 2)
        if not path:  # a rename: the two paths follow
            path = fields[i + 2]
            i += 3
        else:
            i += 1
        counts[path] = (_count(added), _count(removed))
    found: list[Change] = []
    for status, modes, path, old in raw:
        kind = _KINDS.get(status, "modified")
        if kind == "modified" and modes[:6] != modes[6:] and counts.get(path) == (0, 0):
            kind = "mode"
        add, rem = counts.get(path, (None, None))
        found.append(Change(path, kind, add, rem, old))
    return found


def patch(git: Git, before: str, after: str, paths: Sequence[str] = ()) -> str:
    """The unified diff from ``before`` to ``after`` (only ``paths`` when given). Binary
    and hash-recorded files show as "Binary files differ"; the text is the files' own,
    untrusted: show it through the terminal sanitizer."""
    args = ["diff-tree", "-r", "-p", "-M", "--no-color", "--no-ext-diff", before, after]
    if paths:
        args += ["--", *paths]
    return _say_stand_ins(git, git.run(args).decode(errors="replace"))


def _say_stand_ins(git: Git, text: str) -> str:
    """``text`` with a line after each "Binary files … differ" saying what the stand-in of
    the file recorded by hash holds (the new one; the old one for a deleted file): "too big
    to record" for a file over the hashing limit."""
    lines = text.split("\n")
    wanted: list[tuple[int, str]] = []  # line of "Binary files", blob id of the stand-in
    blobs: tuple[str, ...] = ()
    for n, line in enumerate(lines):
        if line.startswith("index "):
            blobs = tuple(line.split()[1].split(".."))
        elif line.startswith("Binary files ") and len(blobs) == 2:
            blob = blobs[1] if blobs[1].strip("0") else blobs[0]
            wanted.append((n, blob))
            blobs = ()
    if not wanted:
        return text
    said = _stand_ins(git, [blob for _, blob in wanted])
    for n, blob in reversed(wanted):
        if (words := said.get(blob)) is not None:
            lines.insert(n + 1, f"({words})")
    return "\n".join(lines)


def _stand_ins(git: Git, blobs: list[str]) -> dict[str, str]:
    """What each of ``blobs`` (ids, maybe abbreviated) says as a stand-in, where it is one."""
    names = sorted(set(blobs))
    out = git.run(["cat-file", "--batch"], stdin="".join(f"{b}\n" for b in names).encode())
    said: dict[str, str] = {}
    at = 0
    for name in names:  # "<id> blob <size>\n<content>\n", or "<name> missing\n"
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) != 3:
            continue
        size = int(header[2])
        if (words := stubs.describe(out[at : at + size])) is not None:
            said[name] = words
        at += size + 1
    return said


def _count(text: str) -> int | None:
    return None if text == "-" else int(text)
