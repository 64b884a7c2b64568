"""A command's diff as every view shows it: the patch between the snapshots taken around the
command, with every secret masked as it is in the command's output (:mod:`agent.redaction`).

The one road to a patch: the app's diff screen, ``/diff`` in every front end and ``reefline
diff`` all read it here, so none of them can show a key the command wrote into a file. The
patch of a big file is slow to make (git) and long: :func:`load_patch` makes it off the
event loop; :func:`read_patch` is the same work for a caller without one (the shell tool).
"""

from __future__ import annotations

import asyncio

from agent.log.files_data import FilesData
from agent.redaction import redact
from tools.snapshots.changes import patch
from tools.snapshots.shadow import ShadowRepo


def read_patch(repo: ShadowRepo, files: FilesData) -> str:
    """The unified diff of ``files`` (a command's ``tool/result`` record) in ``repo``,
    secrets masked. Blocks on git: on an event loop, use :func:`load_patch`. The text is
    the workspace's own, untrusted: show it through the terminal sanitizer.

    Raises:
        tools.snapshots.git.GitError: git failed (a snapshot removed from the home, say).
    """
    return redact(patch(repo.git, files.before, files.after))


async def load_patch(repo: ShadowRepo, files: FilesData) -> str:
    """:func:`read_patch`, run in a worker thread so that the event loop goes on."""
    return await asyncio.to_thread(read_patch, repo, files)
