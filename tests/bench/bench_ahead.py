"""Compaction nobody waits for: the summary written ahead vs. in the foreground, same run.

A scripted 4-turn session, run twice through the real CLI against the loopback server: once
as shipped, once with ``compaction.ahead = false``. The summarizer takes :data:`SUMMARY_S`
for each summary and the model a step's time (:data:`STEPS_S`) to answer each step that
calls a tool. Two paces: a step slower than a summary, where the summary written ahead is
ready within one step and so reads everything a foreground one would (the issue's targets
hold there), and a step faster than it, where it must start two steps ahead once its pace
is known (the first compaction, started one step ahead, waits for the rest) and the step
that ran meanwhile is read anew after every commit (:mod:`compact.basic.pace`): measured, the
price of not waiting, without targets (no schedule meets all three there).
Measured from the session log: the wait at each step where automatic compaction ran (from
the last event before the compaction's bracket — the previous step's end, or the prompt —
to that step's ``step/start``), and the wall time of the whole session (one ``--plain`` process reading a prompt a line).
Billed input is priced by the prefix-cache model of :mod:`tests.bench.economy` at cache
price 0.1, over every request the server received (summaries included, discarded ones too).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent.llm.chat import ChatRequest
from agent.tokens import Estimator
from tests.bench.economy import Counter, PromptCache
from tests.bench.report import Figure
from tests.openai_server import OpenAIServer, ScriptedResponse

REEFLINE = str(Path(sys.executable).with_name("reefline"))
SUMMARY_S = 5.0
STEPS_S = (6.0, 3.0)
"""A step's time in each run: slower than a summary, then faster."""
TURNS = 4
TOOL_STEPS = 4
"""Steps of each turn that call a tool (a final answer follows)."""
WINDOW = 16_000
LINES = 250
"""Lines of each file the agent reads (about 1.5k tokens): the growth of one step."""
GROUP = "Compaction ahead"


def _script(think_s: float) -> list[ScriptedResponse]:
    replies = []
    for turn in range(TURNS):
        for step in range(TOOL_STEPS):
            command = f"cat part{turn * TOOL_STEPS + step}.txt"
            replies.append(
                ScriptedResponse(
                    tool_calls=[{"name": "bash", "arguments": {"command": command}}],
                    chunk_size=200,
                    stall_after=1,
                    stall_s=think_s,
                )
            )
        replies.append(ScriptedResponse(text=f"Read the parts of round {turn}.", chunk_size=200))
    return replies


def _session(home: Path, work: Path, ahead: bool, think_s: float) -> dict[str, Any]:
    """Run the scripted session; its wall time, waits at compaction steps, billed input."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REEFLINE_"))}
    (home / "config.toml").write_text("")
    env.update(
        REEFLINE_HOME=str(home),
        REEFLINE_CONFIG=str(home / "config.toml"),
        REEFLINE_COMPACTION=json.dumps({"ahead": ahead}),
    )
    with OpenAIServer() as server:
        server.summarize = True
        server.summary_stall_s = SUMMARY_S
        server.push(*_script(think_s))
        flags = ["--base-url", server.base_url, "--model", "m", "--approve", "auto"]
        flags += ["--context-window", str(WINDOW)]
        prompts = "".join(
            f"round {turn}: read the next parts and say what they hold\n" for turn in range(TURNS)
        )
        started = time.monotonic()
        # One process, as a person at the terminal: --plain reads a prompt a line.
        done = subprocess.run(
            [REEFLINE, "--plain", *flags],
            input=prompts,
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"the session failed: {done.stderr}")
        wall = time.monotonic() - started
        requests = list(server.requests)
    [log] = sorted((home / "sessions").glob("*.jsonl"))
    events = [json.loads(line) for line in log.read_text().splitlines()]
    cache = PromptCache(Counter(Estimator()))
    for body in requests:
        cache.price(ChatRequest(body["model"], body["messages"], body.get("tools") or []))
    return {
        "wall": wall,
        "waits": _waits(events),
        "billed": cache.billed(0.1),
        "discarded": sum(
            1 for e in events if e["type"] == "compact/end" and e["data"].get("discarded")
        ),
    }


def _waits(events: list[dict[str, Any]]) -> list[float]:
    """Seconds from the last event before each automatic compaction's bracket to the
    ``step/start`` after it (discarded brackets at that checkpoint count as waiting too)."""
    waits = []
    for i, event in enumerate(events):
        if event["type"] != "compact/summary":
            continue
        before = i
        while before > 0 and events[before - 1]["type"].startswith("compact/"):
            before -= 1
        after = next(e for e in events[i:] if e["type"] == "step/start")
        waits.append(after["time"] - events[before - 1]["time"])
    return waits


def run() -> list[Figure]:
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        for part in range(TURNS * TOOL_STEPS):
            text = "\n".join(f"part {part} line {i}: value {i * 7 + part}" for i in range(LINES))
            (work / f"part{part}.txt").write_text(text)
        for think_s in STEPS_S:
            runs = {}
            for ahead in (False, True):
                home = Path(tmp) / f"home-{think_s}-{ahead}"
                home.mkdir()
                runs[ahead] = _session(home, work, ahead, think_s)
            figures += _figures(think_s, runs[True], runs[False])
    return figures


def _figures(think_s: float, on: dict[str, Any], off: dict[str, Any]) -> list[Figure]:
    pace = f"{think_s:g} s steps"
    for name, r in (("ahead", on), ("foreground", off)):
        print(
            f"  {pace}, {name}: waits {[round(w, 2) for w in r['waits']]}, "
            f"wall {r['wall']:.1f}s, billed {r['billed']:.0f}, discarded {r['discarded']}",
            flush=True,
        )
    wait_on = statistics.mean(on["waits"]) if on["waits"] else float("nan")
    wait_off = statistics.mean(off["waits"]) if off["waits"] else float("nan")
    # The targets hold together only where the summary is ready within a step; with
    # faster steps the run shows the trade instead (see the module docstring), untargeted.
    targeted = think_s > SUMMARY_S
    return [
        Figure(
            GROUP,
            f"{pace}: wait at the compaction step, summarizer {SUMMARY_S:g} s "
            f"(mean of {len(on['waits'])})",
            wait_on,
            "s",
            f"in the foreground (mean of {len(off['waits'])})",
            wait_off,
            "ratio ≤ 0.1" if targeted else None,
            bool(off["waits"]) and wait_on <= 0.1 * wait_off if targeted else None,
        ),
        Figure(
            GROUP,
            f"{pace}: wall time of a scripted {TURNS}-turn session",
            on["wall"],
            "s",
            "in the foreground",
            off["wall"],
            "ratio ≤ 0.85" if targeted else None,
            on["wall"] <= 0.85 * off["wall"] if targeted else None,
        ),
        Figure(
            GROUP,
            f"{pace}: billed input at cache price 0.1 (summaries, discarded ones too, included)"
            + ("" if targeted else "; a step read anew at each commit"),
            on["billed"],
            "tokens",
            "in the foreground",
            off["billed"],
            "ratio ≤ 1.05" if targeted else None,
            on["billed"] <= 1.05 * off["billed"] if targeted else None,
        ),
    ]
