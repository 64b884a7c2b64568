"""reefline's own file work in places a command can reshape, done relative to held folders.

A sandboxed command can write the working directory (``workspace-write``) and the folder its
shell records its working directory in; what it leaves running may go on reshaping them
while reefline works there (a restore, the first snapshot, a spill file). A path is looked
up anew at every use, so "check the path, then use the path" loses to a command that swaps
a folder for a symlink in between: reefline would write, read or delete outside the place
it meant. So every operation here is relative to a *directory descriptor*:

- a folder is opened one component at a time from a folder already held (the root from
  ``/``), each step ``O_DIRECTORY | O_NOFOLLOW`` on one plain name: a symlink (or a file)
  where a folder should be makes the open fail (``ELOOP``/``ENOTDIR``), it is never
  followed, and what a command does to the path afterwards does not change which folder
  the descriptor is. (``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` would do the walk
  in one call; Python has no binding for it, and the walk gives the same guarantee.)
- a missing folder is made by name in the folder held (``mkdirat``), then opened the same
  way; a file is created only new (``O_EXCL | O_NOFOLLOW``: a name already taken, by a
  link or anything else, is never opened for writing), renamed within one held folder
  (``renameat``), removed with ``unlinkat`` (a planted link itself, never its target);
- a file is read only when it is a regular file (``O_NOFOLLOW | O_NONBLOCK``, then
  ``fstat``: a FIFO cannot hang reefline, a device cannot feed it forever) and never more
  than a limit the caller gives.

Every name handed to this module is one plain component (no ``/``, not ``.`` or ``..``);
a relative path is given as its parts.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How every folder on a way is opened: a folder, never through a link."""
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""How a file is opened for reading: never through a link, never blocking (then fstat:
regular files only)."""


class NotAFolder(OSError):
    """A symlink, a file or something else stands where a folder should be."""


def plain(name: str) -> str:
    """``name`` when it is one plain component.

    Raises:
        ValueError: it is empty, ``.``, ``..`` or holds a ``/``.
    """
    if not name or "/" in name or name in (".", "..") or "\0" in name:
        raise ValueError(f"not a plain file name: {name!r}")
    return name


def open_root(path: str | Path) -> int:
    """A descriptor of the folder at absolute ``path``, every component opened without
    following a link (the caller closes it).

    Raises:
        NotAFolder: a component is a symlink or not a folder.
        OSError: a component is missing or cannot be opened.
    """
    parts = Path(os.path.abspath(path)).parts[1:]
    fd = os.open("/", DIR_FLAGS)
    try:
        return _walk(fd, parts, create=None)
    except NotAFolder as exc:
        raise NotAFolder(exc.errno, f"{path}: {exc.strerror}") from None


def open_folder(root: int, parts: Sequence[str], *, create: int | None = None) -> int:
    """A descriptor of the folder ``parts`` beneath the held folder ``root`` (``root``
    stays open; the caller closes the one returned). ``create``: the mode to make a
    missing folder with (None: a missing one is an error).

    Raises:
        NotAFolder: a component is a symlink or not a folder (named in the message).
        ValueError: a part is not a plain name.
        OSError: a component is missing (``FileNotFoundError``) or cannot be made or opened.
    """
    return _walk(os.dup(root), [plain(p) for p in parts], create=create)


@contextlib.contextmanager
def folder(root: int, parts: Sequence[str], *, create: int | None = None) -> Iterator[int]:
    """:func:`open_folder`, closed on leaving."""
    fd = open_folder(root, parts, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def _walk(fd: int, parts: Sequence[str], *, create: int | None) -> int:
    """Open ``parts`` one by one from ``fd`` (taken: closed on the way, or returned)."""
    done: list[str] = []
    try:
        for part in parts:
            try:
                nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if create is None:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, create, dir_fd=fd)
                nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
            done.append(part)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            where = "/".join([*done, part])
            raise NotAFolder(exc.errno, f"{where} is a symlink or not a folder now") from None
        raise
    return fd


def lstat(folder_fd: int, name: str) -> os.stat_result | None:
    """What is at ``name`` in the folder (a link is not followed); None when nothing is."""
    try:
        return os.stat(plain(name), dir_fd=folder_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def create(folder_fd: int, name: str, mode: int = 0o600) -> IO[bytes]:
    """A new file ``name`` in the folder, open for writing (``mode`` as the umask allows).

    Raises:
        FileExistsError: the name is taken (by anything: it is never opened).
    """
    return os.fdopen(os.open(plain(name), _NEW, mode, dir_fd=folder_fd), "wb")


def read_regular(folder_fd: int, name: str, limit: int) -> bytes | None:
    """At most ``limit`` bytes of regular file ``name`` in the folder; None when it is
    missing, unreadable or not a regular file (a symlink, a FIFO, a device)."""
    try:
        fd = os.open(plain(name), READ_FLAGS, dir_fd=folder_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = limit
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


_APPEND = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def append_line(folder_fd: int, name: str, line: str, mode: int = 0o644) -> None:
    """Add ``line`` (and a newline) at the end of the regular file ``name`` in the folder,
    made when missing (``mode`` as the umask allows); a file that does not end with a
    newline gets one first, so the line stands on its own.

    Raises:
        OSError: ``name`` is a symlink (``ELOOP``: never followed), not a regular file (a
            FIFO, a folder: ``EINVAL``/``EISDIR``), or cannot be opened or written.
    """
    fd = os.open(plain(name), _APPEND, mode, dir_fd=folder_fd)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise OSError(errno.EINVAL, f"{name} is not a regular file")
        end = found.st_size
        lead = b"" if end == 0 or os.pread(fd, 1, end - 1) == b"\n" else b"\n"
        data = memoryview(lead + line.encode() + b"\n")
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


@contextlib.contextmanager
def regular_beneath(root: str | Path, parts: Sequence[str]) -> Iterator[IO[bytes] | None]:
    """The regular file ``root/parts…`` open for reading (the caller bounds what it reads),
    no component followed through a link, opened without blocking; None when anything on
    the way is missing, a link, not a folder, or the file is not a regular file."""
    try:
        top = open_root(root)
    except OSError:
        yield None
        return
    fd: int | None = None
    try:
        with folder(top, parts[:-1]) as here:
            fd = os.open(plain(parts[-1]), READ_FLAGS, dir_fd=here)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            fd = None
    except (OSError, ValueError, IndexError):
        if fd is not None:
            os.close(fd)
        fd = None
    finally:
        os.close(top)
    if fd is None:
        yield None
        return
    with os.fdopen(fd, "rb") as f:
        yield f


def read_beneath(root: str | Path, parts: Sequence[str], limit: int) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``root/parts…``, no component followed
    through a link; None when anything on the way is missing, a link, not a folder, or the
    file is not a regular file."""
    try:
        top = open_root(root)
    except OSError:
        return None
    try:
        with folder(top, parts[:-1]) as here:
            return read_regular(here, parts[-1], limit)
    except (OSError, ValueError):
        return None
    finally:
        os.close(top)


def replace(folder_fd: int, source: str, target: str) -> None:
    """Rename ``source`` to ``target``, both in the held folder (atomic, replacing)."""
    os.replace(plain(source), plain(target), src_dir_fd=folder_fd, dst_dir_fd=folder_fd)


def symlink(folder_fd: int, target: str, name: str) -> None:
    """Make ``name`` in the folder a symlink to ``target`` (which is not looked at)."""
    os.symlink(target, plain(name), dir_fd=folder_fd)


def unlink(folder_fd: int, name: str) -> None:
    """Remove the entry ``name`` (a link itself, never what it points to).

    Raises:
        IsADirectoryError: a folder is there.
        FileNotFoundError: nothing is.
    """
    os.unlink(plain(name), dir_fd=folder_fd)


def remove(folder_fd: int, name: str) -> None:
    """Remove ``name`` whatever it is (a folder with what it holds, through the held
    folder); a missing one, or one that cannot be removed, is left."""
    try:
        unlink(folder_fd, name)
    except IsADirectoryError:
        shutil.rmtree(plain(name), dir_fd=folder_fd, ignore_errors=True)
    except OSError:
        pass
