"""A folder reefline keeps its own files in, worked on only through a checked descriptor.

A sandboxed command can write some folders reefline also uses (the folder its shell records
its working directory in), and in ``workspace-write`` it can reshape the working directory,
which may hold reefline's home. A path is looked up anew at every use, so a command that
plants a symlink, or swaps a folder for one, could make reefline write, truncate or delete a
file it never meant to (``~/.ssh/authorized_keys``). Hence the rules here:

- the folder is opened once, on first use, by walking its real path one component at a time
  without following a symlink (:mod:`tools.beneath`, the one home of these rules), and must
  be a directory of this user that no one else may write; every later operation is relative
  to that descriptor, with one plain name (no ``/``), so nothing a command does to the path
  afterwards changes which folder is meant;
- a file is only ever written when it is created (``O_EXCL``: a name already taken, by a
  symlink, a hard link or anything else, is never opened for writing) and only read when it
  is a regular file (``O_NOFOLLOW``, then checked with ``fstat``); a name is removed with
  ``unlinkat``, which removes a planted link, never what it points to.

The path is still what the model is told: inside the sandbox the folder is at the same path.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import IO

from tools import beneath


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
            try:
                fd = beneath.open_root(os.path.realpath(self.path.parent))
                try:
                    self._fd = _checked(beneath.open_folder(fd, [self.path.name]))
                finally:
                    os.close(fd)
            except beneath.NotAFolder:
                raise UnsafeFolder(
                    f"{self.path}: a symlink or a file stands where a folder should be "
                    "(reefline follows no link to its own folders); remove it and start again"
                ) from None
        return self._fd

    def name_of(self, name: str) -> str:
        """The path of ``name`` in this folder, as the model and the user are told it."""
        return str(self.path / beneath.plain(name))

    def create(self, name: str) -> IO[bytes]:
        """A new file ``name`` (0600) open for writing.

        Raises:
            FileExistsError: the name is taken (by anything: it is never opened).
        """
        return beneath.create(self.fd(), name, 0o600)

    def holds_file(self, name: str) -> bool:
        """Whether ``name`` is a regular file here (a symlink to one is not)."""
        try:
            st = beneath.lstat(self.fd(), name)
        except OSError:
            return False
        return st is not None and stat.S_ISREG(st.st_mode)

    def read(self, name: str, limit: int) -> bytes | None:
        """At most ``limit`` bytes of regular file ``name``; None when it is missing or is not
        a regular file (a FIFO put there must not block reefline, a symlink not redirect it)."""
        try:
            return beneath.read_regular(self.fd(), name, limit)
        except OSError:
            return None

    def remove(self, name: str) -> None:
        """Remove the entry ``name`` (a planted link itself, never its target); a missing
        one is fine. A folder put at the name is removed with what it holds."""
        with contextlib.suppress(OSError):
            beneath.remove(self.fd(), name)

    def child(self, name: str) -> SubFolder:
        """The folder ``name`` inside this one (not opened yet)."""
        return SubFolder(self, beneath.plain(name))

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
            try:
                opened = beneath.open_folder(self._parent.fd(), [self._name], create=0o700)
            except beneath.NotAFolder:
                raise UnsafeFolder(
                    f"{self.path}: a symlink or a file stands where a folder should be; "
                    "remove it and start again"
                ) from None
            self._fd = _checked(opened)
        return self._fd

    def delete(self) -> None:
        """Remove this folder and everything in it (through the parent's descriptor)."""
        self.close()
        self._parent.remove(self._name)


def _checked(fd: int) -> int:
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        raise UnsafeFolder(
            "reefline's output folder is not private to you (another user owns it or may "
            "write it); remove it and start again"
        )
    return fd
