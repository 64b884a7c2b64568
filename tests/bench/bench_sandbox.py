"""Sandbox overhead: a ``BashTool.run`` round trip for ``true`` under bubblewrap
(``workspace-write``, no network), the same unsandboxed, and a bare subprocess spawn.

All three run interleaved in one event loop, so their ratios hold on a noisy machine.

The cost model (:mod:`tools.jail`): bwrap's namespaces (PID, network, IPC, mount) and mounts
(the read-only root, ``/dev``, ``/proc``, a private ``/tmp``, the workspace, the secrets
hidden on this machine), about 5 ms, and the runner's Python start are paid once per jail,
by the tool's first sandboxed command (a warm-up call here). Each measured call pays what
the jail adds to an unconfined one: the secrets looked up (to notice a new one), a pipe
created and its write end sent over a unix socket with the command, the runner's
``posix_spawn`` of bash in the jail, and the exit status read back from the socket; against
the unconfined call's fork and exec by asyncio. The jail's start (once a session, and after
each timeout, Esc or change of shape) is measured apart: a fresh tool's first call.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from tests.bench.report import Figure
from tools.bash import BashTool
from tools.sandbox import choose, detect

WARMUP = 10
ITERATIONS = 100
STARTS = 10
TARGET_RATIO = 3.0


async def _bare() -> None:
    proc = await asyncio.create_subprocess_exec("bash", "-c", "true")
    await proc.wait()


async def _first_calls(root: Path) -> float:
    """Median milliseconds of a fresh sandboxed tool's first call (the jail starts)."""
    times = []
    for _ in range(STARTS):
        tool = BashTool(
            cwd=root, spill_dir=root / "spill", policy="auto", sandbox=choose("workspace-write")
        )
        started = time.perf_counter()
        out = await tool.run({"command": "true"})
        times.append(time.perf_counter() - started)
        assert out.exit_code == 0, out.content
        tool.close()
    return statistics.median(times) * 1000


async def _measure(root: Path) -> tuple[float, float, float]:
    """Median milliseconds: sandboxed tool, unsandboxed tool, bare spawn."""
    spill = root / "spill"
    sandboxed = BashTool(
        cwd=root, spill_dir=spill, policy="auto", sandbox=choose("workspace-write")
    )
    plain = BashTool(cwd=root, spill_dir=spill, policy="auto")
    times: list[list[float]] = [[], [], []]
    for i in range(WARMUP + ITERATIONS):
        marks = [time.perf_counter()]
        for tool in (sandboxed, plain):
            out = await tool.run({"command": "true"})
            assert out.exit_code == 0, out.content
            marks.append(time.perf_counter())
        await _bare()
        marks.append(time.perf_counter())
        if i >= WARMUP:
            for n in range(3):
                times[n].append(marks[n + 1] - marks[n])
    sandboxed_ms, plain_ms, bare_ms = (statistics.median(t) * 1000 for t in times)
    sandboxed.close()
    return sandboxed_ms, plain_ms, bare_ms


def run() -> list[Figure]:
    found = detect()
    if not found.available:
        print(f"  skipped: no sandbox can be had here ({found.reason})")
        return []
    with tempfile.TemporaryDirectory() as tmp:
        sandboxed_ms, plain_ms, bare_ms = asyncio.run(_measure(Path(tmp)))
        first_ms = asyncio.run(_first_calls(Path(tmp)))
    baseline = "bare create_subprocess_exec"
    return [
        Figure(
            group="Sandbox",
            name="round trip for `true`, sandboxed (workspace-write)",
            value=sandboxed_ms,
            unit="ms",
            baseline_name=baseline,
            baseline_value=bare_ms,
            target=f"ratio ≤ {TARGET_RATIO:g}",
            ok=sandboxed_ms / bare_ms <= TARGET_RATIO,
        ),
        Figure(
            group="Sandbox",
            name="round trip for `true`, unsandboxed",
            value=plain_ms,
            unit="ms",
            baseline_name=baseline,
            baseline_value=bare_ms,
        ),
        Figure(
            group="Sandbox",
            name="first sandboxed call of a tool (the jail starts), `true`",
            value=first_ms,
            unit="ms",
            baseline_name=baseline,
            baseline_value=bare_ms,
        ),
    ]
