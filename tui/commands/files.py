"""The front ends' file actions, a few lines each over :mod:`agent.file_rewind` and
:mod:`tools.snapshots`: put files back after a rewind, undo that, show a command's diff."""

from __future__ import annotations

import asyncio

from agent.file_diff import load_patch
from agent.file_rewind import describe, plan_rewind, plan_undo, put_back, restores
from agent.log.events import FilesRestore, ToolResult
from agent.log.files_data import FilesData
from tools.snapshots.git import GitError
from tools.snapshots.shadow import ShadowRepo, SnapshotUnavailable
from tui.commands.effects import Level, Said, ShowDiff
from tui.runtime.runtime import Runtime

REWIND_CHOICES = ("conversation only", "conversation and files")
"""What ``/rewind`` asks, in this order (the second puts files back too)."""


def shadow_of(runtime: Runtime) -> ShadowRepo | None:
    """The runtime's shadow repository (None: no snapshots here, e.g. git is missing)."""
    recorder = runtime.bash.snapshots
    return None if recorder is None else recorder.repo


async def end_sandbox(runtime: Runtime) -> str:
    """End ``runtime``'s sandbox and wait until every process in it is gone (a restore
    runs only then: nothing a command left running can reshape the tree while files are
    put back); a line saying so when one was running, else ""."""
    if not await asyncio.to_thread(runtime.bash.close):
        return ""
    return "The sandbox was ended first, with everything its commands left running.\n"


async def restore_files(old: Runtime, new: Runtime, at_seq: int) -> tuple[str, Level]:
    """Put back what ``old``'s commands from ``at_seq`` on changed, logged on ``new``'s
    session, once ``old``'s sandbox is gone; (what to say, its level)."""
    repo = shadow_of(new)
    if repo is None:
        return "Files not put back: there are no snapshots here (git is missing).", "warning"
    plan = plan_rewind(old.session.events, at_seq)
    if not plan:
        return "No command changed a file after that point: no file to put back.", "info"
    ended = await end_sandbox(old)
    try:
        report = await put_back(new.session, repo, plan, at_seq=at_seq)
    except SnapshotUnavailable as exc:
        return f"{ended}Files not put back: {exc}", "error"
    return ended + describe(report), "warning" if report.refused else "info"


async def undo_restore(runtime: Runtime, done: FilesRestore) -> tuple[str, Level]:
    """Undo the file restore ``done`` (listed by ``/rewind``); (what to say, its level)."""
    repo = shadow_of(runtime)
    if repo is None:
        return "Cannot undo: there are no snapshots here (git is missing).", "warning"
    ended = await end_sandbox(runtime)
    try:
        report = await put_back(runtime.session, repo, plan_undo(done), undo_of=done.seq)
    except SnapshotUnavailable as exc:
        return f"{ended}Cannot undo: {exc}", "error"
    return f"{ended}Undone. " + describe(report), "warning" if report.refused else "info"


def undoable(runtime: Runtime) -> list[FilesRestore]:
    """The file restores of this session that wrote something, oldest first."""
    return [e for e in restores(runtime.session) if e.data.restored]


def last_changed(runtime: Runtime) -> FilesData | None:
    """The snapshot record of the newest command that changed files (None: none did)."""
    for event in reversed(runtime.session.events):
        if isinstance(event, ToolResult) and event.data.files and event.data.files.changes:
            return event.data.files
    return None


async def diff_of(runtime: Runtime | None, files: FilesData, title: str) -> ShowDiff | Said:
    """The one way a front end reaches a command's diff (``/diff``, a tool card's ``· diff``):
    the patch of ``files`` (its ``tool/result`` record), secrets masked, made off the event
    loop, to show under ``title``; or what to say when it cannot be read."""
    repo = None if runtime is None else shadow_of(runtime)
    if repo is None:
        return Said("No snapshots here: the diff cannot be shown.")
    try:
        return ShowDiff(title, await load_patch(repo, files))
    except GitError as exc:
        return Said(f"Cannot show the diff: {exc}", "error")
