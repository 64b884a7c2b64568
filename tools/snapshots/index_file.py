"""A shadow index written straight from what a first snapshot read: each file's stat (taken
from the descriptor its content was read through) and its blob's id.

``git update-index --add`` would read and hash every file again to learn the same, about a
third of the time of a first snapshot of many small files. The file is what git writes
(format version 4: paths prefix-compressed, :data:`tools.snapshots.creation.TUNING`), the stat
fields filled as git fills them, so a later ``git diff-files`` finds each file unchanged
without reading it; a file changed since it was read has another stat, and git looks at it
again (a change within the same clock tick as the index is caught by git's own "racily
clean" check, as for an index git wrote). Git adds its split-index and untracked-cache
parts the next time it writes the index (the snapshot's ``write-tree``).

Only for a repository with no index yet: the caller writes the rest (links, files that
``.gitattributes`` converts, files recorded by hash) through git afterwards.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import struct
from pathlib import Path

_FIXED = struct.Struct(">10I20sH")  # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size
_WORD = 0xFFFFFFFF
_NAME_MAX = 0xFFF  # longer names are stored in full, the flags saying 0xFFF
_BILLION = 1_000_000_000


Entry = tuple[bytes, bytes]
"""One regular file: its path (bytes, relative) and :func:`packed` (its stat and blob id)."""


def blob_id(data: bytes) -> bytes:
    """The id git gives a blob holding ``data``."""
    digest = hashlib.sha1(b"blob %d\0" % len(data))  # git's object id
    digest.update(data)
    return digest.digest()


def packed(path: bytes, st: os.stat_result, blob: bytes) -> bytes:
    """The fixed part of the entry of the regular file ``path``: its stat ``st`` (taken
    when its content was read) as git fills it, and its blob's id."""
    ctime_s, ctime_ns = divmod(st.st_ctime_ns, _BILLION)
    mtime_s, mtime_ns = divmod(st.st_mtime_ns, _BILLION)
    return _FIXED.pack(
        ctime_s & _WORD,
        ctime_ns,
        mtime_s & _WORD,
        mtime_ns,
        st.st_dev & _WORD,
        st.st_ino & _WORD,
        0o100755 if st.st_mode & stat.S_IXUSR else 0o100644,  # as git records a file
        st.st_uid & _WORD,
        st.st_gid & _WORD,
        st.st_size & _WORD,
        blob,
        min(len(path), _NAME_MAX),
    )


def encode(entries: list[Entry]) -> bytes:
    """The index file holding ``entries`` (any order; each path once, no path both a file
    and a folder). Each name is written whole (version 4 allows it: git compresses the
    names again when it next writes the index)."""
    ordered = sorted(entries)
    parts = [b"DIRC" + struct.pack(">II", 4, len(ordered))]
    varint = _varint
    previous = 0
    for path, fixed in ordered:
        parts.append(fixed + varint(previous) + path + b"\0")  # drop all of the last name
        previous = len(path)
    body = b"".join(parts)
    return body + hashlib.sha1(body).digest()  # git's own checksum


def write(git_dir: Path, data: bytes) -> None:
    """Write ``data`` (:func:`encode`) as the index of ``git_dir``, through git's lock file
    (another git writing it meanwhile fails one of the two; none sees half a file).

    Raises:
        FileExistsError: the index is locked (another git writes it).
        OSError: it could not be written.
    """
    lock = git_dir / "index.lock"
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(lock, git_dir / "index")
    except BaseException:
        lock.unlink(missing_ok=True)
        raise


@functools.cache
def _varint(value: int) -> bytes:
    """``value`` as git's index version 4 writes a length (``encode_varint``)."""
    out = [value & 127]
    value >>= 7
    while value:
        value -= 1
        out.append(128 | (value & 127))
        value >>= 7
    return bytes(reversed(out))
