"""Snapshots around a command: one before it runs and one after, unless its sandbox is
``read-only`` (it cannot write the working directory); what changed between them goes on
the command's result.

The snapshot before a command is the one after the last command, without a scan, when a
watch on the tree (:mod:`tools.snapshots.watch`) saw nothing change since that scan began.
When it saw a few paths change (at most :data:`~tools.snapshots.watch.MAX_PATHS`), only
those are looked at, by the same rules as a scan, and the result is the tree a full scan
would record. Otherwise (too many paths, a folder moved, a ``.gitignore`` edited, no watch
to be had, any error) the tree is scanned as always. The scan after a command is always
a full one.

Each snapshot runs in a thread under a :class:`~tools.snapshots.stopping.Stop` that is set
when the awaiting step is cancelled (Ctrl+C, SIGTERM): its git calls are killed and its
hashing ends, so the thread, and the process, end within moments. A snapshot stopped
half-way leaves nothing to trust: the watch is dropped and the next one scans."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

from tools.base import SandboxMode
from tools.snapshots.changes import Recorded
from tools.snapshots.shadow import ShadowRepo, SnapshotUnavailable
from tools.snapshots.stopping import Stop, Stopped, stoppable
from tools.snapshots.watch import MAX_DIRS, MAX_PATHS, TreeWatch, WatchUnavailable

T = TypeVar("T")

INTERRUPTED_GRACE_S = 5.0
"""Longest the snapshot after an interrupted command may take (a usual one takes well under
a second); the person stopping the step waits no longer for it."""


class Recorder:
    """Takes the snapshots of ``repo`` around commands. When one cannot be taken the
    command still runs, unrecorded, and :attr:`unavailable` says why (the first reason).
    :attr:`unwatched` says why the tree is scanned before every command (None: it is
    watched, or not yet); ``max_dirs`` bounds the folders watched, ``max_paths`` the changed
    paths looked at alone before a command."""

    def __init__(
        self, repo: ShadowRepo, *, max_dirs: int = MAX_DIRS, max_paths: int = MAX_PATHS
    ) -> None:
        self.repo = repo
        self._max_paths = max_paths
        self.unavailable: str | None = None
        self.unwatched: str | None = None
        self._max_dirs = max_dirs
        self._watch: TreeWatch | None = None
        # The snapshot after the last command, while the watch saw nothing since its scan
        # began; and which reset that scan followed (a slower, older scan must not win).
        self._clean: str | None = None
        self._generation = 0
        self._state = threading.Lock()
        self.partial_scans = 0
        """How many snapshots before a command looked only at the paths the watch named."""

    async def before(self, mode: SandboxMode) -> str | None:
        """The snapshot before a command in ``mode`` (None: none is taken)."""
        if mode == "read-only":
            return None
        return await self._off_loop(self._before)

    async def after(self, before: str | None) -> Recorded | None:
        """The snapshot after the command that ``before`` preceded, with what it changed."""
        if before is None:
            return None
        return await self._off_loop(lambda: self._after(before))

    async def after_interrupted(self, before: str | None) -> Recorded | None:
        """:meth:`after` for a command that was interrupted: what it changed is recorded
        unless that takes over :data:`INTERRUPTED_GRACE_S` or the caller is cancelled again;
        then the snapshot stops and the command stays unrecorded (None; the next snapshot
        holds what it changed). Never raises :class:`asyncio.CancelledError`: the caller is
        already on its way out."""
        recording = asyncio.ensure_future(self.after(before))
        try:
            return await asyncio.wait_for(asyncio.shield(recording), INTERRUPTED_GRACE_S)
        except (TimeoutError, asyncio.CancelledError):
            recording.cancel()  # which stops the snapshot's own work
            return None

    async def _off_loop(self, work: Callable[[], T]) -> T:
        """``work`` in a thread (the git calls never hold up the event loop), stopped when
        the awaiting task is cancelled."""
        stop = Stop()

        def run() -> T:
            with stoppable(stop):
                try:
                    return work()
                except Stopped:
                    self.close()  # a watch reset or started half-way cannot vouch
                    raise

        try:
            return await asyncio.to_thread(run)
        except asyncio.CancelledError:
            stop.set()
            raise

    def close(self) -> None:
        """Stop watching the tree (the next command scans, and watches anew)."""
        with self._state:
            if self._watch is not None:
                self._watch.close()
            self._watch = None
            self._clean = None

    def _before(self) -> str | None:
        with self._state:
            unchanged, paths = self._since_clean()
        if unchanged is not None:
            return unchanged
        if paths is not None:
            try:
                tree = self.repo.snapshot(only=paths)
            except SnapshotUnavailable:
                pass  # in doubt: the full scan says
            else:
                self.partial_scans += 1
                return tree
        return self._take()

    def _since_clean(self) -> tuple[str | None, frozenset[str] | None]:
        """The snapshot after the last command when nothing changed since its scan began,
        else None and the paths that changed (None: unknown, scan them all)."""
        if self._watch is None or self._clean is None:
            return None, None
        try:
            if not self._watch.changed():
                return self._clean, None
            return None, self._watch.paths()
        except WatchUnavailable as exc:
            self._give_up(exc)
            return None, None

    def _after(self, before: str) -> Recorded | None:
        with self._state:
            # Right before the scan: a change from here on is the next command's to scan.
            self._clean = None
            self._generation += 1
            generation = self._generation
            self._arm()
        try:
            after, found = self.repo.snapshot_since(before)
        except SnapshotUnavailable as exc:
            self.unavailable = self.unavailable or str(exc)
            return None
        with self._state:
            if self._watch is not None and self._generation == generation:
                self._clean = after
        return Recorded(before, after, tuple(found))

    def _arm(self) -> None:
        """Reset the watch, started first when there is none yet (and may be)."""
        if self.unwatched is not None:
            return
        try:
            if self._watch is None:
                watch = TreeWatch(
                    self.repo.work_tree, self.repo.git, self._max_dirs, self._max_paths
                )
                watch.start()
                self._watch = watch
            else:
                self._watch.reset()
        except WatchUnavailable as exc:
            self._give_up(exc)

    def _give_up(self, exc: WatchUnavailable) -> None:
        """Scan before every command from now on, as without a watch."""
        self.unwatched = str(exc)
        if self._watch is not None:
            self._watch.close()
        self._watch = None
        self._clean = None

    def _take(self) -> str | None:
        try:
            return self.repo.snapshot()
        except SnapshotUnavailable as exc:
            self.unavailable = self.unavailable or str(exc)
            return None
