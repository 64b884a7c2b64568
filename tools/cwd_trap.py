"""Where the shell ended up: the EXIT trap that records a command's last working directory
in a file, and reading that file back, so that a ``cd`` in one call sticks for the next.

The trap uses builtins only and writes the file only when the directory changed: that keeps
a call close to a bare spawn. It shares the first line with the command so bash's error line
numbers still match. Inside a sandbox the file must be writable (:mod:`tools.bwrap` binds
it); the paths are the same inside and out.
"""

from __future__ import annotations

import os
import shlex
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
    removed. None: no ``cd``, an empty file, or the command was killed before its trap."""
    try:
        text = cwd_file.read_text(errors="surrogateescape").removesuffix("\n")
        cwd_file.unlink()
    except OSError:
        return None
    return Path(text) if text and os.path.isdir(text) else None
