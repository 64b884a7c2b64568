"""Crash consistency: SIGKILL the real CLI at many points and check what the next run finds.

A loopback model (``tests.openai_server``) drives a bash-heavy agent with automatic
compaction in a 4000-token window. Each run is ``reefline -p ... --continue --json`` and gets
SIGKILLed at one point of a schedule:

* ``stream``   — while a reply is streaming (the server stalls mid-stream);
* ``bash``     — while a bash command runs (``sleep``);
* ``summary``  — while the summarizer request is pending (``compact/start`` is the last line);
* ``gate-summary`` / ``gate-replace`` — between ``compact/summary`` and ``compact/end``, right
  after the summary, and right after the checkpoint replaced the surface. These windows last
  microseconds, so the child is held there: its ``--json`` stdout is a pipe this test keeps
  full, and the CLI prints each event right after logging it, so it blocks in that write with
  the event logged and the next one not yet written (a pipe's capacity is counted in pages,
  so the test packs it to leave room for exactly one line; each ``compact/progress`` line of
  a summarizer call is let through that way);
* ``random``   — after a random delay (any point, including mid-write and start-up).

After every kill the log is reopened as the next process would (``reopen_and_check``), an
orphaned compaction bracket must show as ``interrupted`` in ``reefline timeline --json``, and
the following runs must work, including a new compaction once the context is over the
threshold. A sweep then reopens copies of the final log cut where a kill could leave it: at
line boundaries (the log is written one line per write), around every compaction and prune
and at sampled lines elsewhere, and mid-line (a torn tail).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import random
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent.log.session import Session
from compact.contract.registry import build_registry
from tests.held import Held
from tests.openai_server import OpenAIServer
from tests.reliability.conftest import (
    REEFLINE,
    descendants,
    hold,
    kill_groups,
    log_events,
    open_brackets,
    reopen_and_check,
    session_files,
    still_alive,
)

PAGE = 4096
WRITE_SYSCALL = {"x86_64": "1", "aarch64": "64"}
GATE_STOPS = ("compact/summary", "compact/end")
PROGRESS = "compact/progress"
WINDOW = "4000"
QUICK = ["seq 1 400", "ls -la", "seq 1 250", "echo hi", "seq 1 120", "pwd"]


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as s:
        s.summarize = True
        s.agent_commands = list(QUICK)
        yield s


_LAST_SEEN: dict[Path, tuple[int, dict[str, Any] | None]] = {}
"""Per log: its size when last read and the event read then. The log only grows (a repair
at open cuts a torn tail: another size), so an unchanged size is an unchanged last line;
the drivers poll every few milliseconds, and rereading an unchanged tail was most of this
test process's own work."""


def last_line(path: Path) -> dict[str, Any] | None:
    """The last complete line of the log, parsed (None when there is none yet)."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return None
    seen = _LAST_SEEN.get(path)
    if seen is not None and seen[0] == size:
        return seen[1]
    event = _read_last_line(path)
    _LAST_SEEN[path] = (size, event)
    return event


def _read_last_line(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - 65536))
            tail = f.read()
    except FileNotFoundError:
        return None
    end = tail.rfind(b"\n")
    if end < 0:
        return None
    start = tail.rfind(b"\n", 0, end) + 1
    try:
        event: dict[str, Any] = json.loads(tail[start:end])
    except ValueError:
        return None  # the window began mid-line; the next poll reads a fresh tail
    return event


class Child:
    """``reefline -p ... --json`` whose stdout is a pipe the test reads and can clog."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
        self.log = log
        read_fd, write_fd = os.pipe()
        self.capacity = fcntl.fcntl(read_fd, fcntl.F_GETPIPE_SZ)
        self.stderr_path = cwd.parent / f"stderr-{time.monotonic_ns()}"
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [REEFLINE, *args],
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=err,
            )
        # A second open file description of the pipe's write end: O_NONBLOCK on it must not
        # reach the child's stdout (flags live on the description, which the child shares).
        self.filler = os.open(f"/proc/self/fd/{write_fd}", os.O_WRONLY | os.O_NONBLOCK)
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        self.reader = read_fd
        self.buffer = b""
        self.printed: list[dict[str, Any]] = []
        self.reading = True

    # --- stdout -------------------------------------------------------------------------------

    def pump(self) -> None:
        """Read what the child printed (unless the pipe is being kept full)."""
        if not self.reading:
            return
        while True:
            try:
                chunk = os.read(self.reader, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                return
            self.buffer += chunk
            *lines, self.buffer = self.buffer.split(b"\n")
            # Filler is bare newlines: empty lines.
            self.printed += [json.loads(x) for x in lines if x.strip()]

    def drain(self) -> int:
        """Read everything in the pipe, filler included; return the byte count."""
        total = 0
        while True:
            try:
                chunk = os.read(self.reader, 1 << 16)
            except BlockingIOError:
                return total
            if not chunk:
                return total
            total += len(chunk)
            self.buffer += chunk
            *lines, self.buffer = self.buffer.split(b"\n")
            self.printed += [json.loads(x) for x in lines if x.strip()]

    def fill(self, limit: int | None = None) -> int:
        """Write newlines into the pipe until it is full (or ``limit`` bytes); stop reading."""
        self.reading = False
        written = 0
        for size in (PAGE, 1):
            while limit is None or written + size <= limit:
                try:
                    written += os.write(self.filler, b"\n" * size)
                except BlockingIOError:
                    break
        return written

    def pack_for_one_line(self, length: int) -> bool:
        """With the child stopped and blocked printing a ``length``-byte line: empty the pipe,
        then fill it so that exactly that line fits and nothing after it. False when the line
        is too long for this trick (a write over a page is not atomic)."""
        if length >= PAGE or not self.wait_stopped():
            return False
        self.drain()
        pages = self.capacity // PAGE
        try:
            for _ in range(pages - 1):
                os.write(self.filler, b"\n" * PAGE)
            # The last page keeps `length` free bytes at its end; the line merges into it.
            os.write(self.filler, b"\n" * (PAGE - length))
        except BlockingIOError:
            return False  # not the pipe we expected: kill at the summary instead
        return True

    def wait_stopped(self, timeout: float = 5.0) -> bool:
        """Wait until every thread of the child is in the stopped state (after SIGSTOP,
        which is delivered asynchronously)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = []
            for task in os.listdir(f"/proc/{self.proc.pid}/task"):
                with (
                    contextlib.suppress(OSError),
                    open(f"/proc/{self.proc.pid}/task/{task}/stat", "rb") as f,
                ):
                    stat = f.read()
                    states.append(stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3])
            if states and all(s in (b"T", b"t") for s in states):
                return True
            time.sleep(0.002)
        return False

    def stopped_in_write(self, timeout: float = 5.0) -> bool:
        """Wait until the child sleeps in a write to its stdout (``write(1, ...)`` as
        /proc/PID/task/TID/syscall shows it); True when the architecture is not known."""
        number = WRITE_SYSCALL.get(platform.machine())
        if number is None:
            return True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                for task in os.listdir(f"/proc/{self.proc.pid}/task"):
                    with open(f"/proc/{self.proc.pid}/task/{task}/syscall") as f:
                        parts = f.read().split()
                    if parts[:2] == [number, "0x1"]:
                        return True
            except OSError:
                return False
            time.sleep(0.01)
        return False

    # --- ending -------------------------------------------------------------------------------

    def kill(self) -> list[Held]:
        """SIGKILL the CLI (only the CLI, as a crash would); return the orphans it leaves."""
        orphans = hold(descendants(self.proc.pid))
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        return orphans

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.filler)
        with contextlib.suppress(OSError):
            os.close(self.reader)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


@dataclass
class Plan:
    kind: str
    delay_s: float = 0.0
    stall_step: int = 1
    sleep_at: int = 0


@dataclass
class Tally:
    kills: dict[str, int] = field(default_factory=dict)
    landed: dict[str, int] = field(default_factory=dict)
    completed_runs: int = 0
    compactions_after_orphan: int = 0
    orphans: int = 0
    torn: int = 0


def drive(child: Child, until: Callable[[dict[str, Any] | None], bool], timeout: float) -> bool:
    """Pump stdout and poll the log until ``until(last logged event)``; False if the child
    exited first (or the time ran out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        child.pump()
        if until(last_line(child.log)):
            return True
        if child.proc.poll() is not None:
            child.pump()
            return False
        time.sleep(0.003)
    return False


def _after(seq: int, kinds: tuple[str, ...]) -> Callable[[dict[str, Any] | None], bool]:
    """The last logged event is one of ``kinds`` and newer than ``seq``."""
    return lambda e: e is not None and e["seq"] > seq and e["type"] in kinds


def is_type(kind: str, **data: Any) -> Callable[[dict[str, Any] | None], bool]:
    def check(event: dict[str, Any] | None) -> bool:
        return (
            event is not None
            and event["type"] == kind
            and all(str(v) in str(event["data"].get(k)) for k, v in data.items())
        )

    return check


def stable(child: Child, seconds: float = 0.15) -> dict[str, Any] | None:
    """The last logged event once the log has stopped growing for ``seconds``."""
    size = -1
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        now = child.log.stat().st_size
        if now == size:
            break
        size = now
        time.sleep(seconds)
    return last_line(child.log)


class CrashRig:
    """One session driven through a schedule of kills and normal runs."""

    def __init__(self, server: OpenAIServer, env: dict[str, str], cwd: Path) -> None:
        self.server = server
        self.env = env
        self.cwd = cwd
        self.home = Path(env["REEFLINE_HOME"])
        self.tally = Tally()
        self.turns = 0
        self.log: Path | None = None
        self.rng = random.Random(6)
        self.calls = 0
        self.orphans: set[str] = set()

    def args(self) -> list[str]:
        self.turns += 1
        prompt = f"task {self.turns}: look around"
        base = ["-p", prompt, "--json", "--approve", "auto", "--context-window", WINDOW]
        model = ["--base-url", self.server.base_url, "--model", "m"]
        return [*base, *model, *(["--continue"] if self.log else [])]

    def first_run(self) -> None:
        """Start a new session (``self.log`` None) and follow it."""
        old = set(session_files(self.env))
        out = subprocess.run(
            [REEFLINE, *self.args()], cwd=self.cwd, env=self.env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        [self.log] = set(session_files(self.env)) - old
        self.tally.completed_runs += 1

    def normal_run(self) -> list[dict[str, Any]]:
        """A run nobody kills: it must succeed. Returns the events it logged."""
        assert self.log is not None
        self.server.summary_stall_s = 0.0
        self.server.agent_commands = list(QUICK)
        before = len(log_events(self.log))
        out = subprocess.run(
            [REEFLINE, *self.args()],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr
        self.tally.completed_runs += 1
        events = log_events(self.log)
        # After the turn, at most a summary written ahead and discarded as the session ended.
        last = max(i for i, e in enumerate(events) if not e["type"].startswith("compact/"))
        assert events[last]["type"] == "turn/end" and events[last]["data"]["reason"] == "completed"
        assert all(e["data"].get("compaction_id") for e in events[last + 1 :])
        assert events[-1]["type"] == "turn/end" or events[-1]["data"].get("discarded")
        return events[before:]

    def crash(self, plan: Plan) -> str | None:
        """Run once and SIGKILL at ``plan``; return where it landed (None: the run ended on
        its own before the kill point came, which must then be a success)."""
        assert self.log is not None
        server = self.server
        # A summary that never comes (``summary``), or one that comes after a pause long
        # enough to clog the child's stdout while it waits (the gates).
        stall = {"summary": 30.0, "gate-summary": 0.3, "gate-replace": 0.3}
        server.summary_stall_s = stall.get(plan.kind, 0.0)
        commands = list(QUICK)
        if plan.kind == "bash":
            commands.insert(plan.sleep_at, "sleep 30")
        server.agent_commands = commands
        if plan.kind == "stream":
            server.push(
                *[
                    {
                        "tool_calls": [
                            {"name": "bash", "arguments": {"command": c}, "id": self.call_id()}
                        ]
                    }
                    for c in QUICK[: plan.stall_step - 1]
                ],
                {"text": "Working on it, " * 8, "chunk_size": 3, "stall_after": 4, "stall_s": 30},
            )
        child = Child(self.args(), self.env, self.cwd, self.log)
        landed: str | None = None
        orphans: list[Held] = []
        try:
            landed = self._drive(child, plan)
            if landed is None:
                # The kill point never came: the run must have ended well.
                assert child.proc.wait(30) == 0, (plan, child.stderr)
                self.tally.completed_runs += 1
            else:
                orphans = child.kill()
        finally:
            server.queue.clear()
            child.close()
            kill_groups(orphans)
        assert not still_alive(orphans)
        if landed is not None:
            self.tally.kills[plan.kind] = self.tally.kills.get(plan.kind, 0) + 1
            self.tally.landed[landed] = self.tally.landed.get(landed, 0) + 1
            self.after_kill()
        return landed

    def _drive(self, child: Child, plan: Plan) -> str | None:
        kind = plan.kind
        if kind == "random":
            # Time from the moment this process opened the log (it appends session/resume),
            # so the delays spread over the turn rather than over interpreter start-up.
            size = child.log.stat().st_size
            if not drive(child, lambda _: child.log.stat().st_size != size, 30):
                return None
            deadline = time.monotonic() + plan.delay_s
            while time.monotonic() < deadline and child.proc.poll() is None:
                child.pump()
                time.sleep(0.002)
            if child.proc.poll() is not None:
                return None
            event = last_line(child.log)
            return f"random:{event['type'] if event else '-'}"
        if kind == "stream":

            def streaming(_: dict[str, Any] | None) -> bool:
                return not self.server.queue  # the stalled reply has been taken

            if not drive(child, streaming, 30):
                return None
            time.sleep(0.1 + self.rng.random() * 0.2)  # the reply is now stalled mid-stream
            event = stable(child, 0.05)
            assert event is not None and event["type"] in ("request/header", "step/start")
            return "stream"
        if kind == "bash":
            if not drive(child, is_type("tool/start", arguments="sleep 30"), 30):
                return None
            time.sleep(self.rng.random() * 0.2)
            return "bash"
        if kind == "summary":
            if not drive(child, is_type("compact/start"), 30):
                return None
            time.sleep(self.rng.random() * 0.3)
            return "summary"
        # The gates: hold the child right after compact/summary (and after the replacement).
        if not drive(child, lambda _: any(e["type"] == "compact/start" for e in child.printed), 30):
            return None
        child.fill()  # the child now waits for the summary, then blocks printing it
        seen = -1
        while True:
            if not drive(child, _after(seen, (*GATE_STOPS, PROGRESS)), 30):
                return None
            event = last_line(child.log)
            assert event is not None
            if event["type"] != PROGRESS:
                break
            # One summarizer call done (another chunk may follow): the child blocks printing
            # its progress line. Let exactly that line through, so it blocks on the next one.
            seen = event["seq"]
            assert child.stopped_in_write(), "the child did not block printing compact/progress"
            if not self._let_one_line_through(child):
                return "gate-progress"
        if last_line(child.log)["type"] == "compact/end":  # type: ignore[index]
            return "gate-missed"  # the compaction failed on its own: a kill point all the same
        assert child.stopped_in_write(), "the child did not block printing compact/summary"
        event = stable(child)
        assert event is not None and event["type"] == "compact/summary"
        if kind == "gate-summary":
            return "gate-summary"
        if not self._let_one_line_through(child):
            return "gate-summary"
        assert drive(child, is_type("user/message", source="compact"), 10)
        assert child.stopped_in_write(), "the child did not block printing the checkpoint"
        event = stable(child)
        assert event is not None and event["type"] == "user/message", event
        return "gate-replace"

    def _let_one_line_through(self, child: Child) -> bool:
        """The child is blocked printing the log's last line: make room for exactly it."""
        line = self.log_tail_line()
        os.kill(child.proc.pid, signal.SIGSTOP)
        try:
            return child.pack_for_one_line(len(line) + 1)
        finally:
            os.kill(child.proc.pid, signal.SIGCONT)

    def call_id(self) -> str:
        self.calls += 1
        return f"pushed_{self.calls}"

    def log_tail_line(self) -> bytes:
        assert self.log is not None
        data = self.log.read_bytes()
        return data[data.rstrip(b"\n").rfind(b"\n") + 1 :].rstrip(b"\n")

    def after_kill(self) -> None:
        assert self.log is not None
        if not self.log.read_bytes().endswith(b"\n"):
            self.tally.torn += 1
        session = reopen_and_check(self.home, self.log.stem)
        session.close()
        brackets = [b for b in open_brackets(log_events(self.log)) if b not in self.orphans]
        self.orphans.update(brackets)
        if brackets:
            self.tally.orphans += 1
            if self.tally.orphans <= 3:  # the rest are checked together at the end
                self.check_interrupted(brackets)

    def check_interrupted(self, brackets: list[str]) -> None:
        """``reefline timeline --json`` shows each orphaned bracket as ``interrupted``."""
        assert self.log is not None
        out = subprocess.run(
            [REEFLINE, "timeline", self.log.stem, "--json"],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert out.returncode == 0, out.stderr
        status = {r["compaction_id"]: r["status"] for r in json.loads(out.stdout)}
        for compaction_id in brackets:
            assert status[compaction_id] == "interrupted", status


SCHEDULE = [
    # Killed runs still log most of a turn, so these also grow the context.
    Plan("stream", stall_step=1),
    Plan("bash", sleep_at=0),
    Plan("random", delay_s=0.12),
    Plan("stream", stall_step=3),
    Plan("bash", sleep_at=2),
    Plan("random", delay_s=0.2),
    # Over the threshold now (attempts run until a compaction starts); the summary kills
    # leave it there, so they chain; the normal run after them must compact.
    Plan("summary"),
    Plan("gate-summary"),
    Plan("summary"),
    Plan("random", delay_s=0.05),
    Plan("stream", stall_step=2),
    Plan("bash", sleep_at=4),
    Plan("random", delay_s=0.16),
    Plan("gate-replace"),
    Plan("stream", stall_step=4),
    Plan("bash", sleep_at=1),
    Plan("random", delay_s=0.09),
    Plan("gate-summary"),
    Plan("summary"),
    Plan("gate-summary"),
    Plan("random", delay_s=0.22),
    Plan("stream", stall_step=1),
    Plan("bash", sleep_at=5),
    Plan("random", delay_s=0.03),
    Plan("gate-replace"),
    Plan("stream", stall_step=5),
    Plan("bash", sleep_at=3),
    Plan("random", delay_s=0.14),
    Plan("random", delay_s=0.07),
    Plan("gate-replace"),
    Plan("random", delay_s=0.18),
    Plan("summary"),
]


def run_schedule(rig: CrashRig, schedule: list[Plan], *, normal_every: int = 5) -> None:
    rig.first_run()
    seen_orphans = 0
    for kills, plan in enumerate(schedule, start=1):
        next_kind = schedule[kills].kind if kills < len(schedule) else None
        for _attempt in range(8):  # the compaction kinds wait until the context is big enough
            if rig.crash(plan) is not None:
                break
            if plan.kind == "random":  # the run was quicker than the delay
                plan = Plan("random", delay_s=plan.delay_s / 2)
        else:
            pytest.fail(f"{plan.kind}: the kill point never came")
        orphans = len(rig.orphans)
        orphaned = orphans > seen_orphans
        holding = ("summary", "gate-summary")  # kinds that leave the context over the threshold
        chained = plan.kind in holding and next_kind in holding
        last = next_kind is None
        if kills % normal_every == 0 or (orphaned and not chained) or last:
            seen_orphans = orphans
            new = rig.normal_run()
            if orphaned and any(e["type"] == "compact/start" for e in new):
                # A summary written ahead and discarded when the run ended is not the one.
                ends = [
                    e for e in new if e["type"] == "compact/end" and not e["data"].get("discarded")
                ]
                assert ends and ends[-1]["data"].get("error") is None, ends
                rig.tally.compactions_after_orphan += 1


def sweep_cuts(rig: CrashRig, tmp_path: Path) -> None:
    """Every kill leaves a prefix of the log: a whole number of lines, or a torn last line
    (a write cut short). Reopen copies of the final log cut at every line around each
    compaction, at sampled lines elsewhere, and mid-line, and check each one; then let the
    real CLI continue from a torn copy."""
    assert rig.log is not None
    data = rig.log.read_bytes()
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    events = log_events(rig.log)
    rng = random.Random(7)
    # Inside compaction brackets (start, summary, checkpoint, end) and prune pairs.
    near = sorted(
        i + d
        for i, e in enumerate(events)
        if e["type"] in ("compact/start", "compact/progress", "compact/summary", "compact/prune")
        for d in (0, 1)
        if i + d < len(ends)
    )
    picks = sorted(
        set(rng.sample(near, min(40, len(near)))) | set(rng.sample(range(len(ends)), 25))
    )
    home = tmp_path / "sweep"
    sid = rig.log.stem
    checked = torn = mid_line = 0
    for k, i in enumerate(picks):
        cuts = [ends[i]]
        nxt = ends[i + 1] if i + 1 < len(ends) else None
        # Every third pick by position, not by line number: how many lines fall on a
        # multiple of three depends on the run's timing.
        if nxt is not None and k % 3 == 0:
            cuts.append(rng.randrange(ends[i] + 1, nxt))  # mid-line: a torn tail
            mid_line += 1
        for cut in cuts:
            folder = home / "sessions"
            if home.exists():
                for f in folder.iterdir():
                    f.unlink()
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{sid}.jsonl").write_bytes(data[:cut])
            session = reopen_and_check(home, sid)
            torn += session.report.torn_bytes > 0
            session.close()
            checked += 1
    assert checked >= 50 and mid_line >= 10 and torn == mid_line, (checked, mid_line, torn)
    # The real CLI on a torn copy: it reports the side file and carries on.
    for f in (home / "sessions").iterdir():
        f.unlink()
    (home / "sessions" / f"{sid}.jsonl").write_bytes(data[: ends[-2] + 17])
    out = subprocess.run(
        [REEFLINE, "-p", "after the tear", "--continue", "--approve", "auto",
         "--context-window", WINDOW, "--base-url", rig.server.base_url, "--model", "m"],
        cwd=rig.cwd, env={**rig.env, "REEFLINE_HOME": str(home)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "incomplete line (17 bytes" in out.stderr
    [side] = (home / "sessions").glob("*.torn-*")
    assert side.read_bytes() == data[ends[-2] : ends[-2] + 17]


def test_sigkill_at_many_points_loses_nothing(
    server: OpenAIServer, cli_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    rig = CrashRig(server, cli_env, workdir)
    run_schedule(rig, SCHEDULE)
    tally = rig.tally
    assert sum(tally.kills.values()) >= 30, tally
    for kind in ("stream", "bash", "summary", "gate-summary", "gate-replace", "random"):
        assert tally.kills.get(kind, 0) >= 3, tally
    assert tally.landed.get("gate-replace", 0) >= 2, tally
    assert tally.orphans >= 5 and tally.compactions_after_orphan >= 2, tally
    rig.check_interrupted(sorted(rig.orphans))
    sweep_cuts(rig, tmp_path)
    # The whole history is still one well-formed log.
    assert rig.log is not None
    session = Session.open(rig.home, rig.log.stem, registry=build_registry(), readonly=True)
    assert session.report.torn_bytes == 0
    print(tally)


@pytest.mark.soak
def test_sigkill_soak(server: OpenAIServer, cli_env: dict[str, str], workdir: Path) -> None:
    rig = CrashRig(server, cli_env, workdir)
    rng = random.Random(1234)
    kinds = ["random", "stream", "bash", "summary", "gate-summary", "gate-replace"]
    schedule = [
        Plan(
            rng.choice(kinds),
            delay_s=rng.uniform(0.0, 0.3),
            stall_step=rng.randint(1, 6),
            sleep_at=rng.randint(0, len(QUICK)),
        )
        for _ in range(150)
    ]
    # Several sessions: the loopback summarizer quotes every request of a session, so one
    # session of hundreds of turns would outgrow the 4000-token window.
    for start in range(0, len(schedule), 30):
        rig.log = None
        run_schedule(rig, schedule[start : start + 30], normal_every=5)
    assert sum(rig.tally.kills.values()) >= 150
    print(rig.tally)
