"""No wait at a turn's first compaction: written ahead vs. in the foreground, same run.

The issue's setup, measured from outside: a scripted session of :data:`TURNS` turns, each
:data:`TOOL_STEPS` steps that read a file and a final answer, every model step taking
:data:`STEP_S` and every summary :data:`SUMMARY_S` (the loopback server holds its replies),
a :data:`WINDOW`-token window: eleven automatic compactions, five of them the first of
their turn. Two front ends, each run as shipped and with ``compaction.ahead = false``:

- ``-p``: each turn a process of its own (the first ``-p``, the next ``-p --continue``):
  no pause, so a turn that starts near the mark sends its summary with its first step
  request, reading the growth of a step from the log;
- ``--plain``: one process reading a prompt a line from a pipe, the next written
  :data:`READ_S` after the turn's gauge line (a person reading the answer): the summary
  the next turn's first compaction needs is written in that pause.

Measured from the session log: the wait at each step where automatic compaction ran (from
the last event before the compaction's bracket — the previous step's end, or the prompt —
to that step's ``step/start``; :func:`tests.bench.bench_ahead._waits`). Billed input is
priced by the prefix-cache model of :mod:`tests.bench.economy` at cache price 0.1, over every
request the server received (summaries included, those written in a pause and discarded
ones too). In ``-p`` a summary started ahead at a turn's last step (the final answer's)
is discarded when the process exits, and the next process writes it again: the price of a
front end without a pause.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from agent.llm.chat import ChatRequest
from agent.tokens import Estimator
from tests.bench.bench_ahead import _waits as compaction_waits
from tests.bench.economy import Counter, PromptCache
from tests.bench.report import Figure
from tests.openai_server import OpenAIServer, ScriptedResponse

REEFLINE = str(Path(sys.executable).with_name("reefline"))
STEP_S = 2.5
SUMMARY_S = 3.0
WINDOW = 6_000
TURNS = 5
TOOL_STEPS = 5
"""Steps of each turn that call a tool (a final answer follows)."""
LINES = 120
"""Lines of each file the agent reads (about 1,100 tokens): the growth of one step."""
READ_S = 4.0
"""The person's pause in ``--plain``: from the turn's gauge line to the next prompt."""
GROUP = "No wait at a turn's first compaction"


def _script() -> list[ScriptedResponse]:
    replies = []
    for turn in range(TURNS):
        for step in range(TOOL_STEPS):
            command = f"cat part{turn * TOOL_STEPS + step}.txt"
            replies.append(
                ScriptedResponse(
                    tool_calls=[{"name": "bash", "arguments": {"command": command}}],
                    chunk_size=200,
                    stall_after=1,
                    stall_s=STEP_S,
                )
            )
        replies.append(
            ScriptedResponse(
                text=f"Read the parts of round {turn}.",
                chunk_size=200,
                stall_after=1,
                stall_s=STEP_S,
            )
        )
    return replies


def _prompt(turn: int) -> str:
    return f"round {turn}: read the next parts and say what they hold"


def _env(home: Path, ahead: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REEFLINE_"))}
    (home / "config.toml").write_text("")
    env.update(
        REEFLINE_HOME=str(home),
        REEFLINE_CONFIG=str(home / "config.toml"),
        REEFLINE_COMPACTION=json.dumps({"ahead": ahead}),
    )
    return env


def _headless(flags: list[str], env: dict[str, str], work: Path) -> None:
    """Each turn a ``-p`` process, the next ones ``--continue``."""
    for turn in range(TURNS):
        more = ["--continue"] if turn else []
        done = subprocess.run(
            [REEFLINE, "-p", _prompt(turn), *more, *flags],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"turn {turn} failed: {done.stderr}")


def _plain(flags: list[str], env: dict[str, str], work: Path) -> None:
    """One ``--plain`` process; each prompt written :data:`READ_S` after the previous turn's
    gauge line (printed once the turn ended and the pause began)."""
    proc = subprocess.Popen(
        [REEFLINE, "--plain", *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=work,
        env=env,
        text=True,
    )
    ended = threading.Semaphore(0)

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("ctx "):
                ended.release()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert proc.stdin is not None
        for turn in range(TURNS):
            proc.stdin.write(_prompt(turn) + "\n")
            proc.stdin.flush()
            if not ended.acquire(timeout=600):
                raise RuntimeError("a turn did not end")
            time.sleep(READ_S)  # the person reads the answer and types
        proc.stdin.close()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        assert proc.stderr is not None
        raise RuntimeError(f"the session failed: {proc.stderr.read()}")


def _session(home: Path, work: Path, ahead: bool, front: str) -> dict[str, Any]:
    """Run the scripted session; its waits at compaction steps, billed input, compactions."""
    env = _env(home, ahead)
    with OpenAIServer() as server:
        server.summarize = True
        server.summary_stall_s = SUMMARY_S
        server.push(*_script())
        flags = ["--base-url", server.base_url, "--model", "m", "--approve", "auto"]
        flags += ["--context-window", str(WINDOW)]
        (_headless if front == "-p" else _plain)(flags, env, work)
        requests = list(server.requests)
    [log] = sorted((home / "sessions").glob("*.jsonl"))
    events = [json.loads(line) for line in log.read_text().splitlines()]
    cache = PromptCache(Counter(Estimator()))
    for body in requests:
        cache.price(ChatRequest(body["model"], body["messages"], body.get("tools") or []))
    ends = [e for e in events if e["type"] == "compact/end"]
    return {
        "waits": compaction_waits(events),
        "billed": cache.billed(0.1),
        "discarded": sum(1 for e in ends if e["data"].get("discarded")),
    }


def run() -> list[Figure]:
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        for part in range(TURNS * TOOL_STEPS):
            text = "\n".join(f"part {part} line {i}: value {i * 7 + part}" for i in range(LINES))
            (work / f"part{part}.txt").write_text(text)
        for front in ("-p", "--plain"):
            runs = {}
            for ahead in (False, True):
                home = Path(tmp) / f"home{front}-{ahead}"
                home.mkdir()
                runs[ahead] = _session(home, work, ahead, front)
            figures += _figures(front, runs[True], runs[False])
    return figures


def _figures(front: str, on: dict[str, Any], off: dict[str, Any]) -> list[Figure]:
    for name, r in (("ahead", on), ("foreground", off)):
        print(
            f"  {front}, {name}: waits {[round(w, 2) for w in r['waits']]}, "
            f"billed {r['billed']:.0f}, discarded {r['discarded']}",
            flush=True,
        )
    mean_on = statistics.mean(on["waits"]) if on["waits"] else float("nan")
    mean_off = statistics.mean(off["waits"]) if off["waits"] else float("nan")
    long_on = max(on["waits"], default=float("nan"))
    long_off = max(off["waits"], default=float("nan"))
    where = f"{front} turns, {STEP_S:g} s steps, {SUMMARY_S:g} s summaries, {WINDOW:,} window"
    if front == "--plain":
        where += f", {READ_S:g} s pauses"
    return [
        Figure(
            GROUP,
            f"{where}: mean wait at a compaction step (of {len(on['waits'])})",
            mean_on,
            "s",
            f"in the foreground (of {len(off['waits'])})",
            mean_off,
            "ratio ≤ 0.25",
            bool(off["waits"]) and mean_on <= 0.25 * mean_off,
        ),
        Figure(
            GROUP,
            f"{where}: longest wait at a compaction step",
            long_on,
            "s",
            "in the foreground",
            long_off,
            "ratio ≤ 0.6",
            bool(off["waits"]) and long_on <= 0.6 * long_off,
        ),
        Figure(
            GROUP,
            f"{where}: billed input at cache price 0.1 (every summary included)",
            on["billed"],
            "tokens",
            "in the foreground",
            off["billed"],
            "ratio ≤ 1.05",
            on["billed"] <= 1.05 * off["billed"],
        ),
    ]
