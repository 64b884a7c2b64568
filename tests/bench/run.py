"""Run every benchmark module (tests/bench/bench_*.py) and write BENCHMARKS.md.

Each module exposes ``run() -> list[Figure | Table]``. Usage: ``python -m tests.bench.run [name ...]``.
"""

from __future__ import annotations

import datetime as dt
import importlib
import os
import platform
import sys
from pathlib import Path

from tests.bench.report import Figure, Table, render

ROOT = Path(__file__).resolve().parents[2]


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{os.cpu_count()} cores ({cpu}){mem}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def main(argv: list[str]) -> int:
    names = argv or sorted(p.stem for p in Path(__file__).parent.glob("bench_*.py"))
    names.sort(key=lambda name: name == "bench_suite")  # minutes of load: it goes last
    figures: list[Figure | Table] = []
    for name in names:
        module = importlib.import_module(f"tests.bench.{name}")
        print(f"== {name}", flush=True)
        for fig in module.run():
            if isinstance(fig, Table):
                figures.append(fig)
                for row in fig.rows:
                    print("  " + " · ".join(row), flush=True)
                continue
            ratio = f" (ratio {fig.ratio:.2f})" if fig.ratio is not None else ""
            print(f"  {fig.name}: {fig.value:.6g} {fig.unit}{ratio}", flush=True)
            figures.append(fig)
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    (ROOT / "BENCHMARKS.md").write_text(render(figures, machine(), date))
    print(f"wrote {ROOT / 'BENCHMARKS.md'}")
    failed = [f for f in figures if isinstance(f, Figure) and f.ok is False]
    for f in failed:
        print(f"target missed: {f.group} / {f.name} ({f.target})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
