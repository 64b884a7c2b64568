"""The test suite as ``make test`` runs it (the sources compiled, the test modules' rewritten
asserts cached by a collection, then ``pytest -q -rs -n JOBS``, one worker per CPU and one
more, bytecode writing on), timed from pytest's start to its end, beside the longest single
test of the same run (the floor of any parallel run: nothing ends before its slowest test).
Run last: it takes a few minutes, and anything else loading the machine meanwhile slows it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.bench.report import Figure

ROOT = Path(__file__).resolve().parents[2]
TARGET_S = 180.0
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)s call\s+(\S+)", re.MULTILINE)
_SUMMARY = re.compile(r"(\d+) passed")


def run() -> list[Figure]:
    sources = ["agent", "compact", "tools", "tui", "tests"]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *sources], cwd=ROOT, check=True,
                   capture_output=True)  # fmt: skip
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}  # as make test runs pytest
    subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist"],
                   cwd=ROOT, env=env, capture_output=True, check=False)  # fmt: skip
    jobs = (os.cpu_count() or 1) + 1  # as the Makefile's JOBS
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-n", str(jobs), "--durations=1"]
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600, check=False
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        tail = "\n".join(done.stdout.splitlines()[-30:])
        raise RuntimeError(f"the test suite failed, so its time means nothing:\n{tail}")
    longest = _DURATION.search(done.stdout)
    passed = _SUMMARY.search(done.stdout)
    slowest_s = float(longest.group(1)) if longest else 0.0
    slowest = longest.group(2).rsplit("::", 1)[-1] if longest else "?"
    return [
        Figure(
            group="Test suite",
            name=(
                f"make test's pytest run, {passed.group(1) if passed else '?'} tests on "
                f"{jobs} workers ({os.cpu_count()} CPUs)"
            ),
            value=elapsed,
            unit="s",
            baseline_name=f"its longest test ({slowest})",
            baseline_value=slowest_s,
            target=f"≤ {TARGET_S:.0f} s",
            ok=elapsed <= TARGET_S,
        )
    ]


if __name__ == "__main__":
    for figure in run():
        print(figure)
