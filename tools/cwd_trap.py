"""Where the shell ended up: the EXIT trap that records a command's last working directory
in a file, and reading that file back, so that a ``cd`` in one call sticks for the next.

The trap uses builtins only and writes the file only when the directory changed: that keeps
a call close to a bare spawn. It shares the first line with the command so bash's error line
numbers still match. Inside a sandbox the file must be writable (:mod:`tools.bwrap` binds
the folder it is in, and only that folder, writable); the paths are the same inside and out.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from tools.spill import SpillFolder

_CWD_FILE_VAR = "__reefline_cwd_file"
_START_VAR = "__reefline_start_pwd"


def wrap(command: str, cwd_file: Path) -> str:
    """The script ``bash -c`` runs: ``command`` with the trap recording into ``cwd_file``."""
    return (
        f"{_CWD_FILE_VAR}={shlex.quote(str(cwd_file))}; {_START_VAR}=$PWD; "
        f'trap \'[[ $PWD == "${_START_VAR}" ]] || '
        f'pwd -P 2>/dev/null >"${_CWD_FILE_VAR}"\' EXIT; {command}'
    )


def recorded(folder: SpillFolder, name: str) -> Path | None:
    """The directory the trap recorded in ``folder``'s file ``name``, when it did and it still
    exists; the file is removed. None: no ``cd``, an empty file, the command was killed
    before its trap, or what is there is not a plain file (the command can write where the
    file lives: a FIFO, a symlink or a folder put in its place must not block, redirect or
    feed reefline; see :mod:`tools.spill`)."""
    raw = folder.read(name, 1 << 16)
    folder.remove(name)
    text = os.fsdecode(raw or b"").removesuffix("\n")
    return Path(text) if text and os.path.isdir(text) else None
