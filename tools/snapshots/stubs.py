"""Files recorded by hash: binary files and files over :data:`SIZE_CAP`.

Such a file is in a snapshot as a small stand-in blob (its SHA-256 and size), marked
assume-unchanged in the shadow index so that git never reads it again; the shadow
repository checks its stat itself (:mod:`tools.snapshots.shadow`). The stand-in holds a NUL
byte, so git counts it binary: a diff shows "binary" for it, never its text.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

from tools.snapshots.git import Git

SIZE_CAP = 1024 * 1024
"""Files larger than this are recorded by hash, not content."""
SNIFF = 8000
"""Bytes looked at for a NUL, as git does to call a file binary."""
MARK = b"reefline snapshot: content not stored\0\n"


def by_hash(path: Path, st: os.stat_result) -> bool:
    """Whether the regular file ``path`` (lstat ``st``) is recorded by hash."""
    if st.st_size > SIZE_CAP:
        return True
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        return b"\0" in f.read(SNIFF)


def stand_in(sha256: str, size: int) -> bytes:
    return MARK + f"sha256 {sha256}\nsize {size}\n".encode()


def is_stand_in(blob: bytes) -> bool:
    return blob.startswith(MARK)


def file_sha256(path: Path) -> str | None:
    """The SHA-256 of the regular file at ``path`` (not following a link), or None."""
    digest = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def record(git: Git, work_tree: Path, files: dict[str, os.stat_result]) -> None:
    """Put a stand-in for each of ``files`` (path: its lstat) in the shadow index."""
    entries: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(dir=git.git_dir) as tmp:
        for n, (path, st) in enumerate(files.items()):
            sha = file_sha256(work_tree / path) or "unreadable"
            Path(tmp, str(n)).write_bytes(stand_in(sha, st.st_size))
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
    paths = b"".join(os.fsencode(path) + b"\0" for _, path in entries)
    git.run(["update-index", "-z", "--assume-unchanged", "--stdin"], stdin=paths)
