"""``reefline diff`` and ``reefline fork --restore-files``: the snapshot records of a
session's log, from the shell. Thin: the folds are :mod:`agent.file_rewind`'s, the git
work :mod:`tools.snapshots`'."""

from __future__ import annotations

import sys
from pathlib import Path

from agent.file_diff import read_patch
from agent.file_rewind import describe, log_restore, plan_rewind
from agent.log.events import ToolResult, ToolStart
from agent.log.session import Session
from compact.contract.registry import build_registry
from tools.snapshots.git import GitError
from tools.snapshots.restore import restore
from tools.snapshots.shadow import ShadowRepo, SnapshotUnavailable
from tui.exit_codes import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from tui.text import clean, first_line
from tui.view.items import call_subject


def print_diff(session: Session, home: Path, turn: int | None, seq: int | None) -> int:
    """The patch of every command of ``session`` that changed files (only turn ``turn``'s,
    or the one whose ``tool/result`` or ``tool/start`` is at ``seq``)."""
    starts = {e.data.call_id: e for e in session.events if isinstance(e, ToolStart)}
    chosen = []
    for event in session.events:
        if not isinstance(event, ToolResult) or not event.data.files:
            continue
        start = starts.get(event.data.call_id)
        if turn is not None and event.data.turn != turn:
            continue
        if seq is not None and seq not in (event.seq, start.seq if start else None):
            continue
        chosen.append((event, start))
    if seq is not None and not chosen:
        print(f"reefline: seq {seq} is not a command that was snapshotted", file=sys.stderr)
        return EXIT_USAGE
    repo = ShadowRepo(home, Path(session.cwd))
    shown = 0
    for event, start in chosen:
        files = event.data.files
        if files is None or not files.changes:
            continue
        command = first_line(_header(start), 100) if start else event.data.call_id
        print(f"# seq {event.seq} · turn {event.data.turn} · {command}")
        try:
            sys.stdout.write(clean(read_patch(repo, files)))
        except GitError as exc:
            print(f"reefline: cannot show it: {clean(str(exc))}", file=sys.stderr)
            return EXIT_ERROR
        shown += 1
    if not shown:
        print("No command changed a file there.")
    return EXIT_OK


def _header(start: ToolStart) -> str:
    """The call a patch came from: its command (``edit PATH`` for an edit), not its JSON."""
    subject = call_subject(start.data.name, start.data.arguments)
    return subject if start.data.name == "bash" else f"{start.data.name} {subject}"


def restore_for_fork(parent: Session, new_id: str, at_seq: int) -> int:
    """Put back the files the parent's commands from ``at_seq`` on changed, logged on the
    new session ``new_id``; says what was and was not put back."""
    plan = plan_rewind(parent.events, at_seq)
    if not plan:
        print("No command changed a file after that point: no file to put back.", file=sys.stderr)
        return EXIT_OK
    repo = ShadowRepo(parent.home, Path(parent.cwd))
    try:
        report = restore(repo, plan.targets, plan.expected)
    except SnapshotUnavailable as exc:
        print(f"reefline: files not put back: {clean(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    new = Session.open(parent.home, new_id, registry=build_registry())
    try:
        log_restore(new, report, at_seq=at_seq, undo_of=None)
    finally:
        new.close()
    print(clean(describe(report)), file=sys.stderr)
    return EXIT_OK if not report.refused else EXIT_ERROR
