"""A cold prompt cache: the 10-turn context-economy sessions with a pause longer than the
provider's cache TTL before every other turn, with and without cold-cache scheduling, side
by side; and the same sessions without pauses.

The sessions, the model and the facts are the context-economy bench's
(:mod:`tests.bench.fidelity_model`): reefline's ladder as built for a real session (the
pruner, summaries written ahead), the silent model. Every request is priced by the
prefix-cache model of :mod:`tests.bench.economy` with expiry
(:class:`~tests.bench.economy.ExpiringPromptCache`): a prefix not sent for :data:`TTL_S`
seconds on the bench's clock is read in full. The bench's clock is the real one moved on by
:data:`PAUSE_S` before every other turn; the compaction service reads the same clock.
*Unaware* is the ladder told the cache never expires (as before this schedule knew TTLs);
*aware* is told the TTL, and at a checkpoint past it compacts now what is due within a few
steps when the cost model prices that cheaper (:mod:`compact.basic.schedule`).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from agent.hooks import Hooks
from agent.llm.prompt_cache import CachePlan
from agent.log.events import AssistantMessage, TurnStart
from agent.log.registry import EventRegistry
from agent.log.session import Session
from agent.loop import Agent
from agent.loop_settings import LoopSettings
from agent.meter import TokenMeter
from agent.tokens import Estimator
from compact.basic import BasicCompactService
from compact.basic.prune import Pruner
from compact.contract.events import CompactStart, register_events
from compact.contract.policy import CompactionSettings
from tests.bench.economy import Counter, ExpiringPromptCache
from tests.bench.fidelity_model import BenchModel, Fact, Shape, outputs, plant, prompt
from tests.bench.report import Figure, Table
from tools.bash import BashTool

SESSIONS = (
    Shape(turns=10, steps=10, window=16_000, output_tokens=1_500),
    Shape(turns=10, steps=10, window=128_000, output_tokens=4_700),
)
TTL_S = 300.0
"""The provider's cache TTL: OpenAI's and Anthropic's five minutes."""
PAUSE_S = 600.0
"""The pause before every other turn: longer than the TTL."""


class BenchClock:
    """The real clock (the log's), moved on by the bench's pauses."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def pause(self, seconds: float) -> None:
        self.offset += seconds


@dataclass
class Run:
    aware: bool
    paused: bool
    model: BenchModel
    visible: list[Fact]
    cold_compactions: int
    """Compactions made at the first step of a turn after a pause (none in the mark's way)."""
    completed: bool

    def billed(self, price: float) -> float:
        return self.model.cache.billed(price)


def run_one(
    root: Path, shape: Shape, facts: tuple[Fact, ...], logs: dict[str, str], counter: Counter,
    *, aware: bool, paused: bool,
) -> Run:  # fmt: skip
    work = (
        root
        / f"{'aware' if aware else 'unaware'}-{'paused' if paused else 'steady'}-{shape.window}"
    )
    work.mkdir()
    for name, text in logs.items():
        (work / name).write_text(text)
    clock = BenchClock()
    session = Session.create(
        work / "home", cwd=str(work), registry=register_events(EventRegistry())
    )
    meter = TokenMeter(session, counter.estimator, shape.window)
    model = BenchModel("silent", counter, shape, facts, shape.window)
    model.cache = ExpiringPromptCache(counter, clock, TTL_S)
    service = BasicCompactService(
        session,
        meter,
        model,
        CompactionSettings(),
        pruner=Pruner(session, meter),
        ahead=True,
        cache_plan=CachePlan(breakpoints=False, ttl_s=TTL_S) if aware else None,
        clock=clock,
    )
    hooks = Hooks()
    service.install(hooks)
    bash = BashTool(cwd=work, spill_dir=session.spill_dir, policy="auto")
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
            if paused and turn % 2 == 0:
                clock.pause(PAUSE_S)
            ok = (await agent.run_turn(prompt(shape, facts, turn))).reason == "completed" and ok
        final = "Final question: list every fact you were told or saw in the logs."
        return (await agent.run_turn(final)).reason == "completed" and ok

    completed = asyncio.run(drive())
    text = "\n".join(str(m.get("content") or "") for m in model.final_request or [])
    visible = [f for f in facts if f.kept(text)]
    cold = _first_step_compactions(session, shape) if paused else 0
    service.close()
    meter.close()
    session.close()
    return Run(aware, paused, model, visible, cold, completed)


def _first_step_compactions(session: Session, shape: Shape) -> int:
    """Compactions begun at a paused turn's first checkpoint (before its first reply)."""
    count, turn, replied = 0, 0, True
    for event in session.events:
        if isinstance(event, TurnStart):
            turn, replied = event.data.turn, False
        elif isinstance(event, AssistantMessage):
            replied = True
        elif isinstance(event, CompactStart) and not replied and turn % 2 == 0:
            count += 1 if turn <= shape.turns else 0
    return count


def run() -> list[Figure | Table]:
    estimator = Estimator()
    counter = Counter(estimator)
    items: list[Figure | Table] = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in SESSIONS:
            facts = plant(shape)
            logs = outputs(shape, facts, estimator)
            runs = {
                (aware, paused): run_one(
                    Path(tmp), shape, facts, logs, counter, aware=aware, paused=paused
                )
                for paused in (True, False)
                for aware in (False, True)
            }
            items += [table(shape, facts, runs), *figures(shape, facts, runs)]
    return items


def group(shape: Shape) -> str:
    return f"Cold cache ({shape.title})"


def table(shape: Shape, facts: tuple[Fact, ...], runs: dict[tuple[bool, bool], Run]) -> Table:
    rows = []
    for (aware, paused), r in runs.items():
        m = r.model
        rows.append(
            [
                "aware" if aware else "unaware",
                f"{PAUSE_S:.0f} s before every other turn" if paused else "none",
                f"{m.prompt_tokens:,}",
                f"{r.billed(0.1):,.0f}",
                f"{r.billed(0.25):,.0f}",
                f"{m.cache.hit_rate:.0%}",
                str(m.summary_calls),
                str(m.requests),
                str(r.cold_compactions) if paused else "—",
                f"{len(r.visible)}/{len(facts)}" + ("" if r.completed else " (a turn failed)"),
            ]
        )
    return Table(
        group(shape),
        [
            "cold-cache scheduling",
            "pauses",
            "prompt tokens",
            "billed input at cache 0.1",
            "billed input at cache 0.25",
            "cache hit rate",
            "summary calls",
            "requests",
            "compactions at a paused turn's first step",
            "facts visible at the end",
        ],
        rows,
        note=(
            f"The provider's cache keeps a prefix {TTL_S:.0f} s after its last use; a pause "
            f"moves the bench's clock on by {PAUSE_S:.0f} s. Billed input is in full-price "
            "tokens, every request (steps, summaries written ahead or not) priced by the "
            "prefix-cache model with expiry."
        ),
    )


def figures(
    shape: Shape, facts: tuple[Fact, ...], runs: dict[tuple[bool, bool], Run]
) -> list[Figure]:
    name = group(shape)
    out = []
    for paused, target, ok in (
        (True, "ratio ≤ 0.85", lambda a, u: a <= 0.85 * u),
        (False, "within 2%", lambda a, u: abs(a - u) <= 0.02 * u),
    ):
        aware, unaware = runs[True, paused], runs[False, paused]
        pauses = "pauses longer than the TTL" if paused else "no pauses"
        out.append(
            Figure(
                name,
                f"aware, {pauses}: billed input at cache 0.1",
                round(aware.billed(0.1)),
                "tokens",
                "unaware",
                round(unaware.billed(0.1)),
                target,
                ok(aware.billed(0.1), unaware.billed(0.1)),
            )
        )
    kept = min(len(r.visible) for r in runs.values())
    out.append(
        Figure(
            name,
            "facts visible at the end, fewest of the four runs",
            kept,
            f"of {len(facts)}",
            target=f"all {len(facts)}",
            ok=kept == len(facts) and all(r.completed for r in runs.values()),
        )
    )
    return out


if __name__ == "__main__":
    for item in run():
        print(item)
