"""Pruning and resuming must stay linear: a pass over 10,000 tool results costs per result
about what a pass over 1,000 does, and so does loading what it leaves.

Each session is built by :func:`tests.long_session.build_long_session` (bash calls with
results of about 200 tokens), then opened the way ``reefline --continue`` opens it: the log
replayed and repaired, the meter's fold, and a front end's view of the log observing every
append (the headless printer's). The prune is one full masking pass, as the pressure check
runs it under a small window; the figure is its time per pruned result. The resume is that
open again, of the log the pass left (thousands of ``compact/prune`` and replacement pairs),
per event. Each figure is the median of three runs, each on a fresh copy of the log, in CPU
time (the process's, which the other load of a shared machine moves far less than the wall
clock: it moved these by 1.5× from one run to the next).
"""

from __future__ import annotations

import asyncio
import gc
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from agent.log.session import Session
from agent.meter import TokenMeter
from agent.tokens import Estimator
from compact.basic.prune import Pruner
from compact.basic.selection import tail_start
from compact.contract.registry import build_registry
from tests.bench.report import Figure
from tests.long_session import build_long_session
from tui.view.fold import LogView

SMALL = 1_000
LARGE = 10_000
RUNS = 3
WINDOW = 8_000
RETAIN = 1_280
"""The retained tail of an 8k window (``retain_ratio`` 0.16): everything older is masked."""

GROUP = "Pruning and resuming (bash results of ~200 tokens)"


def resume(home: Path, session_id: str, estimator: Estimator) -> tuple[Session, TokenMeter]:
    """Open the log as ``reefline --continue`` does, with a front end's view observing it."""
    session = Session.open(home, session_id, registry=build_registry())
    meter = TokenMeter(session, estimator, WINDOW)
    meter.measure()
    view = LogView()
    view.feed_all(session.events)
    session.subscribe(view.feed)
    return session, meter


def fresh_copy(source: Path, runs: Path) -> Path:
    home = runs / f"run{len(list(runs.iterdir()))}"
    shutil.copytree(source, home)
    return home


def one_run(
    source: Path, session_id: str, runs: Path, estimator: Estimator
) -> tuple[float, float, int]:
    """(seconds per pruned result, seconds per event of the resume after it, its events)."""
    home = fresh_copy(source, runs)
    session, meter = resume(home, session_id, estimator)
    pruner = Pruner(session, meter)
    protect = tail_start(session.surface, meter.price, RETAIN)
    gc.collect()
    start = time.process_time()
    report = asyncio.run(pruner.prune(protect_from=protect, trigger="pressure"))
    pruning = time.process_time() - start
    assert report.results >= len(session.surface) // 3 - 20, report  # every old result
    meter.close()
    session.close()
    gc.collect()
    start = time.process_time()
    session, meter = resume(home, session_id, estimator)
    loading = time.process_time() - start
    events = len(session.events)
    meter.close()
    session.close()
    shutil.rmtree(home)
    return pruning / report.results, loading / events, events


def run() -> list[Figure]:
    estimator = Estimator()
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        measured: dict[int, tuple[float, float]] = {}
        sizes: dict[int, int] = {}  # events of the log each resume read, the pass's included
        for results in (SMALL, LARGE):
            source = Path(tmp) / f"built{results}"
            built = build_long_session(source, results, tmp)
            runs = Path(tmp) / f"runs{results}"
            runs.mkdir()
            samples = [one_run(source, built.id, runs, estimator) for _ in range(RUNS)]
            measured[results] = (
                statistics.median(s[0] for s in samples),
                statistics.median(s[1] for s in samples),
            )
            sizes[results] = samples[0][2]
        (small_prune, small_load), (large_prune, large_load) = measured[SMALL], measured[LARGE]
        figures.append(
            Figure(
                GROUP,
                f"prune {LARGE:,} results, per result",
                large_prune * 1e6,
                "µs",
                f"prune {SMALL:,} results, per result",
                small_prune * 1e6,
                "ratio ≤ 3",
                large_prune / small_prune <= 3,
            )
        )
        figures.append(
            Figure(
                GROUP,
                f"resume of the pruned {LARGE:,}-result session ({sizes[LARGE]:,} events), "
                "per event",
                large_load * 1e6,
                "µs",
                f"the pruned {SMALL:,}-result one ({sizes[SMALL]:,} events)",
                small_load * 1e6,
                "ratio ≤ 3",
                large_load / small_load <= 3,
            )
        )
    return figures
