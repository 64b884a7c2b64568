"""A first snapshot taken by a process of its own (tools.snapshots.apart), with real git,
real files and a real child process: it names the tree an in-process snapshot names, it
stops cleanly when asked (no lock file left, the next snapshot records everything), and it
runs reefline's own code even when started from a workspace holding a package of the same
name."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tools.snapshots.apart import snapshot_apart
from tools.snapshots.shadow import ShadowRepo
from tools.snapshots.stopping import Stop, Stopped, stoppable


def _tree(work: Path) -> None:
    (work / "src").mkdir(parents=True)
    for n in range(30):
        (work / "src" / f"f{n}.txt").write_text(f"line {n}\n")
    (work / "blob.bin").write_bytes(b"\0\1\2" * 100)
    (work / "link").symlink_to("src/f1.txt")


def test_apart_names_the_tree_a_snapshot_here_names(tmp_path: Path) -> None:
    work = tmp_path / "work"
    _tree(work)
    heard: list[int] = []
    apart = ShadowRepo(tmp_path / "home-a", work)
    tree = snapshot_apart(apart, heard.append)
    assert tree == ShadowRepo(tmp_path / "home-b", work).snapshot()
    assert heard == [32]
    # The repository it wrote is this process's from now on.
    (work / "src" / "f3.txt").write_text("changed\n")
    after, changed = apart.snapshot_since(tree)
    assert after != tree and [c.path for c in changed] == ["src/f3.txt"]


def test_stopped_apart_leaves_no_lock_and_the_next_records_everything(tmp_path: Path) -> None:
    work = tmp_path / "work"
    _tree(work)
    os.mkfifo(work / ".gitignore")  # the child's listing waits in open() for a writer
    repo = ShadowRepo(tmp_path / "home", work)
    stop = Stop()
    outcome: list[BaseException | str] = []

    def take() -> None:
        with stoppable(stop):
            try:
                outcome.append(snapshot_apart(repo))
            except BaseException as exc:
                outcome.append(exc)

    thread = threading.Thread(target=take)
    thread.start()
    thread.join(1.0)  # not a wait for an event: stuck on the FIFO, it must still run
    assert thread.is_alive()
    stop.set()
    thread.join(60)
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], Stopped), outcome
    assert not (repo.git_dir / "index.lock").exists()
    (work / ".gitignore").unlink()
    (work / ".gitignore").write_text("")
    tree = repo.snapshot()
    assert tree == ShadowRepo(tmp_path / "home-b", work).snapshot()


def test_apart_runs_reefline_s_code_not_the_workspace_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    _tree(work)
    marker = tmp_path / "ran"
    planted = work / "tools" / "snapshots"
    planted.mkdir(parents=True)
    (work / "tools" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (planted / "__init__.py").write_text("")
    (planted / "apart.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (work / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.chdir(work)  # as the session runs: from the workspace
    monkeypatch.setenv("PYTHONPATH", str(work))
    tree = snapshot_apart(ShadowRepo(tmp_path / "home", work))
    assert len(tree) == 40
    assert not marker.exists()
