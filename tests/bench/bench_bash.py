"""Bash tool overhead: a full ``BashTool.run`` round trip against a bare subprocess spawn.

Both run ``true`` in bash, interleaved in the same event loop, so the ratio shows what the
tool adds (approval check, cwd tracking, output capture, sanitizing, the report) on top of
starting bash at all.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from tests.bench.report import Figure
from tools.bash import BashTool

WARMUP = 10
ITERATIONS = 100
TARGET_RATIO = 1.5


async def _bare() -> None:
    proc = await asyncio.create_subprocess_exec("bash", "-c", "true")
    await proc.wait()


async def _measure(root: Path) -> tuple[float, float]:
    tool = BashTool(cwd=root, spill_dir=root / "spill", policy="auto")
    tool_times: list[float] = []
    bare_times: list[float] = []
    for i in range(WARMUP + ITERATIONS):
        start = time.perf_counter()
        out = await tool.run({"command": "true"})
        mid = time.perf_counter()
        await _bare()
        end = time.perf_counter()
        assert out.exit_code == 0, out.content
        if i >= WARMUP:
            tool_times.append(mid - start)
            bare_times.append(end - mid)
    return statistics.median(tool_times) * 1000, statistics.median(bare_times) * 1000


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        tool_ms, bare_ms = asyncio.run(_measure(Path(tmp)))
    return [
        Figure(
            group="Bash tool",
            name="round trip for `true`",
            value=tool_ms,
            unit="ms",
            baseline_name="bare create_subprocess_exec",
            baseline_value=bare_ms,
            target=f"ratio ≤ {TARGET_RATIO:g}",
            ok=tool_ms / bare_ms <= TARGET_RATIO,
        )
    ]
