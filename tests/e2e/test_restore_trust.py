"""Putting files back never writes outside the working directory, through the real CLI:
``/rewind N files`` racing a process that swaps a folder of the working directory with a
symlink to a folder outside it, and a rewind after a sandboxed command left a process
running (gone before the first file is written)."""

from __future__ import annotations

import ctypes
import os
import select
import struct
import subprocess
import threading
from pathlib import Path

from tests.e2e.conftest import REEFLINE, log_events, session_files
from tests.openai_server import OpenAIServer
from tests.swapper import swapping, written_outside

ROUNDS = 3
PATHS = [f"d/f{i:03}.txt" for i in range(500)] + [f"d/sub/g{i:03}.txt" for i in range(500)]
CHANGE_THEM = 'for f in d/*.txt d/sub/*.txt; do echo changed >> "$f"; done'


def reefline(
    server: OpenAIServer, env: dict[str, str], cwd: Path, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [REEFLINE, "--base-url", server.base_url, "--model", "m", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_rewind_with_files_racing_a_folder_swapper_writes_nothing_outside(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workdir / "d" / "sub").mkdir(parents=True)
    openai_server.agent_commands = [CHANGE_THEM]
    for n in range(ROUNDS):
        env = {**cli_env, "REEFLINE_HOME": str(tmp_path / f"home{n}")}
        for path in PATHS:
            (workdir / path).write_text("recorded\n")
        first = reefline(
            openai_server,
            env,
            workdir,
            "-p",
            "change them",
            "--approve",
            "auto",
            "--sandbox",
            "off",
        )
        assert first.returncode == 0, first.stderr
        with swapping(workdir / "d", outside):
            out = reefline(openai_server, env, workdir, "--continue", "-p", "/rewind 1 files")
        said = out.stdout + out.stderr
        assert written_outside(outside) == [], f"round {n}: {said}"
        # Some paths are refused (a link on the way), or the snapshot after the restore
        # meets the swapping: either is said, and nothing went outside.
        assert "Back before turn 1" in said and "put back" in said.lower(), said


class _Inotify:
    """The names moved into one folder, as the kernel reports them (an event, no polling)."""

    IN_MOVED_TO = 0x80

    def __init__(self, folder: Path) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_CLOEXEC)
        assert self.fd >= 0
        wd = libc.inotify_add_watch(self.fd, os.fsencode(folder), self.IN_MOVED_TO)
        assert wd >= 0

    def wait_for(self, name: str, stop: int) -> bool:
        """Whether ``name`` was moved into the folder before ``stop`` became readable."""
        while self.fd in select.select([self.fd, stop], [], [])[0]:
            data = os.read(self.fd, 65536)
            at = 0
            while at < len(data):
                _, _, _, size = struct.unpack_from("iIII", data, at)
                moved = data[at + 16 : at + 16 + size].rstrip(b"\0").decode()
                at += 16 + size
                if moved == name:
                    return True
        return False


def test_rewind_with_files_writes_only_once_the_sandbox_and_what_it_left_are_gone(
    bwrap: str,
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    workdir: Path,
    tmp_path: Path,
) -> None:
    """A sandboxed command leaves a process holding a FIFO the test reads; when the restore
    moves its first file into place, that process must already be gone (the FIFO has no
    writer left)."""
    (workdir / "d" / "sub").mkdir(parents=True)
    for path in ["a.txt", *PATHS]:  # a.txt first: the others are written after it
        (workdir / path).write_text("recorded\n")
    (workdir / ".gitignore").write_text("alive\n")
    os.mkfifo(workdir / "alive")
    reader = os.open(workdir / "alive", os.O_RDONLY | os.O_NONBLOCK)
    openai_server.agent_commands = [
        f"echo changed >> a.txt; {CHANGE_THEM}; sleep 600 > alive 2>&1 &"
    ]
    watch = _Inotify(workdir)
    seen: dict[str, bool] = {}
    stop_r, stop_w = os.pipe()

    def at_first_write() -> None:
        if watch.wait_for("a.txt", stop_r):
            events = select.poll()
            events.register(reader, select.POLLHUP)
            seen["writer gone"] = bool(events.poll(0))

    watcher = threading.Thread(target=at_first_write)
    watcher.start()
    try:
        out = reefline(
            openai_server,
            cli_env,
            workdir,
            "--plain",
            "--approve",
            "auto",
            "--sandbox",
            "workspace-write",
            stdin="change them\n/rewind 1\nf\n/quit\n",
        )
    finally:
        os.write(stop_w, b"x")  # reefline has exited: the write was seen by now, or never
        watcher.join()
        for fd in (reader, watch.fd, stop_r, stop_w):
            os.close(fd)
    assert out.returncode == 0, out.stderr
    assert "Put back" in out.stdout, out.stdout
    assert (workdir / "a.txt").read_text() == "recorded\n"
    assert seen == {"writer gone": True}, "the restore wrote while the sandbox still ran"
    assert "The sandbox was ended first" in out.stdout


def test_fork_restore_files_refuses_while_the_session_is_open_elsewhere(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """Another reefline holding the session may still run its sandbox (and what its
    commands left there): ``fork --restore-files`` puts nothing back then, and says why."""
    notes = workdir / "notes.txt"
    notes.write_text("one\n")
    openai_server.agent_commands = ["echo two >> notes.txt"]
    args = ["--base-url", openai_server.base_url, "--model", "m", "--approve", "auto"]
    held = subprocess.Popen(
        [REEFLINE, "--plain", *args, "--sandbox", "off"],
        cwd=workdir,
        env=cli_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    guard = threading.Timer(60, held.kill)  # a reefline that never says it: fail, not hang
    guard.start()
    try:
        assert held.stdin is not None and held.stdout is not None
        held.stdin.write("add a line\n")
        held.stdin.flush()
        for line in held.stdout:  # the turn is done once its changed file is listed
            if "M notes.txt" in line:
                break
        else:
            raise AssertionError("the first turn never listed its changed file")
        [log] = session_files(cli_env)
        start = next(e["seq"] for e in log_events(log) if e["type"] == "turn/start")
        fork = subprocess.run(
            [REEFLINE, "fork", log.stem, "--at", str(start), "--restore-files"],
            cwd=workdir,
            env=cli_env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert fork.returncode == 2, fork.stderr
        assert "open in another reefline: quit it first" in fork.stderr
        assert notes.read_text() == "one\ntwo\n"
        held.stdin.write("/quit\n")
        held.stdin.flush()
        assert held.wait(timeout=60) == 0
    finally:
        guard.cancel()
        if held.poll() is None:
            held.kill()
            held.wait()
    fork = subprocess.run(
        [REEFLINE, "fork", log.stem, "--at", str(start), "--restore-files"],
        cwd=workdir,
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert fork.returncode == 0, fork.stderr
    assert notes.read_text() == "one\n"
