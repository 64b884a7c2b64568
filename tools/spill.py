"""A folder reefline keeps its own files in, worked on only through a checked descriptor.

A sandboxed command can write some folders reefline also uses (the folder its shell records
its working directory in), and in ``workspace-write`` it can reshape the working directory,
which may hold reefline's home. A path is looked up anew at every use, so a command that
plants a symlink, or swaps a folder for one, could make reefline write, truncate or delete a
file it never meant to (``~/.ssh/authorized_keys``). Hence the rules here:

- the folder is opened once, on first use, by walking its real path one component at a time
  without following a symlink, and must be a directory of this user that no one else may
  write; every later operation is relative to that descriptor, with one plain name (no
  ``/``), so nothing a command does to the path afterwards changes which folder is meant;
- a file is only ever written when it is created (``O_EXCL``: a name already taken, by a
  symlink, a hard link or anything else, is never opened for writing) and only read when it
  is a regular file (``O_NOFOLLOW``, then checked with ``fstat``); a name is removed with
  ``unlinkat``, which removes a planted link, never what it points to.

The path is still what the model is told: inside the sandbox the folder is at the same path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from pathlib import Path
from typing import IO

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeFolder(OSError):
    """The folder is not a private directory of this user (or a symlink is on its path)."""


class SpillFolder:
    """A private folder of reefline's at ``path`` (created 0700 when missing, on first use).

    Not thread-safe; one per folder per process is enough (a session's spill folder is shared
    by its bash tool and the pruner, so it is opened before any command of the session runs).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(os.path.abspath(path))
        self._fd: int | None = None

    def fd(self) -> int:
        """The folder's descriptor, opening (and creating) it on first use.

        Raises:
            OSError: it cannot be created or opened; :class:`UnsafeFolder` when what is
                there is not a private directory of this user.
        """
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.path, 0o700)
            self._fd = _open_walking(Path(os.path.realpath(self.path.parent)), self.path.name)
        return self._fd

    def name_of(self, name: str) -> str:
        """The path of ``name`` in this folder, as the model and the user are told it."""
        return str(self.path / _plain(name))

    def create(self, name: str) -> IO[bytes]:
        """A new file ``name`` (0600) open for writing.

        Raises:
            FileExistsError: the name is taken (by anything: it is never opened).
        """
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        return os.fdopen(os.open(_plain(name), flags, 0o600, dir_fd=self.fd()), "wb")

    def holds_file(self, name: str) -> bool:
        """Whether ``name`` is a regular file here (a symlink to one is not)."""
        try:
            st = os.stat(_plain(name), dir_fd=self.fd(), follow_symlinks=False)
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode)

    def read(self, name: str, limit: int) -> bytes | None:
        """At most ``limit`` bytes of regular file ``name``; None when it is missing or is not
        a regular file (a FIFO put there must not block reefline, a symlink not redirect it)."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(_plain(name), flags, dir_fd=self.fd())
        except OSError:
            return None
        try:
            return os.read(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
        except OSError:
            return None
        finally:
            os.close(fd)

    def remove(self, name: str) -> None:
        """Remove the entry ``name`` (a planted link itself, never its target); a missing
        one is fine. A folder put at the name is removed with what it holds."""
        try:
            os.unlink(_plain(name), dir_fd=self.fd())
        except IsADirectoryError:
            shutil.rmtree(_plain(name), dir_fd=self.fd(), ignore_errors=True)
        except OSError:
            pass

    def child(self, name: str) -> SubFolder:
        """The folder ``name`` inside this one (not opened yet)."""
        return SubFolder(self, _plain(name))

    def close(self) -> None:
        """Forget the descriptor; the next use opens the folder again."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


class SubFolder(SpillFolder):
    """A folder inside a :class:`SpillFolder`, made and opened through the parent's
    descriptor (so the parent's path is never walked again)."""

    def __init__(self, parent: SpillFolder, name: str) -> None:
        super().__init__(parent.path / name)
        self._parent = parent
        self._name = name

    def fd(self) -> int:
        if self._fd is None:
            parent = self._parent.fd()
            with contextlib.suppress(FileExistsError):
                os.mkdir(self._name, 0o700, dir_fd=parent)
            self._fd = _checked(os.open(self._name, _DIR, dir_fd=parent))
        return self._fd

    def delete(self) -> None:
        """Remove this folder and everything in it (through the parent's descriptor)."""
        self.close()
        self._parent.remove(self._name)


def _plain(name: str) -> str:
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not a plain file name: {name!r}")
    return name


def _open_walking(parent: Path, name: str) -> int:
    """Open ``parent / name`` as a directory, following no symlink on the way."""
    fd = os.open("/", _DIR)
    try:
        for part in [*parent.parts[1:], name]:
            nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a symlink where a folder should be
            raise UnsafeFolder(
                f"{parent / name}: a symlink or a file stands where a folder should be "
                "(reefline follows no link to its own folders); remove it and start again"
            ) from None
        raise
    return _checked(fd)


def _checked(fd: int) -> int:
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        raise UnsafeFolder(
            "reefline's output folder is not private to you (another user owns it or may "
            "write it); remove it and start again"
        )
    return fd
