"""A cold prompt cache: the 10-turn context-economy sessions with a pause longer than the
provider's cache TTL before every other turn, with and without cold-cache scheduling, side
by side; and the same sessions without pauses.

The sessions, the model and the facts are the context-economy bench's
(:mod:`tests.bench.fidelity_model`): reefline's ladder as built for a real session (the
pruner, summaries written ahead), the silent model. Every request is priced by the
prefix-cache model of :mod:`tests.bench.economy` with expiry
(:class:`~tests.bench.economy.ExpiringPromptCache`): a prefix not sent for :data:`TTL_S`
seconds on the bench's clock is read in full. The bench's clock is the real one moved on by
:data:`PAUSE_S` before every other turn (:class:`BenchClock`); the compaction service reads
the same clock.
the same clock. A summary still being written ahead when a turn ends is done before the
next turn begins (:func:`settled`), and summaries start :data:`LEAD` steps ahead
(:class:`SteadyPace`), so that runs differ by their schedule, not by this machine's timing.
*Unaware* is the ladder told the cache never expires (as before this schedule knew TTLs);
*aware* is told the TTL, and at a checkpoint past it compacts now what is due within a few
steps when the cost model prices that cheaper (:mod:`compact.basic.schedule`): in practice
when a summary written ahead is ready then, as a summary still to write reads the cold
context in full too.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from agent.hooks import Hooks
from agent.llm.chat import ChatRequest
from agent.llm.prompt_cache import CachePlan
from agent.log.events import AssistantMessage, TurnStart
from agent.log.registry import EventRegistry
from agent.log.session import Session
from agent.loop import Agent
from agent.loop_settings import LoopSettings
from agent.meter import TokenMeter
from agent.tokens import Estimator
from compact.basic import BasicCompactService
from compact.basic.pace import Pace
from compact.basic.prune import Pruner
from compact.contract.events import CompactStart, register_events
from compact.contract.policy import CompactionSettings
from tests.bench.economy import Counter, ExpiringPromptCache, Priced
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
LEAD = 2
"""Steps ahead of the mark a summary starts (:class:`SteadyPace`)."""


class SteadyPace(Pace):
    """A summary that takes a step and a bit, always (:data:`LEAD` steps ahead): the pace
    issue 40 measured (2.5 s steps, 3 s summaries). The bench's model answers at once, and
    the pace this machine would measure is noise that moves the early mark from run to run
    (several percent of the billed input), not a property of either schedule."""

    def arrived(self, turn: int, now: float) -> None:
        return None

    def summarized(self, seconds: float) -> None:
        return None

    def lead(self) -> int:
        return LEAD


class BenchClock:
    """The bench's clock: the real one (the log's) plus the pause the session is in. The log
    stamps its events on the real clock, so a pause is over once the next request was made
    (:meth:`requested`): from then on the times the log records carry on from there."""

    def __init__(self) -> None:
        self.pausing = 0.0

    def __call__(self) -> float:
        return time.time() + self.pausing

    def pause(self, seconds: float) -> None:
        self.pausing += seconds

    def requested(self) -> None:
        self.pausing = 0.0


class PausedCache(ExpiringPromptCache):
    """The provider's cache with expiry, on the bench's clock; each request ends a pause."""

    def __init__(self, counter: Counter, clock: BenchClock, ttl_s: float) -> None:
        super().__init__(counter, clock, ttl_s)
        self.bench_clock = clock

    def price(self, request: ChatRequest, *, limit: int | None = None) -> Priced:
        priced = super().price(request, limit=limit)
        self.bench_clock.requested()
        return priced


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
    model.cache = PausedCache(counter, clock, TTL_S)
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
    assert service.ahead is not None
    service.ahead.pace = SteadyPace()
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
            await settled(service)
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


async def settled(service: BasicCompactService) -> None:
    """A summary still being written ahead when the turn ends is done before the next turn:
    the person reading the answer takes longer than a summary (and the bench's model answers
    at once, so it was asked before the pause, on the warm cache, as it would be)."""
    job = None if service.ahead is None else service.ahead.job
    if job is not None and job.task is not None:
        await asyncio.wait([job.task])


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
    for paused in (True, False):
        aware, unaware = runs[True, paused], runs[False, paused]
        a, u = aware.billed(0.1), unaware.billed(0.1)
        pauses = "pauses longer than the TTL" if paused else "no pauses"
        target = "ratio ≤ 0.85" if paused else "within 2%"
        out.append(
            Figure(
                name,
                f"aware, {pauses}: billed input at cache 0.1",
                round(aware.billed(0.1)),
                "tokens",
                "unaware",
                round(unaware.billed(0.1)),
                target,
                a <= 0.85 * u if paused else abs(a - u) <= 0.02 * u,
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
