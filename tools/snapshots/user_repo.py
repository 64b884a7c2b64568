"""What reefline reads of the user's own repository: only ``.git/info/exclude``, so the
snapshots leave out what the user's git leaves out.

The working directory is the model's to shape: ``.git/info/exclude`` may be a FIFO (a plain
read would block forever), a link to ``/dev/zero`` (one that never ends) or to a private file
outside (copied into the shadow repository), and so may ``.git`` or ``.git/info``. So it is
read through :mod:`tools.beneath`: only a regular file, no component of the path followed
through a link, and at most :data:`EXCLUDE_LIMIT` bytes. A longer file (no real one is) has
its first :data:`EXCLUDE_LIMIT` bytes used, up to the last whole line, and the rest ignored:
a pattern left out makes the snapshots record more files, never fewer.
"""

from __future__ import annotations

from pathlib import Path

from tools import beneath

EXCLUDE_LIMIT = 64 * 1024
"""The most of ``.git/info/exclude`` read, in bytes."""


def user_excludes(work_tree: Path) -> str:
    """The patterns of ``work_tree/.git/info/exclude`` (see the module docstring); "" when
    it is missing or is not a regular file reached without a link."""
    data = beneath.read_beneath(work_tree, (".git", "info", "exclude"), EXCLUDE_LIMIT + 1)
    if not data:
        return ""
    if len(data) > EXCLUDE_LIMIT:
        data = data[:EXCLUDE_LIMIT].rpartition(b"\n")[0]
    return data.decode(errors="replace")
