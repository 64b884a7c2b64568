"""Files recorded by hash: binary files and files over :data:`SIZE_CAP`.

Such a file is in a snapshot as a small stand-in blob (its SHA-256 and size), marked
assume-unchanged in the shadow index so that git never reads it again; its stat when hashed
is noted (:class:`Hashed`, a list kept in the shadow repository) and checked by the next
scan instead (:mod:`tools.snapshots.shadow`). The stand-in holds a NUL
byte, so git counts it binary: a diff shows "binary" for it, never its text.

The work per file is bounded: a file over :data:`HASH_LIMIT` (a sparse 15 TiB one costs no
disk) is never read; its stand-in holds its size, times and inode and says it is too big to
record, so any change of its stat is a change. Only regular files are ever opened, without
following a link and without blocking, and checked again once open (a FIFO or a device put in
a file's place is never read). Hashing gives up at the next chunk when its
:class:`~tools.snapshots.stopping.Stop` is set.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tools import beneath
from tools.snapshots import creation, stopping
from tools.snapshots.git import Git

SIZE_CAP = 1024 * 1024
"""Files larger than this are recorded by hash, not content."""
HASH_LIMIT = 64 * 1024 * 1024
"""Files larger than this are not even hashed (about a tenth of a second of reading)."""
CHUNK = 1 << 20
SNIFF = 8000
"""Bytes looked at for a NUL, as git does to call a file binary."""
MARK = b"reefline snapshot: content not stored\0\n"


def by_hash(path: Path, st: os.stat_result) -> bool:
    """Whether the regular file ``path`` (lstat ``st``) is recorded by hash."""
    if st.st_size > SIZE_CAP:
        return True
    with _open_regular(path) as f:
        return f is not None and b"\0" in f.read(SNIFF)


def stand_in(sha256: str, size: int) -> bytes:
    return MARK + f"sha256 {sha256}\nsize {size}\n".encode()


def too_big(st: os.stat_result) -> bytes:
    """The stand-in of a file over :data:`HASH_LIMIT`: what its stat says, not its content."""
    return (
        MARK
        + (
            f"too big to record (over {HASH_LIMIT // (1024 * 1024)} MiB): not read\n"
            f"size {st.st_size}\nmtime_ns {st.st_mtime_ns}\nctime_ns {st.st_ctime_ns}\n"
            f"inode {st.st_ino}\n"
        ).encode()
    )


def is_stand_in(blob: bytes) -> bool:
    return blob.startswith(MARK)


def describe(blob: bytes) -> str | None:
    """What a stand-in says of its file, in words (None: ``blob`` is no stand-in)."""
    if not is_stand_in(blob):
        return None
    fields = dict(
        line.split(" ", 1)
        for line in blob[len(MARK) :].decode(errors="replace").splitlines()
        if " " in line
    )
    size = fields.get("size", "?")
    if "too" in fields:  # "too big to record (over N MiB): not read"
        return f"too {fields['too']}; size {size} bytes"
    return f"recorded by hash ({size} bytes, sha256 {fields.get('sha256', '?')})"


def file_sha256(path: Path) -> str | None:
    """The SHA-256 of the regular file at ``path`` (not following a link), or None (not a
    regular file, unreadable, or grown past :data:`HASH_LIMIT`).

    Raises:
        tools.snapshots.stopping.Stopped: this thread's stop was set meanwhile.
    """
    stop = stopping.current()
    digest = hashlib.sha256()
    read = 0
    with _open_regular(path) as f:
        if f is None:
            return None
        while chunk := f.read(CHUNK):
            if stop is not None:
                stop.check()
            read += len(chunk)
            if read > HASH_LIMIT:
                return None
            digest.update(chunk)
    return digest.hexdigest()


def record(git: Git, work_tree: Path, files: dict[str, os.stat_result]) -> None:
    """Put a stand-in for each of ``files`` (path: its lstat) in the shadow index; not yet
    marked assume-unchanged (:func:`hide`: once the caller has noted their stat, so that
    one stopped half-way is looked at again)."""
    entries: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(dir=git.git_dir) as tmp:
        for n, (path, st) in enumerate(files.items()):
            if st.st_size > HASH_LIMIT:
                blob = too_big(st)
            else:
                blob = stand_in(file_sha256(work_tree / path) or "unreadable", st.st_size)
            Path(tmp, str(n)).write_bytes(blob)
            mode = "100755" if st.st_mode & stat.S_IXUSR else "100644"
            entries.append((mode, path))
        names = "".join(f"{tmp}/{n}\n" for n in range(len(entries))).encode()
        blobs = git.run(["hash-object", "-w", "--no-filters", "--stdin-paths"], stdin=names)
    ids = blobs.decode().split()
    info = b"".join(
        f"{mode} {blob}\t".encode() + os.fsencode(path) + b"\0"
        for (mode, path), blob in zip(entries, ids, strict=True)
    )
    git.run(["update-index", "-z", "--index-info"], stdin=info)


def hide(git: Git, paths: Iterable[str]) -> None:
    """Mark ``paths`` assume-unchanged: git never reads them again (their stat is ours to
    check)."""
    listed = b"".join(os.fsencode(path) + b"\0" for path in paths)
    git.run(["update-index", "-z", "--assume-unchanged", "--stdin"], stdin=listed)


@dataclass(frozen=True)
class Hashed:
    """A file recorded by hash: its stat when hashed (unchanged stat: same stand-in).
    ``ctime_ns`` -1: noted before ctimes were (a list from an older reefline), so it
    counts as changed once."""

    size: int
    mtime_ns: int
    ino: int
    mode: int
    ctime_ns: int = -1

    @classmethod
    def of(cls, st: os.stat_result) -> Hashed:
        return cls(st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode, st.st_ctime_ns)

    def same(self, st: os.stat_result) -> bool:
        """Whether ``st`` is the stat this file had when hashed."""
        return self == Hashed.of(st)


def read_noted(path: Path) -> dict[str, Hashed]:
    """The files recorded by hash with their stat when hashed, as the list at ``path``
    notes them; empty when there is none or it does not read (each counts as changed once)."""
    try:
        raw = json.loads(path.read_text())
        # Four numbers from an older reefline (no ctime): changed once.
        return {p: Hashed(*v) for p, v in raw.items()}
    except (OSError, ValueError, TypeError):
        return {}


def write_noted(path: Path, hashed: dict[str, Hashed]) -> None:
    """Replace the list at ``path`` with ``hashed`` (a reader sees the old list or the new)."""
    raw = {p: [h.size, h.mtime_ns, h.ino, h.mode, h.ctime_ns] for p, h in hashed.items()}
    tmp = path.with_suffix(".tmp")
    creation.write_private(tmp, json.dumps(raw))
    os.replace(tmp, path)


def _open_regular(path: Path) -> contextlib.AbstractContextManager[IO[bytes] | None]:
    """The file at absolute ``path`` open for reading when it is a regular file, reached
    from ``/`` without following a link on the way (a folder of the working directory
    swapped for one mid-snapshot is not gone through: the working directory is a real
    path) and opened without blocking; None otherwise (:mod:`tools.beneath`)."""
    return beneath.regular_beneath(path.parent, [path.name])
