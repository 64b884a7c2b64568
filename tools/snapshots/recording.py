"""Snapshots around a command: one before it runs and one after, unless its sandbox is
``read-only`` (it cannot write the working directory); what changed between them goes on
the command's result.

The snapshot before a command is the one after the last command, without a scan, when a
watch on the tree (:mod:`tools.snapshots.watch`) saw nothing change since that scan began.
When it saw a few paths change (at most :data:`~tools.snapshots.watch.MAX_PATHS`), only
those are looked at, by the same rules as a scan, and the result is the tree a full scan
would record. Otherwise (too many paths, a folder moved, a ``.gitignore`` edited, no watch
to be had, any error) the tree is scanned as always. The scan after a command is a full
one, except in a tree of :data:`NARROW_FROM` files or more, where it looks only at what the
watch saw change since the last scan began, when it knows.

The first snapshot of a session is taken in the background from the session's start
(:meth:`Recorder.start`): in a large tree it takes seconds, which a command coming first
then waits for only in part; its progress is :class:`FirstRecord`, for the front ends to
say.

Each snapshot runs in a thread under a :class:`~tools.snapshots.stopping.Stop`, set when
the awaiting step is cancelled (Ctrl+C, SIGTERM) or, for the first snapshot, when the
recorder closes: its git calls are killed and its hashing ends, so the thread, and the
process, end within moments. A snapshot stopped half-way leaves nothing to trust: the
watch is dropped and the next one scans."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from tools.modes import SandboxMode
from tools.snapshots.apart import snapshot_apart
from tools.snapshots.changes import Recorded
from tools.snapshots.shadow import ShadowRepo, SnapshotUnavailable
from tools.snapshots.stopping import Stop, Stopped, current, stoppable
from tools.snapshots.watch import MAX_DIRS, MAX_PATHS, TreeWatch, WatchUnavailable

T = TypeVar("T")

INTERRUPTED_GRACE_S = 5.0
"""Longest the snapshot after an interrupted command may take (a usual one takes well under
a second); the person stopping the step waits no longer for it."""

SAID_FROM = 1_000
"""A first snapshot of this many files or more is said while it runs; a smaller one is
over before anyone could read the line."""


@dataclass(frozen=True)
class FirstRecord:
    """Where the session's first snapshot, taken in the background, is."""

    files: int | None = None
    """How many paths it records, once listed (None: still listing)."""
    waiting: bool = False
    """A command waits for it to end before it runs."""
    done: bool = False
    seconds: float | None = None
    """How long it took (once done)."""

    @property
    def worth_saying(self) -> bool:
        """Large enough to be said (:data:`SAID_FROM`)."""
        return self.files is not None and self.files >= SAID_FROM


FirstListener = Callable[[FirstRecord], None]

NARROW_FROM = 20_000
"""A tree of this many files or more (counted once, after the first snapshot) is scanned
after a command only where the watch saw changes, when it knows them: a full scan there
costs more than the command's budget (README: Snapshots)."""

CLOSE_WAIT_S = 2.0
"""How long closing waits for a first snapshot to stop."""


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
        self._first = FirstRecord(done=True)
        self._first_done = threading.Event()
        self._first_done.set()
        self._first_thread: threading.Thread | None = None
        self._stop = Stop()  # the first snapshot's: set when the recorder closes
        self._listeners: list[FirstListener] = []
        self._told = threading.Lock()  # guards the two above (never held while waiting)
        self._narrow = False
        """The tree is large (:data:`NARROW_FROM`): the scan after a command is narrowed."""

    def start(self) -> None:
        """Take the first snapshot now, in a thread of its own, the watch on the tree armed
        before it (a change meanwhile is the next snapshot's to look at). A command that
        comes before it ends waits for what is left (:meth:`before`). Once only."""
        with self._told:
            if self._first_thread is not None:
                return
            self._first = FirstRecord()
            self._first_done.clear()
            thread = threading.Thread(target=self._record_first, name="first-snapshot")
            thread.daemon = True  # a process that must end does not wait for it
            self._first_thread = thread
        thread.start()

    @property
    def first(self) -> FirstRecord:
        """Where the first snapshot is (done when none was started)."""
        return self._first

    def listen(self, listener: FirstListener) -> Callable[[], None]:
        """Hear each change of :attr:`first` from now on, starting with the current one;
        called on the thread that made the change (the snapshot's own, or the one a
        command waits in), which must not call back into this recorder. Returns the
        function that stops it."""
        with self._told:  # held while told: each listener hears the changes in order
            self._listeners.append(listener)
            listener(self._first)

        def stop() -> None:
            with self._told:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return stop

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
        """Stop watching the tree (the next command scans, and watches anew); a first
        snapshot still running stops at its next file (it is taken again when needed)."""
        self._stop.set()
        if self._first_thread is not None:
            # A git call in flight (listing a huge tree) is not waited for to its end: the
            # thread is a daemon, and git ends on its own once its output has no reader.
            self._first_thread.join(CLOSE_WAIT_S)
        with self._state:
            if self._watch is not None:
                self._watch.close()
            self._watch = None
            self._clean = None

    def _record_first(self) -> None:
        began = time.monotonic()
        try:
            with stoppable(self._stop):
                self._take_first()
        finally:  # whatever happened, a command waiting for it goes on
            self._first_done.set()
            seconds = time.monotonic() - began
            self._tell(lambda f: replace(f, done=True, waiting=False, seconds=seconds))

    def _take_first(self) -> None:
        try:
            self.repo.prepare()  # the watch asks the repository what it ignores
            with self._state:
                self._generation += 1
                generation = self._generation
                self._arm()
            tree = snapshot_apart(self.repo, on_listed=self._listed)
        except Stopped:
            return
        except SnapshotUnavailable as exc:
            if not self._stop.is_set():
                self.unavailable = self.unavailable or str(exc)
            return
        with self._state:
            if self._watch is not None and self._generation == generation:
                self._clean = tree
            # A first snapshot that listed this many recorded at least as many: the scan
            # after a command coming now is narrowed already (the count below may be late).
            if (self._first.files or 0) >= NARROW_FROM:
                self._narrow = True
        self._first_done.set()  # what a command waits for; the rest is for the next ones
        with contextlib.suppress(SnapshotUnavailable, Stopped):  # in doubt: full scans
            self._narrow = self.repo.tracked() >= NARROW_FROM

    def _listed(self, files: int) -> None:
        self._tell(lambda f: replace(f, files=files))

    def _tell(self, change: Callable[[FirstRecord], FirstRecord]) -> None:
        with self._told:
            self._first = change(self._first)
            for listener in self._listeners:
                listener(self._first)

    def _await_first(self) -> None:
        """Wait for the first snapshot, saying so (the watch then says what changed since
        its scan began: a command coming first waits only for what is left of it)."""
        if self._first_done.is_set():
            return
        self._tell(lambda f: replace(f, waiting=True))
        stop = current()
        # Waiting, too, ends when the step that waits is stopped (Ctrl+C, SIGTERM).
        while not self._first_done.wait(0.05):
            if stop is not None:
                stop.check()

    def _before(self) -> str | None:
        self._await_first()
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

    def _seen(self) -> frozenset[str] | None:
        """The paths the watch saw change since its last reset (None: not known)."""
        if self._watch is None:
            return None
        try:
            return self._watch.paths()
        except WatchUnavailable as exc:
            self._give_up(exc)
            return None

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
            # In a large tree, what the watch saw since the last scan began (the command's
            # changes among them) is all that is looked at, when it knows.
            seen = self._seen() if self._narrow else None
            # Right before the scan: a change from here on is the next command's to scan.
            self._clean = None
            self._generation += 1
            generation = self._generation
            self._arm()
        try:
            after, found = self.repo.snapshot_since(before, only=seen)
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
