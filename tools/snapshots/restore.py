"""Putting paths back as a snapshot recorded them, never writing outside the working tree.

A restore first snapshots the working directory as it is (so the restore itself can be
undone), then, for each path, compares what is there with what reefline last recorded
there: a file changed outside reefline since is left as it is and reported, never
overwritten. A path is written only when every folder on its way is a real folder inside
the working directory (a symlink on the way is not followed); a recorded symlink is made as
a link; a file recorded by hash only (binary, too large) cannot be put back and is
reported.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

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
    for path in paths:
        if path in report.refused or wanted.get(path) == now.get(path):
            continue
        why = _put(repo.work_tree, path, wanted.get(path), blobs)
        if why is None:
            report.restored.append(path)
        else:
            report.refused[path] = why
    if report.restored:
        report.after = repo.snapshot()
    return report


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


def _put(top: Path, path: str, entry: Entry, blobs: Mapping[str, bytes]) -> str | None:
    """Make ``path`` hold ``entry`` (None: remove it); None when done, else why not."""
    rel = PurePosixPath(path)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        return "outside the working directory; not written"
    folder = _real_folder(top, rel.parts[:-1], create=entry is not None)
    if isinstance(folder, str):
        return folder
    target = folder / rel.name
    try:
        st: os.stat_result | None = os.lstat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        return f"cannot look at it: {exc.strerror}"
    if st is not None and stat.S_ISDIR(st.st_mode):
        return "a folder is there now; left as it is"
    if entry is not None and entry[0] != "120000" and stubs.is_stand_in(blobs[entry[1]]):
        return "recorded by hash only (binary, or over 1 MiB): its content was not kept"
    try:
        if entry is None:
            if st is not None:
                os.unlink(target)
            return None
        mode, blob = entry
        data = blobs[blob]
        temp = folder / f".{rel.name}.reefline-restore"
        if os.path.lexists(temp):
            os.unlink(temp)
        if mode == "120000":
            os.symlink(os.fsdecode(data), temp)
        else:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(temp, flags, 0o755 if mode == "100755" else 0o644)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        os.replace(temp, target)
    except OSError as exc:
        return f"could not be written: {exc.strerror or exc}"
    return None


def _real_folder(top: Path, parts: tuple[str, ...], *, create: bool) -> Path | str:
    """``top/parts`` when every folder on the way is a real folder (made when missing and
    ``create``); else why not."""
    here = top
    for part in parts:
        here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            if not create:
                return here  # nothing there to remove
            try:
                os.mkdir(here, 0o755)
            except OSError as exc:
                return f"cannot make its folder: {exc.strerror}"
            continue
        except OSError as exc:
            return f"cannot look at its folder: {exc.strerror}"
        if stat.S_ISLNK(st.st_mode):
            return f"{here.relative_to(top)} is a symlink now; not followed"
        if not stat.S_ISDIR(st.st_mode):
            return f"{here.relative_to(top)} is not a folder now"
    return here
