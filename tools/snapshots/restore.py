"""Putting paths back as a snapshot recorded them, never writing outside the working tree.

A restore first snapshots the working directory as it is (so the restore itself can be
undone), then, for each path, compares what is there with what reefline last recorded
there: a file changed outside reefline since is left as it is and reported, never
overwritten. A path is written only through descriptors (:mod:`tools.beneath`): the working
directory is opened once, each folder on the way is opened from the one before without
following a link (a symlink on the way is refused, never followed), and the file is made
new and renamed into place within the folder held, so a process swapping a folder for a
symlink meanwhile can make a path fail, never move a write outside the working directory.
A recorded symlink is made as a link; a file recorded by hash only (binary, too large)
cannot be put back and is reported. The front ends run a restore only once the session's
sandbox, and everything its commands left running there, is gone.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from tools import beneath
from tools.snapshots import stubs
from tools.snapshots.git import Git
from tools.snapshots.shadow import ShadowRepo

Entry = tuple[str, str] | None
"""A path in a snapshot: (mode, blob id), or None when it is not there."""


@dataclass
class RestoreReport:
    """What a restore did: ``before`` is the snapshot taken first (restore it to undo),
    ``after`` the one taken last; ``restored`` the paths written or removed; ``refused``
    each path left alone with why."""

    before: str
    after: str
    restored: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


def restore(
    repo: ShadowRepo, targets: Mapping[str, str], expected: Mapping[str, str]
) -> RestoreReport:
    """Put each path of ``targets`` back as the snapshot it maps to holds it, unless it is
    no longer as snapshot ``expected[path]`` holds it (changed outside reefline since).

    Raises:
        tools.snapshots.shadow.SnapshotUnavailable: no snapshot could be taken first.
    """
    current = repo.snapshot()
    report = RestoreReport(before=current, after=current)
    paths = sorted(targets)
    now = _entries(repo.git, current, paths)
    wanted: dict[str, Entry] = {}
    for tree in {*targets.values(), *expected.values()}:
        chosen = [p for p in paths if targets[p] == tree or expected.get(p) == tree]
        found = _entries(repo.git, tree, chosen)
        for p in chosen:
            if targets[p] == tree:
                wanted[p] = found.get(p)
            if expected.get(p) == tree and found.get(p) != now.get(p):
                report.refused[p] = "changed outside reefline since; left as it is"
    blobs = _blobs(repo.git, {e[1] for p, e in wanted.items() if e and p not in report.refused})
    todo = [p for p in paths if p not in report.refused and wanted.get(p) != now.get(p)]
    if todo:
        _put_all(repo.work_tree, todo, wanted, blobs, report)
    if report.restored:
        report.after = repo.snapshot()
    return report


def _put_all(
    work_tree: Path,
    paths: list[str],
    wanted: Mapping[str, Entry],
    blobs: Mapping[str, bytes],
    report: RestoreReport,
) -> None:
    """Put each of ``paths`` back, beneath the working directory opened once."""
    try:
        top = beneath.open_root(work_tree)
    except OSError as exc:
        for path in paths:
            report.refused[path] = f"cannot open the working directory: {exc.strerror or exc}"
        return
    try:
        for path in paths:
            why = _put(top, path, wanted.get(path), blobs)
            if why is None:
                report.restored.append(path)
            else:
                report.refused[path] = why
    finally:
        os.close(top)


def _entries(git: Git, tree: str, paths: list[str]) -> dict[str, Entry]:
    if not paths:
        return {}
    out = git.run(["ls-tree", "-r", "-z", "--full-tree", tree, "--", *paths])
    found: dict[str, Entry] = {}
    for line in os.fsdecode(out).split("\0"):
        if line:
            meta, path = line.split("\t", 1)
            mode, _, blob = meta.split()
            found[path] = (mode, blob)
    return found


def _blobs(git: Git, ids: set[str]) -> dict[str, bytes]:
    if not ids:
        return {}
    order = sorted(ids)
    out = git.run(["cat-file", "--batch"], stdin="".join(f"{i}\n" for i in order).encode())
    blobs: dict[str, bytes] = {}
    at = 0
    for blob in order:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        blobs[blob] = out[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
    return blobs


def _put(top: int, path: str, entry: Entry, blobs: Mapping[str, bytes]) -> str | None:
    """Make ``path`` hold ``entry`` (None: remove it) beneath the held working directory
    ``top``; None when done, else why not."""
    rel = PurePosixPath(path)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        return "outside the working directory; not written"
    if entry is not None and entry[0] != "120000" and stubs.is_stand_in(blobs[entry[1]]):
        return "recorded by hash only (binary, or over 1 MiB): its content was not kept"
    try:
        folder = _real_folder(top, rel.parts[:-1], create=entry is not None)
    except FileNotFoundError as exc:
        if entry is None:
            return None  # a folder on the way is missing: nothing there to remove
        return f"cannot open or make its folder: {exc.strerror}"
    except beneath.NotAFolder as exc:
        return f"{exc.strerror}; not followed"
    except OSError as exc:
        return f"cannot open or make its folder: {exc.strerror or exc}"
    try:
        return _put_in(folder, rel.name, entry, blobs)
    finally:
        os.close(folder)


def _put_in(folder: int, name: str, entry: Entry, blobs: Mapping[str, bytes]) -> str | None:
    """:func:`_put` within the held ``folder``: the temporary file is made and renamed there,
    so what happens to the path meanwhile cannot move the write elsewhere."""
    try:
        st = beneath.lstat(folder, name)
    except OSError as exc:
        return f"cannot look at it: {exc.strerror}"
    if st is not None and stat.S_ISDIR(st.st_mode):
        return "a folder is there now; left as it is"
    try:
        if entry is None:
            if st is not None:
                beneath.unlink(folder, name)
            return None
        mode, blob = entry
        data = blobs[blob]
        temp = f".{name}.reefline-restore"
        with contextlib.suppress(FileNotFoundError):
            beneath.unlink(folder, temp)
        if mode == "120000":
            beneath.symlink(folder, os.fsdecode(data), temp)
        else:
            with beneath.create(folder, temp, 0o755 if mode == "100755" else 0o644) as f:
                f.write(data)
        beneath.replace(folder, temp, name)
    except OSError as exc:
        return f"could not be written: {exc.strerror or exc}"
    return None


def _real_folder(top: int, parts: tuple[str, ...], *, create: bool) -> int:
    """A descriptor of the folder ``parts`` beneath ``top``, every folder on the way opened
    without following a link (made when missing and ``create``); the caller closes it.

    Raises:
        beneath.NotAFolder: a symlink or a file stands on the way (named).
        FileNotFoundError: a folder on the way is missing (and not ``create``).
        OSError: a folder could not be made or opened.
    """
    return beneath.open_folder(top, parts, create=0o755 if create else None)
