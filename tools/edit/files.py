"""The edit tool's file work, all of it through :mod:`tools.beneath`: a path the model gave
made into plain components beneath the workspace, the file read (a regular text file within
a size limit, or nothing there), and the new bytes written only while the file still holds
what was read.

Nothing is looked up by path twice: the workspace is opened from ``/`` without following a
link, each folder beneath it the same way, and the file is read and replaced by name in the
held folder (``O_NOFOLLOW``; a new file with ``O_EXCL``). A symlink anywhere on the way, or
at the file itself, makes the edit refuse; nothing outside the workspace is reachable.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tools import beneath

MAX_BYTES = 1_000_000
"""The largest file the edit tool reads or writes."""
NEW_FOLDER_MODE = 0o777
NEW_FILE_MODE = 0o666
"""As most tools make them: the umask takes its part."""


class EditRefused(Exception):
    """The file cannot be edited; the message says why, for the model."""


@dataclass(frozen=True)
class Place:
    """A file beneath the workspace: ``parts`` are plain names, ``shown`` how they read."""

    workspace: Path
    parts: tuple[str, ...]

    @property
    def shown(self) -> str:
        return "/".join(self.parts)


def place(workspace: Path, path: str) -> Place:
    """Where ``path`` (relative to ``workspace``, or absolute inside it) is.

    Raises:
        EditRefused: it is outside the workspace, the workspace itself, or not a file name.
    """
    if "\0" in path:
        raise EditRefused("The path holds a NUL character.")
    normal = os.path.normpath(path)
    if os.path.isabs(normal):
        root = os.path.normpath(workspace)
        if normal != root and not normal.startswith(root.rstrip("/") + "/"):
            raise EditRefused(
                f"{path} is outside the workspace ({workspace}); edit only files inside it."
            )
        normal = os.path.relpath(normal, root)
    if normal == "." or normal == ".." or normal.startswith("../"):
        raise EditRefused(
            f"{path} is outside the workspace ({workspace}) or is not a file; give a file's "
            "path relative to the workspace root."
        )
    return Place(workspace, tuple(normal.split("/")))


def read(where: Place, limit: int = MAX_BYTES) -> bytes | None:
    """The file's bytes, or None when nothing is there (the folders on the way may be
    missing too).

    Raises:
        EditRefused: a link or something not a folder on the way, the file a link, a
            folder or not a regular file, larger than ``limit``, or unreadable.
    """
    try:
        with _folder(where, create=False) as here:
            return _read_in(here, where, limit)
    except FileNotFoundError:
        return None


def _read_in(here: int, where: Place, limit: int) -> bytes | None:
    name = where.parts[-1]
    found = beneath.lstat(here, name)
    if found is None:
        return None
    kind = _kind(found.st_mode)
    if kind is not None:
        raise EditRefused(f"{where.shown} is {kind}; the edit tool changes regular files only.")
    if found.st_size > limit:
        raise EditRefused(
            f"{where.shown} is too large to edit ({found.st_size:,} bytes; the limit is "
            f"{limit:,}): change it with a command instead."
        )
    data = beneath.read_regular(here, name, limit + 1)
    if data is None:
        raise EditRefused(f"{where.shown} cannot be read (it changed while being read, or "
                          "its permissions forbid it).")  # fmt: skip
    if len(data) > limit:
        raise EditRefused(f"{where.shown} grew past the edit limit of {limit:,} bytes.")
    return data


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symlink (never followed)"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file (a FIFO, a socket or a device)"


def text_of(where: Place, data: bytes) -> str:
    """``data`` as text.

    Raises:
        EditRefused: it is binary (a NUL byte) or not UTF-8.
    """
    if b"\0" in data:
        raise EditRefused(f"{where.shown} is a binary file (it holds NUL bytes); not edited.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EditRefused(
            f"{where.shown} is not UTF-8 text (byte {exc.start}): binary or another encoding; "
            "not edited."
        ) from None


def write(where: Place, expected: bytes | None, new: bytes) -> None:
    """Write ``new`` as the file, provided it still holds ``expected`` (None: that nothing is
    there, and the edit creates it, with any missing folder).

    An existing file is replaced by a new one written beside it and renamed over it (its
    permission bits kept), so a reader never sees half of it; what is checked is the file's
    content just before the rename.

    Raises:
        EditRefused: the file changed since it was read (nothing is written), or a link or
            something not a folder stands on the way now, or the write failed.
    """
    try:
        with _folder(where, create=expected is None) as here:
            if expected is None:
                _create(here, where, new)
            else:
                _replace(here, where, expected, new)
    except EditRefused:
        raise
    except FileNotFoundError:
        raise EditRefused(
            f"{where.shown} or a folder on its way was removed since the diff was shown; "
            "nothing was written."
        ) from None
    except OSError as exc:
        raise EditRefused(f"Could not write {where.shown}: {exc.strerror or exc}.") from None


def _create(here: int, where: Place, new: bytes) -> None:
    name = where.parts[-1]
    try:
        out = beneath.create(here, name, NEW_FILE_MODE)
    except FileExistsError:
        raise EditRefused(
            f"{where.shown} appeared since the diff was shown; nothing was written. Read it "
            "and edit it instead."
        ) from None
    with out:
        out.write(new)


def _replace(here: int, where: Place, expected: bytes, new: bytes) -> None:
    name = where.parts[-1]
    temporary = f".{name[:200]}.reefline-edit-{secrets.token_hex(4)}"
    mode = beneath.lstat(here, name)
    with beneath.create(here, temporary) as out:
        out.write(new)
        if mode is not None and stat.S_ISREG(mode.st_mode):
            os.fchmod(out.fileno(), stat.S_IMODE(mode.st_mode))
    try:
        # Read as the first read was (a regular file, no link), a byte more than expected.
        if beneath.read_regular(here, name, len(expected) + 1) != expected:
            raise EditRefused(
                f"{where.shown} changed since the diff was shown; nothing was written. Read "
                "it again and make the edit anew."
            )
        beneath.replace(here, temporary, name)
    except BaseException:
        with contextlib.suppress(OSError):
            beneath.unlink(here, temporary)
        raise


@contextlib.contextmanager
def _folder(where: Place, *, create: bool) -> Iterator[int]:
    """The held folder of the file (made when missing and ``create``)."""
    try:
        top = beneath.open_root(where.workspace)
    except beneath.NotAFolder as exc:
        raise EditRefused(f"The workspace cannot be opened safely: {exc.strerror}.") from None
    try:
        try:
            fd = beneath.open_folder(
                top, where.parts[:-1], create=NEW_FOLDER_MODE if create else None
            )
        except beneath.NotAFolder as exc:
            raise EditRefused(
                f"{where.shown}: {exc.strerror} (a symlink is never followed); not edited."
            ) from None
        except ValueError:
            raise EditRefused(f"{where.shown} is not a plain path.") from None
    finally:
        os.close(top)
    try:
        yield fd
    finally:
        os.close(fd)
