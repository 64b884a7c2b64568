"""Stopping a snapshot's own work, with real git and real files: a git call stuck on a FIFO
is killed when its stop is set from another thread, hashing gives up between chunks, a FIFO
is never read, and a stopped snapshot leaves the shadow repository so that the next one
records everything (the files recorded by hash included)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tools.snapshots import stubs
from tools.snapshots.changes import changes
from tools.snapshots.git import Git
from tools.snapshots.shadow import ShadowRepo
from tools.snapshots.stopping import Stop, Stopped, stoppable


def _release(fifo: Path) -> None:
    for _ in range(50):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            return


def test_a_git_call_stuck_on_a_fifo_is_killed_by_its_stop(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    git = Git(tmp_path / "shadow", work)
    git.run(["init", "-q", "--template="])
    os.mkfifo(work / ".gitignore")  # git waits in open() for a writer
    stop = Stop()
    failed: list[BaseException] = []

    def scan() -> None:
        with stoppable(stop):
            try:
                git.run(["ls-files", "-z", "-o", "--exclude-standard"])
            except BaseException as exc:
                failed.append(exc)

    thread = threading.Thread(target=scan)
    thread.start()
    try:
        thread.join(0.5)  # not a wait for an event: it must still be stuck afterwards
        assert thread.is_alive()
        stop.set()
        thread.join(30)
        assert not thread.is_alive()
        assert len(failed) == 1 and isinstance(failed[0], Stopped)
    finally:
        _release(work / ".gitignore")
        thread.join()


def test_hashing_gives_up_when_stopped(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as f:
        f.truncate(stubs.HASH_LIMIT)  # sparse: read, not stored
    assert stubs.file_sha256(big) is not None
    stop = Stop()
    stop.set()
    with stoppable(stop), pytest.raises(Stopped):
        stubs.file_sha256(big)


def test_a_fifo_in_a_file_s_place_is_never_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert stubs.file_sha256(fifo) is None  # opened without blocking, then refused


def test_a_stopped_snapshot_leaves_the_repository_to_the_next(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    repo = ShadowRepo(tmp_path / "home", work)
    first = repo.snapshot()
    (work / "data.bin").write_bytes(b"\0" * 4096)  # binary: recorded by hash
    (work / "b.txt").write_text("b\n")
    stop = Stop()
    stop.set()
    with stoppable(stop), pytest.raises(Stopped):
        repo.snapshot()
    again = repo.snapshot()
    assert sorted(c.path for c in changes(repo.git, first, again)) == ["b.txt", "data.bin"]
    (work / "data.bin").write_bytes(b"\0" * 4095 + b"\1")
    assert [c.path for c in changes(repo.git, again, repo.snapshot())] == ["data.bin"]
