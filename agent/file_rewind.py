"""Putting files back: folds of the ``tool/result`` snapshot records into what a restore
writes (:mod:`tools.snapshots.restore` does the writing), and the ``files/restore`` event
that says what it did, so that the restore itself can be undone.

A rewind to before seq S puts back every path a command at or after S changed, each as the
snapshot taken before the first such command held it; a path no longer as the snapshot
after the last such command left it was changed outside reefline since, and is left alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from agent.log.events import Event, FilesRestore, ToolResult
from agent.log.files_data import FilesRestoreData
from agent.log.session import Session
from tools.snapshots.restore import RestoreReport, restore
from tools.snapshots.shadow import ShadowRepo


@dataclass(frozen=True)
class Plan:
    """Per path: the snapshot to put it back as, and the one it should still be as."""

    targets: dict[str, str]
    expected: dict[str, str]

    def __bool__(self) -> bool:
        return bool(self.targets)


def plan_rewind(events: Sequence[Event], at_seq: int) -> Plan:
    """What a rewind to before ``at_seq`` puts back (see the module docstring)."""
    targets: dict[str, str] = {}
    expected: dict[str, str] = {}
    for event in events:
        if event.seq < at_seq or not isinstance(event, ToolResult) or not event.data.files:
            continue
        files = event.data.files
        for change in files.changes:
            for path in (change.path, change.old_path):
                if path is not None:
                    targets.setdefault(path, files.before)
                    expected[path] = files.after
    return Plan(targets, expected)


def plan_undo(done: FilesRestore) -> Plan:
    """What undoing the restore ``done`` puts back: the paths it wrote, as they were."""
    restored = done.data.restored
    return Plan({p: done.data.before for p in restored}, {p: done.data.after for p in restored})


def restores(session: Session) -> list[FilesRestore]:
    """The ``files/restore`` events of ``session``, oldest first (each can be undone)."""
    return [e for e in session.events if isinstance(e, FilesRestore)]


async def put_back(
    session: Session,
    repo: ShadowRepo,
    plan: Plan,
    *,
    at_seq: int | None = None,
    undo_of: int | None = None,
) -> RestoreReport:
    """Carry out ``plan`` in ``repo``'s working directory (off the event loop) and log it
    on ``session`` as a ``files/restore``.

    Raises:
        tools.snapshots.shadow.SnapshotUnavailable: the state before could not be recorded
            (nothing was written).
    """
    report = await asyncio.to_thread(restore, repo, plan.targets, plan.expected)
    log_restore(session, report, at_seq=at_seq, undo_of=undo_of)
    return report


def log_restore(
    session: Session, report: RestoreReport, *, at_seq: int | None, undo_of: int | None
) -> None:
    """Log ``report`` on ``session`` as a ``files/restore``."""
    data = FilesRestoreData(
        before=report.before,
        after=report.after,
        restored=report.restored,
        refused=report.refused,
        at_seq=at_seq,
        undo_of=undo_of,
    )
    session.append("files/restore", data.model_dump(exclude_none=True))


def describe(report: RestoreReport) -> str:
    """One paragraph for the person: which files were put back and which were not, why."""
    lines = []
    if report.restored:
        lines.append(f"Put back {len(report.restored)} file(s): " + ", ".join(report.restored))
    else:
        lines.append("No file needed putting back.")
    for path, why in report.refused.items():
        lines.append(f"Not put back: {path} ({why})")
    if report.restored:
        lines.append("/rewind lists this restore: choosing it undoes it.")
    return "\n".join(lines)
