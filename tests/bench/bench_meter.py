"""Token meter: ``measure()`` must cost the same at 10,000 surface nodes as at 100.

Two sessions are built in a temporary folder, one with 100 and one with 10,000 surface nodes
(user prompts, assistant replies with a tool call, tool results, provider usage), each with a
meter observing it. The figure is the median time of one ``measure()`` call, taken both with
the logged header and with an explicit system prompt and tools (as the compaction pressure
check calls it).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agent.log.session import Session
from agent.meter import TokenMeter
from agent.tokens import Estimator
from tests.bench.report import Figure

SMALL = 100
LARGE = 10_000
SAMPLES = 15
CALLS_PER_SAMPLE = 2_000

SYSTEM = "You are reefline, a careful coding agent working in /src/project."
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a bash command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]
OUTPUT = "total 48\n-rw-r--r-- 1 dev dev 1234 Nov 29 12:00 main.py\n" * 3


def build(home: Path, nodes: int) -> Session:
    """A session whose surface holds ``nodes`` nodes (prompt, call, result, answer per turn)."""
    s = Session.create(home, cwd="/src/project")
    s.append(
        "request/header",
        {"provider": "openai", "model": "gpt-4o", "system": SYSTEM, "tools": TOOLS},
    )
    turn = 0
    while len(s.surface) < nodes:
        turn += 1
        s.append("user/message", {"content": f"turn {turn}: please look at the build output"})
        call = f"call_{turn}"
        s.append(
            "assistant/message",
            {
                "turn": turn,
                "step": 1,
                "tool_calls": [
                    {"id": call, "name": "bash", "arguments": json.dumps({"command": "ls -la"})}
                ],
                "finish_reason": "tool_calls",
                "model": "gpt-4o",
                "usage": {"prompt_tokens": 1000 + 200 * turn, "completion_tokens": 20},
            },
        )
        s.append(
            "tool/result",
            {"turn": turn, "step": 1, "call_id": call, "name": "bash", "content": OUTPUT},
        )
        s.append(
            "assistant/message",
            {
                "turn": turn,
                "step": 2,
                "text": "The build output lists main.py.",
                "finish_reason": "stop",
                "model": "gpt-4o",
            },
        )
    return s


def median_us(meter: TokenMeter, **header: Any) -> float:
    """Median over samples of the mean time of one ``measure()`` call, in µs."""
    samples = []
    for _ in range(SAMPLES):
        start = time.perf_counter_ns()
        for _ in range(CALLS_PER_SAMPLE):
            meter.measure(**header)
        samples.append((time.perf_counter_ns() - start) / CALLS_PER_SAMPLE / 1000)
    return statistics.median(samples)


def run() -> list[Figure]:
    estimator = Estimator()
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        small = build(Path(tmp) / "small", SMALL)
        large = build(Path(tmp) / "large", LARGE)
        try:
            meters = [TokenMeter(s, estimator, 128_000) for s in (small, large)]
            assert all(m.measure().measured for m in meters)
            for label, header in (
                ("", {}),
                (", explicit header", {"system": SYSTEM, "tools": TOOLS}),
            ):
                base, value = (median_us(m, **header) for m in meters)
                ratio = value / base
                figures.append(
                    Figure(
                        group="Token meter",
                        name=f"measure() at {LARGE:,} nodes{label}",
                        value=value,
                        unit="µs",
                        baseline_name=f"measure() at {SMALL} nodes{label}",
                        baseline_value=base,
                        target="ratio ≤ 2",
                        ok=ratio <= 2,
                    )
                )
        finally:
            small.close()
            large.close()
    return figures
