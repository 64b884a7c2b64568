"""Session log: load + repair + surface fold of a 100,000-event log, and append throughput.

The load runs in a fresh subprocess (so peak RSS is the load's own) next to a baseline that
only ``json.loads`` every line of the same file, in the same run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent.log.session import Session
from tests.bench.report import Figure

EVENTS = 100_000
REPLACES = 100
APPENDS = 10_000

LOAD = """
import sys, time
from pathlib import Path
from agent.log.session import Session
t = time.perf_counter()
s = Session.open(Path(sys.argv[1]), sys.argv[2])
n = len(s.derive_messages())
dt = time.perf_counter() - t
# VmHWM, not ru_maxrss: Linux carries a forking parent's peak into the child's ru_maxrss.
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(dt, int(hwm.split()[1]) / 1024, len(s.events), n)
"""

BASELINE = """
import json, sys, time
t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    rows = [json.loads(line) for line in f]
dt = time.perf_counter() - t
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(dt, int(hwm.split()[1]) / 1024, len(rows))
"""

OUTPUT = "total 48\n-rw-r--r-- 1 dev dev 1234 Nov 29 12:00 main.py\n" * 9


def build(home: Path, events: int, replaces: int) -> Session:
    """A realistic mix: turns of steps with a tool call and a ~300-byte result, user prompts,
    and a head-anchored checkpoint replace every ``events / replaces`` events."""
    s = Session.create(home, cwd="/src/project")
    every = events // replaces
    turn = 0
    next_replace = every
    while len(s.events) < events - 12:
        turn += 1
        s.append("turn/start", {"turn": turn})
        s.append("user/message", {"content": f"turn {turn}: please look at the build output"})
        for step in (1, 2):
            s.append("step/start", {"turn": turn, "step": step})
            cid = f"call_{turn}_{step}"
            s.append(
                "assistant/message",
                {
                    "turn": turn,
                    "step": step,
                    "text": "Checking the files to see what the build does with the header parser.",
                    "model": "gpt-4.1",
                    "tool_calls": [
                        {"id": cid, "name": "bash", "arguments": '{"command": "ls -la"}'}
                    ],
                    "finish_reason": "tool_calls",
                    "usage": {"prompt_tokens": 1200 + turn, "completion_tokens": 40},
                },
            )
            s.append(
                "tool/start",
                {
                    "turn": turn,
                    "step": step,
                    "call_id": cid,
                    "name": "bash",
                    "arguments": '{"command": "ls -la"}',
                },
            )
            s.append(
                "tool/result",
                {
                    "turn": turn,
                    "step": step,
                    "call_id": cid,
                    "name": "bash",
                    "content": OUTPUT,
                    "exit_code": 0,
                    "duration_s": 0.01,
                },
            )
            s.append("step/end", {"turn": turn, "step": step})
        s.append("turn/end", {"turn": turn, "reason": "completed"})
        if len(s.events) >= next_replace and len(s.surface) > 4:
            next_replace += every
            nodes = list(s.surface)
            span = nodes[: len(nodes) - 3]
            s.append(
                "user/message",
                {"content": "<compacted-summary>…</compacted-summary>", "source": "compact"},
                surface_op={"op": "replace", "start": span[0], "end": span[-1]},
                source_event_seqs=sorted(span),
            )
    # Leave the tail turn open so the load has something to repair.
    s.append("turn/start", {"turn": turn + 1})
    s.append("user/message", {"content": "one more"})
    s.close()
    return s


def run_child(code: str, *args: str) -> list[float]:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    )
    return [float(x) for x in out.stdout.split()]


def run() -> list[Figure]:
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        session = build(home, EVENTS, REPLACES)
        lines = session.path.read_bytes().count(b"\n")
        size = session.path.stat().st_size
        loads, base = [], []
        rss = 0.0
        for _ in range(3):
            # Each open appends closers + resume; reopen the pristine copy every time.
            pristine = session.path.read_bytes()
            b = run_child(BASELINE, str(session.path))
            t = run_child(LOAD, str(home), session.id)
            session.path.write_bytes(pristine)
            loads.append(t[0])
            base.append(b[0])
            rss = max(rss, t[1])
        load, baseline = sorted(loads)[1], sorted(base)[1]
        ratio = load / baseline
        group = (
            f"Session log ({lines:,} events, {size / lines:.0f} bytes/event, {REPLACES} replaces)"
        )
        figures.append(
            Figure(
                group,
                "load + repair + surface fold + derive",
                load,
                "s",
                "json.loads of every line",
                baseline,
                "ratio ≤ 4",
                ratio <= 4,
            )
        )
        figures.append(
            Figure(group, "peak RSS of the load", rss, "MB", target="≤ 400 MB", ok=rss <= 400)
        )

        s = Session.create(home, cwd="/src")
        t0 = time.perf_counter()
        for i in range(APPENDS):
            s.append("user/message", {"content": f"message {i} " + "x" * 200})
        dt = time.perf_counter() - t0
        s.close()
        raw = home / "raw.jsonl"
        line = json.dumps(
            {
                "seq": 1,
                "type": "user/message",
                "time": 0.0,
                "data": {"content": "message 1 " + "x" * 200},
                "surface_op": {"op": "append"},
            }
        )
        t0 = time.perf_counter()
        with open(raw, "a", buffering=1) as f:
            for _ in range(APPENDS):
                f.write(line + "\n")
                f.flush()
        raw_dt = time.perf_counter() - t0
        figures.append(
            Figure(
                "Session log appends",
                f"append {APPENDS:,} events",
                APPENDS / dt,
                "events/s",
                "raw line write+flush",
                APPENDS / raw_dt,
            )
        )
    return figures
