"""Keeping the shadow repository packed.

Each snapshot writes a few loose objects (the files a command changed and the folders
holding them), one file and one block on disk each; a first snapshot writes one per folder.
After a snapshot that wrote many (:func:`crowded`, estimated as ``git gc --auto`` does, from
one of the 256 object folders), they are put into one pack and the loose copies removed.
Only loose objects are packed, never an existing pack rewritten: the repository has no refs
(a snapshot is a tree id kept in the session's log), so ``git repack -a`` or ``gc`` would
drop every snapshot but the index's.
"""

from __future__ import annotations

import os
import string
from pathlib import Path

from tools.snapshots.git import Git

LOOSE_MAX = 1024
"""About this many loose objects and they are packed (4 MiB of blocks at most, about)."""
_SAMPLE = "17"  # the folder git's own estimate counts
_HEX = frozenset(string.hexdigits.lower())


def crowded(git_dir: Path) -> bool:
    """Whether the repository likely holds more than :data:`LOOSE_MAX` loose objects."""
    try:
        with os.scandir(git_dir / "objects" / _SAMPLE) as entries:
            count = sum(1 for _ in entries)
    except OSError:
        return False
    return count * 256 > LOOSE_MAX


def loose(git_dir: Path) -> list[str]:
    """The ids of the repository's loose objects."""
    objects = git_dir / "objects"
    ids: list[str] = []
    for high in (f"{n:02x}" for n in range(256)):
        try:
            with os.scandir(objects / high) as entries:
                ids += [high + e.name for e in entries if len(e.name) == 38 and _hexish(e.name)]
        except OSError:
            continue
    return ids


def pack_loose(git: Git) -> int:
    """Put every loose object into one new pack and remove the loose copies; how many."""
    ids = loose(git.git_dir)
    if ids:
        base = str(git.git_dir / "objects" / "pack" / "pack")
        git.run(["pack-objects", "-q", base], stdin="".join(i + "\n" for i in ids).encode())
        git.run(["prune-packed", "-q"])  # only what is now in a pack
    return len(ids)


def _hexish(name: str) -> bool:
    return all(c in _HEX for c in name)
