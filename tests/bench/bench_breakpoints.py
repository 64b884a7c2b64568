"""Cache breakpoints at an Anthropic-style cache: the context-economy sessions billed with and
without reefline's marks, side by side in one run.

The sessions, facts and model are the fidelity bench's (:mod:`tests.bench.fidelity_model`):
real bash reading step logs, the ladder compacting at its own schedule. Every request the
model receives (steps and summaries) is priced by :mod:`tests.bench.anthropic_cache`: with
breakpoints, the marks reefline's client sends a Claude model (:mod:`agent.llm.cache_marks`),
a read billed at 0.1×, a write at 1.25×; without them, nothing is cached. Target: with
breakpoints at most 0.2× the billed input without them, every fact kept.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agent.hooks import Hooks
from agent.log.registry import EventRegistry
from agent.log.session import Session
from agent.loop import Agent
from agent.loop_settings import LoopSettings
from agent.meter import TokenMeter
from agent.tokens import Estimator
from compact.basic import BasicCompactService
from compact.basic.prune import Pruner
from compact.contract.events import register_events
from compact.contract.policy import CompactionSettings
from tests.bench.anthropic_cache import WRITE_PRICE, MarkedCache
from tests.bench.bench_fidelity import SESSIONS
from tests.bench.economy import Counter, PromptCache
from tests.bench.fidelity_model import Behaviour, BenchModel, Fact, Shape, outputs, plant, prompt
from tests.bench.report import Figure, Table
from tools.bash import BashTool

READ_PRICE = 0.1
"""A cached read at Anthropic, as a share of the input price."""
BEHAVIOURS: tuple[Behaviour, ...] = ("silent", "noting")


@dataclass
class Run:
    breakpoints: bool
    behaviour: Behaviour
    cache: MarkedCache
    model: BenchModel
    kept: list[Fact]
    completed: bool


def run_ladder(
    root: Path,
    shape: Shape,
    facts: tuple[Fact, ...],
    logs: dict[str, str],
    counter: Counter,
    behaviour: Behaviour,
    breakpoints: bool,
) -> Run:
    """One session by reefline's ladder, priced by an Anthropic-style cache."""
    marks = "marks" if breakpoints else "none"
    work = root / f"{behaviour}-{marks}-{shape.turns}-{shape.window}"
    work.mkdir()
    for name, text in logs.items():
        (work / name).write_text(text)
    session = Session.create(
        work / "home", cwd=str(work), registry=register_events(EventRegistry())
    )
    meter = TokenMeter(session, counter.estimator, shape.window)
    model = BenchModel(behaviour, counter, shape, facts, shape.window)
    cache = MarkedCache(counter, breakpoints, reference=PromptCache(counter, min_cached=0, step=1))
    model.cache = cache  # type: ignore[assignment]  # the same interface, another cache
    bash = BashTool(cwd=work, spill_dir=session.spill_dir, policy="auto")
    hooks = Hooks()
    service = BasicCompactService(
        session, meter, model, CompactionSettings(), pruner=Pruner(session, meter)
    )
    service.install(hooks)
    agent = Agent(
        session,
        model,
        "bench-model",
        [bash],
        settings=LoopSettings(max_steps=shape.steps + 2),
        hooks=hooks,
        context_window=shape.window,
    )

    async def drive() -> bool:
        ok = True
        for turn in range(1, shape.turns + 1):
            ok = (await agent.run_turn(prompt(shape, facts, turn))).reason == "completed" and ok
        final = "Final question: list every fact you were told or saw in the logs."
        return (await agent.run_turn(final)).reason == "completed" and ok

    completed = asyncio.run(drive())
    text = "\n".join(str(m.get("content") or "") for m in model.final_request or [])
    service.close()
    meter.close()
    session.close()
    kept = [f for f in facts if f.kept(text)]
    return Run(breakpoints, behaviour, cache, model, kept, completed)


def run() -> list[Figure | Table]:
    counter = Counter(Estimator())
    items: list[Figure | Table] = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in SESSIONS:
            facts = plant(shape)
            logs = outputs(shape, facts, counter.estimator)
            runs = [
                run_ladder(Path(tmp), shape, facts, logs, counter, behaviour, breakpoints)
                for behaviour in BEHAVIOURS
                for breakpoints in (True, False)
            ]
            items += [table(shape, facts, runs), *figures(shape, facts, runs)]
    return items


def group(shape: Shape) -> str:
    return f"Cache breakpoints at an Anthropic-style cache ({shape.title})"


def table(shape: Shape, facts: tuple[Fact, ...], runs: list[Run]) -> Table:
    rows = [
        [
            "with breakpoints" if r.breakpoints else "without",
            r.behaviour,
            f"{r.cache.prompt_tokens:,}",
            f"{r.cache.cached_tokens:,}",
            f"{r.cache.written_tokens:,}",
            f"{r.cache.billed(READ_PRICE):,.0f}",
            f"{r.cache.hit_rate:.0%}",
            str(r.cache.most_marks),
            str(r.model.summary_calls),
            f"{len(r.kept)}/{len(facts)}" + ("" if r.completed else " (a turn failed)"),
        ]
        for r in runs
    ]
    return Table(
        group(shape),
        [
            "requests",
            "behaviour",
            "prompt tokens",
            "read from cache",
            "written to cache",
            f"billed input (read {READ_PRICE}, write {WRITE_PRICE})",
            "cache hit rate",
            "most marks in a request",
            "summary calls",
            "facts visible at the end",
        ],
        rows,
        note=(
            "reefline's ladder, priced by an Anthropic-style cache: a marked prefix of 1,024 "
            "tokens or more is written (1.25× the input price) and read by a later request "
            "whose mark, or a unit up to 20 before it, ends the same prefix (0.1×); what "
            "follows the last mark is read in full. Without marks nothing is cached. Billed "
            "input is in full-price tokens; summary calls are counted in it. Each step's new "
            "output is new to any cache (a fifth to a quarter of all prompt tokens here): "
            "even every prefix cached and read at 0.1× with no write premium bills about "
            "0.3× the uncached input (the 'floor' figure), so 0.2× is out of any marks' reach; "
            "the share read with marks is compared with that cache's."
        ),
    )


def figures(shape: Shape, facts: tuple[Fact, ...], runs: list[Run]) -> list[Figure]:
    """Per behaviour: billed input with breakpoints against without (target ≤ 0.2×) and
    against the floor of any cache (every prefix read at 0.1×, nothing written at a premium);
    the share read from the cache against a cache of every prefix (what marks can reach at
    best: ≥ 0.95×); every fact kept with them."""
    out = []
    name = group(shape)
    for behaviour in BEHAVIOURS:
        marked = next(r for r in runs if r.behaviour == behaviour and r.breakpoints)
        bare = next(r for r in runs if r.behaviour == behaviour and not r.breakpoints)
        billed = marked.cache.billed(READ_PRICE)
        best = marked.cache.reference
        assert best is not None
        out += [
            Figure(
                name,
                f"ladder, {behaviour}: billed input with breakpoints",
                round(billed),
                "tokens",
                "without breakpoints",
                round(bare.cache.billed(READ_PRICE)),
                "ratio ≤ 0.2",
                billed <= 0.2 * bare.cache.billed(READ_PRICE),
            ),
            Figure(
                name,
                f"ladder, {behaviour}: billed input with breakpoints",
                round(billed),
                "tokens",
                "every prefix cached, read at 0.1, no write premium (the floor)",
                round(best.billed(READ_PRICE)),
            ),
            Figure(
                name,
                f"ladder, {behaviour}: share of the prompt read from the cache",
                round(100 * marked.cache.hit_rate, 1),
                "%",
                "a cache of every prefix",
                round(100 * best.hit_rate, 1),
                "ratio ≥ 0.95",
                marked.cache.hit_rate >= 0.95 * best.hit_rate,
            ),
            Figure(
                name,
                f"ladder, {behaviour}: facts visible at the end with breakpoints",
                len(marked.kept),
                f"of {len(facts)}",
                target=f"all {len(facts)}, every turn completed",
                ok=len(marked.kept) == len(facts) and marked.completed,
            ),
        ]
    return out


if __name__ == "__main__":
    for item in run():
        print(item)
