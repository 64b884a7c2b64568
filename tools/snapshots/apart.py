"""A first snapshot taken in a process of its own.

A session's first snapshot of a large tree is seconds of Python work, reading each file (the
git work runs beside it). In a thread of reefline's own process it would share one
interpreter lock with the session loading meanwhile (the model client, the app), and a thread
doing many short system calls waits for that lock after each: both would crawl. In a process
of its own it has a core to itself; reefline's thread only waits for its answer, holding
nothing.

The child runs the same :meth:`tools.snapshots.shadow.ShadowRepo.snapshot` and says on its
stdout how many paths it listed, then the tree. Stopping it (:class:`~tools.snapshots.stopping
.Stop`) asks it to end (SIGTERM): it stops its own git calls and removes what it half-wrote
(the index's lock file), as a snapshot stopped in-process does. It starts isolated (``-I``:
no working directory, no ``PYTHON*`` variables on its path), importing reefline's own code
from where this process loaded it, never from the workspace.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import tools
from tools.snapshots import stopping
from tools.snapshots.shadow import ShadowRepo, SnapshotUnavailable

_ROOT = str(Path(tools.__file__).resolve().parent.parent)
_CHILD = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from tools.snapshots.apart import main; raise SystemExit(main(sys.argv[2:]))"
)
_STOPPED = 3


def snapshot_apart(repo: ShadowRepo, on_listed: Callable[[int], None] | None = None) -> str:
    """:meth:`ShadowRepo.snapshot <tools.snapshots.shadow.ShadowRepo.snapshot>` of ``repo``,
    taken by a child process while ``repo`` is held (:meth:`~tools.snapshots.shadow
    .ShadowRepo.elsewhere`).

    Raises:
        SnapshotUnavailable: the child could not take it (its reason).
        tools.snapshots.stopping.Stopped: this thread's stop was set meanwhile.
    """
    with repo.elsewhere() as home:
        return _run(home, repo.work_tree, on_listed)


def _run(home: Path, work_tree: Path, on_listed: Callable[[int], None] | None) -> str:
    stop = stopping.current()
    try:
        child = subprocess.Popen(
            [sys.executable, "-I", "-c", _CHILD, _ROOT, str(home), str(work_tree)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a Ctrl+C reaches reefline, which stops it in order
        )
    except OSError as exc:
        raise SnapshotUnavailable(f"cannot keep snapshots: {exc}") from exc
    if stop is not None:
        stop.adopt(child, gentle=True)
    tree = said = None
    try:
        assert child.stdout is not None and child.stderr is not None
        for raw in child.stdout:
            word, _, rest = raw.decode(errors="replace").rstrip("\n").partition(" ")
            if word == "listed" and on_listed is not None:
                on_listed(int(rest))
            elif word == "tree":
                tree = rest
            elif word == "unavailable":
                said = rest
        err = child.stderr.read().decode(errors="replace").strip()
        returned = child.wait()
    finally:
        if stop is not None:
            stop.release(child)
    if stop is not None:
        stop.check()
    if returned == 0 and tree:
        return tree
    if said is not None:
        raise SnapshotUnavailable(said)
    last = err.splitlines()[-1] if err else f"exit status {returned}"
    raise SnapshotUnavailable(f"the first snapshot failed: {last}")


def main(argv: list[str]) -> int:
    """The child: ``HOME WORK_TREE``; prints ``listed N`` and ``tree ID`` (or ``unavailable
    REASON``)."""
    home, work_tree = (Path(a) for a in argv)
    stop = stopping.Stop()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def listed(count: int) -> None:
        print(f"listed {count}", flush=True)

    try:
        with stopping.stoppable(stop):
            tree = ShadowRepo(home, work_tree).snapshot(on_listed=listed)
    except stopping.Stopped:
        return _STOPPED
    except SnapshotUnavailable as exc:
        if stop.is_set():
            return _STOPPED
        print("unavailable " + " ".join(str(exc).split()), flush=True)
        return 1
    with contextlib.suppress(BrokenPipeError):  # reefline went away: nobody to tell
        print(f"tree {tree}", flush=True)
    return 0
