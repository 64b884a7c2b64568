"""The bounds of reefline's own work on the workspace, through the real ``reefline -p``
against the loopback server: reefline's home is never snapshotted (a workspace that is the
home, or lies inside it, gets none and one line says why; a home inside the workspace is
left out of its snapshots), a 15 TiB sparse file is recorded by its stat without being
read, an in-place edit that puts the mtime back is still a change, and a snapshot stuck in
a git call stops on SIGTERM or Ctrl+C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.openai_server import OpenAIServer

HOME_NOTICE = "No workspace snapshots: the working directory"


def agent_run(run_cli: Run, server: OpenAIServer, *commands: str, extra: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    server.agent_commands = list(commands)
    args = ["-p", "go", "--base-url", server.base_url, "--model", "m", "--approve", "auto"]
    out = run_cli(*args, "--sandbox", "off", "--json", *extra)
    assert out.returncode == 0, out.stderr
    return out


def recorded(stdout: str) -> list[dict | None]:
    """The ``files`` of each tool result a ``--json`` run printed."""
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [e["data"].get("files") for e in events if e.get("type") == "tool/result"]


def file_count(folder: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(folder))


@pytest.mark.parametrize("how", ["--home .", "cwd is the home", "cwd inside the home"])
def test_a_workspace_in_reefline_s_home_is_never_snapshotted(
    how: str,
    run_cli: Run,
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    workdir: Path,
) -> None:
    home = workdir if how != "cwd inside the home" else workdir.parent
    extra = ("--home", ".") if how == "--home ." else ()
    env = {} if how == "--home ." else {"REEFLINE_HOME": str(home)}
    said: list[str] = []
    for n in range(2):  # the second turn is where it used to record its own first snapshot
        openai_server.agent_commands = [f"echo {n} >> notes.txt"]
        out = run_cli(
            "-p", "go", "--base-url", openai_server.base_url, "--model", "m",
            "--approve", "auto", "--sandbox", "off", "--json", *extra,
            env=env, timeout=60,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        said.append(out.stderr)
    assert (workdir / "notes.txt").read_text() == "0\n1\n"
    # No snapshot of the home, so none of the shadow repository's own files either.
    assert file_count(home) < 20, sorted(str(p) for p in home.rglob("*"))
    assert not (home / "snapshots").exists()
    for stderr in said:  # one line on each start says why
        assert stderr.count(HOME_NOTICE) == 1, stderr
        assert "reefline's home" in stderr and "--home or REEFLINE_HOME" in stderr


def test_a_home_inside_the_workspace_is_left_out_of_its_snapshots(
    run_cli: Run, openai_server: OpenAIServer, workdir: Path
) -> None:
    for n in range(2):
        out = agent_run(
            run_cli, openai_server, f"echo {n} >> notes.txt", extra=("--home", ".reefline")
        )
        assert HOME_NOTICE not in out.stderr
        [files] = recorded(out.stdout)
        assert files is not None
        assert [c["path"] for c in files["changes"]] == ["notes.txt"]
    # Twice as many turns would not double it: only the shadow repository's own objects.
    assert file_count(workdir / ".reefline" / "snapshots") < 60


def test_a_sparse_15_tib_file_is_recorded_by_its_stat_at_once(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    # Hashing it would read 15 TiB of zeros (hours); a FIFO beside it is never opened.
    out = agent_run(run_cli, openai_server, "truncate -s 15T big.bin && mkfifo pipe && echo a > a")
    [files] = recorded(out.stdout)
    assert files is not None
    changes = {c["path"]: c for c in files["changes"]}
    assert sorted(changes) == ["a", "big.bin"]
    assert changes["big.bin"]["kind"] == "added" and "added" not in changes["big.bin"]
    [log] = session_files(cli_env)
    diff = run_cli("diff", log.stem)
    assert diff.returncode == 0, diff.stderr
    assert "big.bin" in diff.stdout and "too big to record" in diff.stdout
    assert "b/pipe" not in diff.stdout


EDIT_KEEPING_MTIME = """
import os, sys
path = sys.argv[1]
old = os.stat(path)
with open(path, "r+b") as f:
    f.seek(100)
    f.write(b"B")
os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
while os.stat(path).st_ctime_ns == old.st_ctime_ns:  # a coarse clock: until it moves on
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
new = os.stat(path)
same = (new.st_size, new.st_mtime_ns, new.st_ino, new.st_mode)
assert same == (old.st_size, old.st_mtime_ns, old.st_ino, old.st_mode), "not in place"
print("edited in place, mtime put back")
"""


def test_an_edit_that_puts_the_mtime_back_is_still_recorded(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    (workdir / "data.txt").write_bytes(b"a" * (2 * 1024 * 1024))  # over 1 MiB: by hash
    script = workdir.parent / "edit.py"
    script.write_text(EDIT_KEEPING_MTIME)
    out = agent_run(run_cli, openai_server, "true", f"{sys.executable} {script} data.txt")
    first, second = recorded(out.stdout)
    assert first is not None and first["changes"] == []
    assert second is not None
    assert [(c["path"], c["kind"]) for c in second["changes"]] == [("data.txt", "modified")]
    [log] = session_files(cli_env)
    diff = run_cli("diff", log.stem)
    assert "data.txt" in diff.stdout


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _waits_on_a_fifo(pid: int) -> bool:
    """Whether ``pid`` is blocked opening a FIFO no one writes (its wchan, or, where that
    is hidden, an ``openat`` it is asleep in)."""
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
        syscall = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return wchan == "wait_for_partner" or (wchan in ("", "0") and syscall[:1] == ["257"])


def _release_fifo(fifo: Path) -> None:
    """Let any reader still blocked opening ``fifo`` go on (it reads an empty file)."""
    for _ in range(50):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            return


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_snapshot_stuck_in_git_stops_on_a_signal(
    sig: signal.Signals, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    # A .gitignore that is a FIFO: the snapshot after the command waits in git for a writer.
    openai_server.agent_commands = ["mkfifo .gitignore"]
    args = ["-p", "go", "--base-url", openai_server.base_url, "--model", "m"]
    proc = subprocess.Popen(
        [REEFLINE, *args, "--approve", "auto", "--sandbox", "off"],
        cwd=workdir,
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not any(_waits_on_a_fifo(child) for child in _children(proc.pid)):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no git call ever waited on the FIFO"
            time.sleep(0.02)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 128 + sig, err
        assert "interrupted; the turn was closed and the session saved" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        _release_fifo(workdir / ".gitignore")
    [log] = session_files(cli_env)
    events = log_events(log)
    assert events[-1]["type"] == "turn/end" and events[-1]["data"]["reason"] == "cancelled"


def _descendants(pid: int) -> list[int]:
    found, pending = [], [pid]
    while pending:
        children = _children(pending.pop())
        found += children
        pending += children
    return found


def _command_line(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    except OSError:
        return []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_one_sigterm_ends_the_run_when_recording_the_stopped_command_is_stuck(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    # The command leaves a FIFO .gitignore and is stopped: the snapshot that records what
    # it changed waits in git; the one SIGTERM that stopped the command ends that too.
    openai_server.agent_commands = ["mkfifo .gitignore && sleep 3600"]
    args = ["-p", "go", "--base-url", openai_server.base_url, "--model", "m"]
    proc = subprocess.Popen(
        [REEFLINE, *args, "--approve", "auto", "--sandbox", "off"],
        cwd=workdir,
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not any(_command_line(p)[:2] == ["sleep", "3600"] for p in _descendants(proc.pid)):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 143, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        _release_fifo(workdir / ".gitignore")
    [log] = session_files(cli_env)
    results = [e for e in log_events(log) if e["type"] == "tool/result"]
    assert results[-1]["data"]["interrupted"] and results[-1]["data"].get("files") is None


def test_a_list_of_hashed_files_from_an_older_reefline_still_reads(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    (workdir / "data.txt").write_bytes(b"a" * (2 * 1024 * 1024))
    agent_run(run_cli, openai_server, "true")
    [listed] = (Path(cli_env["REEFLINE_HOME"]) / "snapshots").glob("*/reefline-hashed.json")
    noted = json.loads(listed.read_text())
    assert len(noted["data.txt"]) == 5
    # As an older reefline wrote it: size, mtime, inode and mode, no ctime.
    listed.write_text(json.dumps({p: v[:4] for p, v in noted.items()}))
    out = agent_run(run_cli, openai_server, "echo b > b", extra=("--continue",))
    [files] = recorded(out.stdout)
    assert files is not None and [c["path"] for c in files["changes"]] == ["b"]
    assert json.loads(listed.read_text()) == noted  # looked at once again, and noted whole
