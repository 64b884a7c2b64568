"""Disk faults: the session log stops accepting writes in the middle of a session.

Two real mechanisms, no mocks: ``RLIMIT_FSIZE`` (set in a wrapper that then execs the CLI,
with SIGXFSZ ignored, so a write past the limit fails with EFBIG as a full quota would; root
ignores chmod, but not this), and where the machine allows it a real full disk (ENOSPC): a
tiny tmpfs mounted in a private mount namespace.

For every failure point: the user sees one clear error naming the log (stderr), the CLI
exits non-zero and prints no answer, no byte already written changes, no partial line is
left behind, ``--json`` printed only events that reached the log, and the next run on a
healthy disk continues the session (repairing the failed turn if it was left open).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.log.session import Session
from agent.turns import unanswered_tool_calls
from compact.contract.registry import build_registry
from tests.openai_server import OpenAIServer
from tests.reliability.conftest import REEFLINE, log_events, only_session, session_files

LIMITED = (
    "import os, resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
    "limit = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)
BIG_OUTPUT = "seq 1 1200"  # a ~6 KB tool result


class Rig:
    def __init__(self, server: OpenAIServer, env: dict[str, str], cwd: Path) -> None:
        self.server = server
        self.env = env
        self.cwd = cwd
        self.runs = 0

    def run(
        self, *extra: str, limit: int | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        self.runs += 1
        self.server.queue.clear()
        self.server.push(
            {"tool_calls": [{"id": f"big{self.runs}", "name": "bash",
                             "arguments": {"command": BIG_OUTPUT}}]},
            {"text": f"answer {self.runs}"},
        )  # fmt: skip
        args = ["-p", "count to 1200", "--approve", "auto", "--base-url", self.server.base_url]
        command = [REEFLINE, *args, "--model", "m", *extra]
        if limit is not None:
            command = [sys.executable, "-c", LIMITED, str(limit), *command]
        out = subprocess.run(
            command,
            cwd=self.cwd,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "Traceback" not in out.stderr, out.stderr
        return out

    def healthy_continue(self, home: Path | None = None) -> list[dict]:
        """A run on a healthy disk continues the session; returns what it logged."""
        env = {"REEFLINE_HOME": str(home)} if home else None
        log = only_session({**self.env, **(env or {})})
        before = len(log_events(log))
        out = self.run("--continue", env=env)
        assert out.returncode == 0, out.stderr
        assert out.stdout == f"answer {self.runs}\n"
        events = log_events(log)
        assert events[-1]["type"] == "turn/end" and events[-1]["data"]["reason"] == "completed"
        return events[before:]


def assert_failed_cleanly(
    out: subprocess.CompletedProcess[str], log: Path, before: bytes, *, json_mode: bool
) -> list[dict]:
    """The checks every failed write must pass; returns the events the run logged."""
    assert out.returncode != 0, out.stdout
    assert "File too large" in out.stderr or "No space left" in out.stderr, out.stderr
    assert str(log) in out.stderr  # which file could not be written
    after = log.read_bytes()
    assert after.startswith(before), "bytes already written changed"
    assert after.endswith(b"\n"), "a partial line was left behind"
    logged = after[len(before) :].decode().splitlines()
    if json_mode:
        printed = out.stdout.splitlines()
        # The stream opens with the session's own first line (its id), then this run's.
        assert printed and printed[0] == before.decode().splitlines()[0]
        # A running command's output lines are transient, never logged.
        printed = [p for p in printed[1:] if json.loads(p)["type"] != "tool/output"]
        # Only events that reached the log were printed (observers run after the write).
        assert printed == logged[len(logged) - len(printed) :]
        assert not any(
            e["type"] == "turn/end" and e["data"]["reason"] == "completed"
            for e in map(json.loads, printed)
        )
    else:
        assert out.stdout == ""  # no answer: the turn did not succeed
    # What is on disk is a consistent log: it loads, and every call has its result.
    session = Session.open(log.parent.parent, log.stem, registry=build_registry(), readonly=True)
    assert session.report.torn_bytes == 0
    if session.events[-1].type == "turn/end":
        assert unanswered_tool_calls(session.derive_messages()) == []
    return [json.loads(x) for x in logged]


def offsets(lines: list[bytes]) -> dict[str, int]:
    """Byte offset (from the run's first appended line) where each event type first starts."""
    out: dict[str, int] = {}
    pos = 0
    for line in lines:
        out.setdefault(json.loads(line)["type"], pos)
        pos += len(line) + 1
    return out


@pytest.fixture
def rig(openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path) -> Rig:
    return Rig(openai_server, cli_env, workdir)


def test_log_stops_accepting_writes_at_every_point_of_a_turn(
    rig: Rig, cli_env: dict[str, str]
) -> None:
    assert rig.run().returncode == 0  # creates the session (and warms the tiktoken cache)
    log = only_session(cli_env)
    # A reference turn, to learn where each event of a turn lands.
    start = log.stat().st_size
    assert rig.run("--continue").returncode == 0
    ref = offsets(log.read_bytes()[start:].splitlines())
    result_at = ref["tool/result"]

    # (limit past the current size, json mode, what must be true afterwards)
    points = [
        ("at open", 0, False),
        ("first step", ref["step/start"] + 10, True),
        ("tool result, room for the closers", result_at + 1500, True),
        ("tool result, no room left", result_at + 60, False),
        ("final answer", ref["step/end"] + 3 * (ref["step/start"] - ref["user/message"]), True),
    ]
    for name, offset, json_mode in points:
        before = log.read_bytes()
        extra = ("--continue", "--json") if json_mode else ("--continue",)
        out = rig.run(*extra, limit=len(before) + offset)
        logged = assert_failed_cleanly(out, log, before, json_mode=json_mode)
        kinds = [e["type"] for e in logged]
        if name == "at open":
            # The resume could not be recorded: refused at start-up, nothing written.
            assert (
                logged == [] and "cannot open the session log" in out.stderr and out.returncode == 1
            )
            continue
        if name == "tool result, room for the closers":
            # The big result did not fit; the turn still closed with the call answered.
            assert kinds[-3:] == ["tool/result", "step/end", "turn/end"], kinds
            closer = logged[-3]["data"]
            assert closer["is_error"] and "could not be written" in closer["content"]
            assert "could not be written" in logged[-1]["data"]["error"]
        if name == "tool result, no room left":
            assert kinds[-1] == "tool/start"  # the turn stays open: the next run repairs it
        new = rig.healthy_continue()
        if kinds[-1] != "turn/end":
            repairs = next(e for e in new if e["type"] == "turn/end")
            assert repairs["data"]["reason"] == "interrupted"
        for event in new:
            if event["type"] == "tool/result" and "big" in event["data"]["call_id"]:
                assert event["data"].get("exit_code") in (0, None)
    session = Session.open(log.parent.parent, log.stem, registry=build_registry())
    assert session.report.repaired == [] and session.report.torn_bytes == 0
    assert unanswered_tool_calls(session.derive_messages()) == []
    session.close()


def test_a_session_whose_first_line_cannot_be_written_leaves_no_log(
    rig: Rig, cli_env: dict[str, str]
) -> None:
    """A full disk when a new session writes its ``session/start``: the run fails with a
    message, and no empty log is left for ``--continue`` to stumble over once there is room
    again."""
    out = rig.run(limit=16)
    assert out.returncode != 0 and "session log" in out.stderr, out.stderr
    assert session_files(cli_env) == []
    assert rig.run().returncode == 0  # room again: a new session starts
    assert rig.run("--continue").returncode == 0  # and goes on
    assert len(session_files(cli_env)) == 1


def test_spill_file_that_cannot_be_written_does_not_lose_the_result(
    rig: Rig, cli_env: dict[str, str]
) -> None:
    rig.server.queue.clear()
    command = "seq 1 200000"  # 1.3 MB: spills; the spill file hits the 200 KB file limit
    rig.server.push(
        {"tool_calls": [{"id": "s", "name": "bash", "arguments": {"command": command}}]},
        {"text": "spilled"},
    )
    args = ["-p", "flood", "--approve", "auto", "--base-url", rig.server.base_url, "--model", "m"]
    out = subprocess.run(
        [sys.executable, "-c", LIMITED, str(200_000), REEFLINE, *args],
        cwd=rig.cwd, env=cli_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout == "spilled\n"
    result = next(e for e in log_events(only_session(cli_env)) if e["type"] == "tool/result")
    content = result["data"]["content"]
    assert "could not be saved" in content and "File too large" in content
    assert content.startswith("1\n2\n3\n") and "200000" in content  # head and tail kept
    assert "[exit 0" in content


def _can_mount_tmpfs(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    out = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {probe}"],
        capture_output=True,
    )
    return out.returncode == 0


DISK_FULL = """
set -e
mount -t tmpfs -o size=1m tmpfs "$MNT"
cp -a "$SRC/." "$MNT/"
avail=$(df --output=avail -B1 "$MNT" | tail -n 1)
head -c $((avail - KEEP)) /dev/zero > "$MNT/filler"
set +e
REEFLINE_HOME="$MNT" "$@"
rc=$?
rm -f "$MNT/filler"
cp -a "$MNT/." "$OUT/"
exit $rc
"""


def test_disk_full_mid_turn(rig: Rig, cli_env: dict[str, str], tmp_path: Path) -> None:
    if not _can_mount_tmpfs(tmp_path):
        pytest.skip("cannot mount a tmpfs in a private mount namespace here")
    assert rig.run().returncode == 0
    home = Path(cli_env["REEFLINE_HOME"])
    log = only_session(cli_env)
    before = log.read_bytes()
    mnt, out_home = tmp_path / "mnt", tmp_path / "after"
    mnt.mkdir()
    out_home.mkdir()
    rig.server.queue.clear()
    rig.server.push(
        {"tool_calls": [{"id": "full", "name": "bash", "arguments": {"command": BIG_OUTPUT}}]},
        {"text": "never"},
    )
    args = ["-p", "fill it", "--continue", "--json", "--approve", "auto"]
    command = [REEFLINE, *args, "--base-url", rig.server.base_url, "--model", "m"]
    # One free page beyond the log's own last page: the turn starts, the big result cannot fit.
    env = {**cli_env, "MNT": str(mnt), "SRC": str(home), "OUT": str(out_home), "KEEP": "4096"}
    out = subprocess.run(
        ["unshare", "-m", "bash", "-c", DISK_FULL, "disk-full", *command],
        cwd=rig.cwd, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "Traceback" not in out.stderr, out.stderr
    after_log = out_home / "sessions" / log.name
    assert "No space left on device" in out.stderr, (out.returncode, out.stderr)
    out.stderr = out.stderr.replace(str(mnt), str(out_home))  # the path as seen from outside
    logged = assert_failed_cleanly(out, after_log, before, json_mode=True)
    assert any(e["type"] == "tool/start" for e in logged)
    # Space again: the session goes on from the copy.
    rig.healthy_continue(out_home)


def test_a_failed_result_write_does_not_brick_the_session(
    rig: Rig, cli_env: dict[str, str]
) -> None:
    """The log stops taking writes while a command runs — its result, the error results and
    the turn's end all fail — then writes work again (RLIMIT_FSIZE lowered and raised on the
    running process, as a full disk that is then cleared). The same process (the REPL) goes
    on: the call left unanswered on the surface gets its error result before anything else
    is sent; so does the next process."""
    assert rig.run().returncode == 0
    log = only_session(cli_env)
    rig.server.queue.clear()
    rig.server.push(
        {"tool_calls": [{"id": "lost", "name": "bash",
                         "arguments": {"command": f"sleep 1; {BIG_OUTPUT}"}}]},
        {"text": "recovered after the disk filled"},
    )  # fmt: skip
    unlimited = str(resource.RLIM_INFINITY)
    command = [sys.executable, "-c", LIMITED, unlimited, REEFLINE, "--plain", "--continue",
               "--approve", "auto", "--base-url", rig.server.base_url, "--model", "m"]  # fmt: skip
    proc = subprocess.Popen(
        command, cwd=rig.cwd, env=rig.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write("count to 1200\n")
    proc.stdin.flush()
    deadline = time.monotonic() + 30
    while not any(e["type"] == "tool/start" for e in log_events(log)[-3:]):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    size = log.stat().st_size
    # Only the soft limit: raising it back needs no privilege.
    resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
    deadline = time.monotonic() + 30
    while "cannot write the session log" not in (out := _peek(proc)):
        assert time.monotonic() < deadline and proc.poll() is None, out
        time.sleep(0.05)
    assert log.stat().st_size == size
    resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)
    out, err = proc.communicate("and now?\n/quit\n", timeout=60)
    out = _peeked.pop(proc.pid, "") + out
    assert "Traceback" not in err, err
    assert "recovered after the disk filled" in out, (out, err)
    session = Session.open(log.parent.parent, log.stem, registry=build_registry(), readonly=True)
    assert unanswered_tool_calls(session.derive_messages()) == []
    # The turn whose end could not be written was closed before the next one opened.
    turns = [e.type for e in session.events if e.type in ("turn/start", "turn/end")]
    assert turns == ["turn/start", "turn/end"] * (len(turns) // 2), turns
    assert any(e.type == "turn/end" and e.data.reason == "interrupted" for e in session.events)
    # The request that recovered carried the call with its error result right after it.
    messages = rig.server.requests[-1]["messages"]
    i = next(i for i, m in enumerate(messages) if any(
        c["id"] == "lost" for c in m.get("tool_calls") or ()))  # fmt: skip
    assert messages[i + 1]["role"] == "tool" and messages[i + 1]["tool_call_id"] == "lost"
    assert "writing it to the session log failed" in messages[i + 1]["content"]
    # And the next process too.
    rig.healthy_continue()


_peeked: dict[int, str] = {}


def _peek(proc: subprocess.Popen[str]) -> str:
    """What ``proc`` printed so far (non-blocking read of its stdout)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        chunk = b""
    finally:
        os.set_blocking(fd, True)
    _peeked[proc.pid] = _peeked.get(proc.pid, "") + chunk.decode(errors="replace")
    return _peeked[proc.pid]
