"""The shadow repository of one working directory, and its snapshots.

A snapshot is the id of a git tree holding every file of the working directory that its
``.gitignore`` files do not exclude: text files by content, symlinks as links (never
followed), and binary files or files over :data:`SIZE_CAP` by a stand-in blob naming their
SHA-256 and size (:mod:`tools.snapshots.stubs`), so a build artefact costs no space. Only
what changed since the last snapshot is looked at: ``git ls-files`` lists the changed and new
paths, ``git add`` stores them, ``git write-tree`` names the result; an unchanged tree is the
same id, so a command that wrote nothing costs no object. Whether a scan is needed at all
before a command is :mod:`tools.snapshots.recording`'s call (:mod:`tools.snapshots.watch`).

The repository lives in ``<home>/snapshots/<name>-<hash>`` (hidden from sandboxed commands
with the rest of the home); the user's ``.git`` is never written, and of it only
``info/exclude`` is read (:mod:`tools.snapshots.user_repo`); a nested
repository inside the working directory is left out whole, and so is reefline's home. A
working directory that is the home or lies inside it gets no snapshots at all
(:func:`~tools.snapshots.creation.inside_home`): every file of it is the home's, the
shadow repository among them.

A file recorded by hash counts as changed when its size, mtime, ctime, inode or mode
changed: an edit that puts the mtime back still moves the ctime. A snapshot runs in a
thread; a :class:`~tools.snapshots.stopping.Stop` set meanwhile ends it within moments
(:class:`~tools.snapshots.stopping.Stopped`), leaving the shadow index as a later snapshot
can finish.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from tools.snapshots import bulk, creation, packing, stubs
from tools.snapshots.changes import DIFF_ARGS, Change, changes, parse_changes
from tools.snapshots.creation import inside_home, shadow_dir
from tools.snapshots.git import Git, GitError
from tools.snapshots.stopping import Stopped
from tools.snapshots.stubs import Hashed

MAX_FILES = 200_000
"""A working directory with more files than this (``$HOME``, ``/``) gets no snapshots: the
first one would copy all of them."""


class SnapshotUnavailable(RuntimeError):
    """No snapshot could be taken; the message says why (shown once, commands still run)."""


class ShadowRepo:
    """Snapshots of ``work_tree`` kept in a shadow repository under ``home``.

    Thread-safe: one snapshot at a time. The repository is made on the first snapshot.
    """

    def __init__(self, home: Path, work_tree: Path) -> None:
        self.work_tree = Path(os.path.realpath(work_tree))
        self.git_dir = shadow_dir(home, self.work_tree)
        self.git = Git(self.git_dir, self.work_tree)
        self._home = Path(os.path.realpath(home))
        self._lock = threading.Lock()
        self._hashed: dict[str, Hashed] | None = None
        self._last: tuple[str, tuple[int, int, int] | None] | None = None
        self._tuned = False

    @property
    def hashed_file(self) -> Path:
        return self.git_dir / "reefline-hashed.json"

    def prepare(self) -> None:
        """Make the repository if there is none yet (what a watch's git calls need).

        Raises:
            SnapshotUnavailable: git is missing or failed, or the directory is reefline's
                home (or inside it).
            tools.snapshots.stopping.Stopped: this thread's stop was set meanwhile.
        """
        if (why := inside_home(self._home, self.work_tree)) is not None:
            raise SnapshotUnavailable(why)
        with self._lock:
            try:
                self._prepare()
            except GitError as exc:
                raise SnapshotUnavailable(str(exc)) from exc
            except OSError as exc:
                raise SnapshotUnavailable(f"cannot keep snapshots: {exc}") from exc

    def snapshot(
        self,
        only: Collection[str] | None = None,
        *,
        on_listed: Callable[[int], None] | None = None,
    ) -> str:
        """Record the working directory now; the snapshot's id (a git tree id).

        ``only``: the paths (files or folders, relative) that may have changed since the
        last snapshot; only they are looked at, by the same rules, so the id is the one a
        full scan would give when nothing changed elsewhere (what the watch promises).
        ``on_listed`` hears how many paths are to be recorded, once they are listed (on this
        thread).

        Raises:
            SnapshotUnavailable: git is missing or failed, the directory is too large, or
                it is reefline's home (or inside it).
            tools.snapshots.stopping.Stopped: this thread's stop was set meanwhile.
        """
        with self._lock:
            try:
                return self._snapshot(only=only, on_listed=on_listed)[0]
            except GitError as exc:
                raise SnapshotUnavailable(str(exc)) from exc
            except OSError as exc:
                raise SnapshotUnavailable(f"cannot keep snapshots: {exc}") from exc

    @contextlib.contextmanager
    def elsewhere(self) -> Iterator[Path]:
        """Hold the repository while another process writes it (:mod:`tools.snapshots.apart`)
        and forget what this one knew of its index; yields reefline's home."""
        with self._lock:
            self._hashed = None  # the other process writes the index and the hashed list
            self._last = None
            yield self._home

    def snapshot_since(
        self, before: str, only: Collection[str] | None = None
    ) -> tuple[str, list[Change]]:
        """Like :meth:`snapshot`, with what changed since snapshot ``before`` (worked out
        while the new snapshot is being named)."""
        with self._lock:
            try:
                tree, diff = self._snapshot(before, only=only)
                return tree, parse_changes(diff) if diff is not None else changes(
                    self.git, before, tree
                )
            except GitError as exc:
                raise SnapshotUnavailable(str(exc)) from exc
            except OSError as exc:
                raise SnapshotUnavailable(f"cannot keep snapshots: {exc}") from exc

    def tracked(self) -> int:
        """How many files the last snapshot holds (one listing of the index).

        Raises:
            SnapshotUnavailable: git failed.
        """
        with self._lock:
            try:
                return self.git.run(["ls-files", "-z"]).count(b"\0")
            except GitError as exc:
                raise SnapshotUnavailable(str(exc)) from exc

    def _prepare(self) -> bool:
        """Make or tune the repository as needed; whether it was made now (its excludes are
        the last thing made: one stopped half-way is made again)."""
        first = not (self.git_dir / "info" / "exclude").exists()
        if first:
            creation.create(self.git, self._home, self.work_tree)
            self._tuned = True
        elif not self._tuned:
            self._tuned = True
            creation.tune(self.git)
        return first

    def _snapshot(
        self,
        before: str | None = None,
        only: Collection[str] | None = None,
        on_listed: Callable[[int], None] | None = None,
    ) -> tuple[str, bytes | None]:
        """The snapshot's id, and (given ``before``) the raw diff from it when one was
        needed and worked out on the way (None: not worked out); the rest as in
        :meth:`snapshot`."""
        if (why := inside_home(self._home, self.work_tree)) is not None:
            raise SnapshotUnavailable(why)
        try:
            return self._scan(before, only, on_listed)
        except (GitError, OSError, Stopped, SnapshotUnavailable):
            # Cut short: what is known of the files recorded by hash is read again from
            # the list last saved (the shadow index is always at least that far).
            self._hashed = None
            self._last = None
            raise

    def _scan(
        self,
        before: str | None,
        only: Collection[str] | None,
        on_listed: Callable[[int], None] | None,
    ) -> tuple[str, bytes | None]:
        first = self._prepare() or not (self.git_dir / "index").exists()
        if only is None:
            # The two halves of a scan at once: new files (a walk of the folders) and
            # changed or deleted ones (an lstat of each known file, against the stat cache).
            listed = self.git.run_together(
                [
                    ["ls-files", "-z", "-o", "--exclude-standard"],
                    ["diff-files", "-z", "--name-only"],
                ]
            )
        else:
            # Both halves in one call, narrowed to ``only`` by literal pathspecs: git walks
            # and lstats no more than them.
            scope = ["ls-files", "-z", "-o", "-m", "-d", "--exclude-standard", "--"]
            listed = [self.git.run([*scope, *sorted(only)])] if only else []
        paths = _listed(listed)
        if first and len(paths) > MAX_FILES:
            raise SnapshotUnavailable(
                f"{self.work_tree} holds more than {MAX_FILES} files; no snapshots are taken"
            )
        if on_listed is not None:
            on_listed(len(paths))
        hashed = self._load_hashed()
        to_add: list[str] = []
        to_stub: dict[str, os.stat_result] = {}
        unhash: list[str] = []
        gone: list[str] = []
        for path in list(hashed):  # files recorded by hash: git does not look at them
            st = _lstat(self.work_tree / path)
            if st is not None and hashed[path].same(st):
                continue
            del hashed[path]
            unhash.append(path)
            if st is None:
                gone.append(path)
            else:
                paths.append(path)
        paths = [p for p in paths if not p.endswith("/")]  # a nested repository: not ours
        text: set[str] = set()
        if len(paths) >= bulk.BULK_FROM:  # a first snapshot: into one pack, each read once
            # No index yet: the one written there holds them (no second read).
            fresh = not (self.git_dir / "index").exists()
            stored = bulk.store(self.git, self.work_tree, paths, index=fresh)
            text = stored.text
            to_stub.update(stored.by_hash)
            paths = [p for p in paths if p not in stored.by_hash and p not in stored.indexed]
        self._sort(paths, text, to_add, to_stub, gone)
        if unhash:
            self.git.run(
                ["update-index", "-z", "--no-assume-unchanged", "--stdin"],
                stdin=_nul(unhash),
            )
        if to_add:
            self._add(to_add)
        if gone:
            self.git.run(["update-index", "-z", "--force-remove", "--stdin"], stdin=_nul(gone))
        if to_stub:
            stubs.record(self.git, self.work_tree, to_stub)
            for path, st in to_stub.items():
                hashed[path] = Hashed.of(st)
        if unhash or to_stub:
            stubs.write_noted(self.hashed_file, hashed)
        if to_stub:  # only now: one noted in the index but not in the list is looked at again
            stubs.hide(self.git, to_stub)
        return self._name(before)

    def _sort(
        self,
        paths: list[str],
        text: set[str],
        to_add: list[str],
        to_stub: dict[str, os.stat_result],
        gone: list[str],
    ) -> None:
        """Where each of ``paths`` goes: stored by git (``to_add``), recorded by hash
        (``to_stub``, with its lstat) or out of the index (``gone``); ``text``: paths read as
        text a moment ago (:mod:`tools.snapshots.bulk`)."""
        folders: dict[str, bool | None] = {}
        for path in paths:
            if path in text:  # read a moment ago through its folders, none of them a link
                to_add.append(path)
                continue
            if _beyond_link(self.work_tree, path, folders):  # its folder is a link now
                gone.append(path)
                continue
            st = _lstat(self.work_tree / path)
            if st is not None and _special(st):  # a FIFO, socket or device: git skips them
                gone.append(path)
            elif (
                st is not None
                and stat.S_ISREG(st.st_mode)
                and stubs.by_hash(self.work_tree / path, st)
            ):
                to_stub[path] = st
            else:
                to_add.append(path)

    def _name(self, before: str | None) -> tuple[str, bytes | None]:
        """The tree the index holds now, and (given ``before``) the raw diff from it, read
        while the tree is named; an index unchanged since the last call names the same
        tree (no diff then)."""
        index = _lstat(self.git_dir / "index")
        mark = None if index is None else (index.st_mtime_ns, index.st_size, index.st_ino)
        # Unchanged index (another process or object may have changed it): the same tree.
        if self._last is not None and self._last[1] == mark and mark is not None:
            return self._last[0], None
        calls = [["write-tree"]]
        if before is not None:  # read from the index while write-tree names it
            calls.append(["diff-index", "--cached", *DIFF_ARGS, before])
        named = self.git.run_together(calls)
        tree = named[0].decode().strip()
        if packing.crowded(self.git_dir):
            packing.pack_loose(self.git)
        index = _lstat(self.git_dir / "index")
        mark = None if index is None else (index.st_mtime_ns, index.st_size, index.st_ino)
        self._last = (tree, mark)
        return tree, named[1] if before is not None else None

    def _add(self, paths: list[str]) -> None:
        # update-index, not add: it stores just these paths, where add would first lstat
        # every file again. ``--replace``: a file that became a folder, or the reverse.
        add = ["update-index", "-z", "--add", "--remove", "--replace", "--stdin"]
        try:
            self.git.run(add, stdin=_nul(paths))
        except GitError:
            # A path listed a moment ago and changed since (a temporary file that became a
            # folder) fails the whole call: again, through add, with what is there or known.
            known = set(os.fsdecode(self.git.run(["ls-files", "-z"])).split("\0"))
            there = [p for p in paths if p in known or _lstat(self.work_tree / p) is not None]
            if there:
                again = ["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"]
                self.git.run(again, stdin=_nul(there))

    def _load_hashed(self) -> dict[str, Hashed]:
        if self._hashed is None:
            self._hashed = stubs.read_noted(self.hashed_file)
        return self._hashed


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _beyond_link(top: Path, path: str, seen: dict[str, bool | None] | None = None) -> bool:
    """Whether a folder on the way to ``path`` is not a real folder (a symlink: git must
    neither follow it nor be asked to). ``seen``: what the folders looked at in this scan
    were (True a folder, False something else, None missing), so each is looked at once."""
    known = {} if seen is None else seen
    parts = path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        folder = "/".join(parts[:depth])
        if folder not in known:
            st = _lstat(top / folder)
            known[folder] = None if st is None else stat.S_ISDIR(st.st_mode)
        if known[folder] is not True:
            return known[folder] is False
    return False


def _special(st: os.stat_result) -> bool:
    """Neither a file, a link nor a folder: never opened, never recorded (nor listed by
    ``git ls-files``)."""
    return not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode))


def _listed(outputs: list[bytes]) -> list[str]:
    """The paths git listed in ``outputs`` (NUL-terminated), each once, sorted (one output:
    in git's order, folder by folder)."""
    found = [out for out in outputs if out]
    if len(found) == 1:  # a first scan's: 100,000 paths not sorted again (-m -d: one twice)
        return [p for p in dict.fromkeys(os.fsdecode(found[0]).split("\0")) if p]
    return sorted({p for out in found for p in os.fsdecode(out).split("\0") if p})


def _nul(paths: list[str]) -> bytes:
    return b"".join(os.fsencode(p) + b"\0" for p in paths)
