"""Where the shell ended up: the EXIT trap that records a command's last working directory
in a file, and reading that file back, so that a ``cd`` in one call sticks for the next.

The trap uses builtins only and writes the file only when the directory changed: that keeps
a call close to a bare spawn. It shares the first line with the command so bash's error line
numbers still match. Inside a sandbox the file must be writable (:mod:`tools.bwrap` binds
the folder it is in); the paths are the same inside and out.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
from pathlib import Path

_CWD_FILE_VAR = "__reefline_cwd_file"
_START_VAR = "__reefline_start_pwd"


def wrap(command: str, cwd_file: Path) -> str:
    """The script ``bash -c`` runs: ``command`` with the trap recording into ``cwd_file``."""
    return (
        f"{_CWD_FILE_VAR}={shlex.quote(str(cwd_file))}; {_START_VAR}=$PWD; "
        f'trap \'[[ $PWD == "${_START_VAR}" ]] || '
        f'pwd -P 2>/dev/null >"${_CWD_FILE_VAR}"\' EXIT; {command}'
    )


def recorded(cwd_file: Path) -> Path | None:
    """The directory the trap recorded, when it did and it still exists; the file is
    removed. None: no ``cd``, an empty file, the command was killed before its trap, or
    what is there is not a plain file (the command can write where the file lives: a FIFO
    or a symlink put in its place must not block or redirect reefline)."""
    try:
        fd = os.open(cwd_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = os.read(fd, 1 << 16) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        raw = b""
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        cwd_file.unlink()
    text = os.fsdecode(raw).removesuffix("\n")
    return Path(text) if text and os.path.isdir(text) else None
