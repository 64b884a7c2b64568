"""The session's snapshots: the recorder of its folder, its first snapshot begun as soon as
the command line is read.

A large tree's first snapshot takes a second or more (README: Snapshots), and the first
command waits for what is left of it. Begun here, before the model client and the rest of
the session are loaded, it runs while they are: the session's wiring
(:func:`tui.runtime.wiring.build_runtime`) takes it over when the session turns out to work in the
same folder, and closes it otherwise. Only what is known from the command line and the
settings decides: a resumed session's folder is in its log, so it is not begun early.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from agent.log.store import default_home
from tools.snapshots.creation import inside_home
from tools.snapshots.git import git_found
from tools.snapshots.recording import Recorder
from tools.snapshots.shadow import ShadowRepo

if TYPE_CHECKING:
    from agent.settings import Settings
    from tools.base import ApprovalPolicy


def begin_snapshots(
    settings: Settings, *, resuming: bool, default_approve: ApprovalPolicy
) -> Recorder | None:
    """The recorder of the working directory with its first snapshot started, where the
    session will take snapshots (git found, commands not all denied, the folder not in
    reefline's home); None otherwise, or when ``resuming`` (the wiring then decides, and
    says why there are none)."""
    if resuming or (settings.approve or default_approve) == "deny" or git_found() is None:
        return None
    home = settings.home.expanduser() if settings.home else default_home()
    work_dir = Path.cwd().resolve()
    if inside_home(home, work_dir) is not None:
        return None
    recorder = Recorder(ShadowRepo(home, work_dir))
    recorder.start()
    return recorder


def take_over(begun: Recorder | None, work_dir: str) -> Recorder | None:
    """``begun`` when it records ``work_dir``, else None (``begun`` closed: its snapshot
    is of another folder)."""
    if begun is None:
        return None
    if begun.repo.work_tree == Path(os.path.realpath(work_dir)):
        return begun
    begun.close()
    return None


def session_snapshots(
    begun: Recorder | None, home: Path, work_dir: str, notices: list[str]
) -> Recorder | None:
    """The snapshots of ``work_dir`` taken around each command (README: Snapshots): ``begun``
    when it records that folder (:func:`take_over`), else a new recorder; None, with a
    notice saying so, where git is missing or ``work_dir`` is in reefline's home."""
    if (taken := take_over(begun, work_dir)) is not None:
        return taken
    if git_found() is None:
        notices.append(
            "No workspace snapshots: git is not installed, so what commands change is not "
            "shown and /rewind cannot put files back. Install git to have them."
        )
        return None
    if (why := inside_home(home, Path(work_dir))) is not None:
        notices.append(why)
        return None
    return Recorder(ShadowRepo(home, Path(work_dir)))
