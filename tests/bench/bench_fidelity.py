"""Context economy and fidelity: what a long bash-heavy session still remembers, and what it
costs at a provider that caches prompts.

Three scripted sessions (real bash, real step logs; :mod:`tests.bench.fidelity_model`):
4 turns × 12 steps of ~1,500-token outputs at a 16k window; 10 turns × 10 steps at 16k
(many compactions); 10 turns × 10 steps of ~4,700-token outputs at a 128k window. Ten facts
of every kind are planted in each. The model plays two behaviours: *silent* (its step text
never repeats what it read) and *noting* (its next step text repeats a fact it just saw, as
real models do); both state one fact only in their own reply. As summarizer it keeps every
fact it is shown, a corrected value in its newest form, so what is lost is lost by the
context manager, not by the model.

Four strategies run each session side by side in the same run: reefline's ladder (the
pruner and summaries), summary only (append until the threshold, then summarize), mask only
(the pruner alone, no summaries) and no compaction with an unlimited window. Every request
the model receives (steps and summaries alike) is priced by the prefix-cache model of
:mod:`tests.bench.economy`: prompt tokens, input billed at cache prices 0.1 and 0.25, the
cache hit rate; with the summary calls, the largest request against the window and which
facts the final request shows.
"""

from __future__ import annotations

import asyncio
import math
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agent.envelope import Envelope
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
from tests.bench.economy import CACHE_PRICES, Counter
from tests.bench.fidelity_model import Behaviour, BenchModel, Fact, Shape, outputs, plant, prompt
from tests.bench.report import Figure, Table
from tools.bash import BashTool

SESSIONS = (
    Shape(turns=4, steps=12, window=16_000, output_tokens=1_500),
    Shape(turns=10, steps=10, window=16_000, output_tokens=1_500),
    Shape(turns=10, steps=10, window=128_000, output_tokens=4_700),
)
UNLIMITED = 10_000_000
BEHAVIOURS: tuple[Behaviour, ...] = ("silent", "noting")
Strategy = Literal["ladder", "summary only", "mask only", "no compaction"]
STRATEGIES: tuple[Strategy, ...] = ("ladder", "summary only", "mask only", "no compaction")
_SPILL = re.compile(r"(/\S+?\.(?:out|log|txt))\b")


def summary_only_settings() -> CompactionSettings:
    """Default settings that compact only at the threshold: with no cost-based trigger below
    it where the policy has one (``cache_price`` 0), as an append-then-summarize agent does."""
    if "cache_price" in CompactionSettings.model_fields:
        return CompactionSettings.model_validate({"cache_price": 0})
    return CompactionSettings()


def mask_only(
    session: Session, meter: TokenMeter, settings: CompactionSettings, window: int
) -> Any:
    """The pruner alone at the pre-step checkpoint (the default marks, retained tail and
    whole-pass rule of the ladder before its summaries), never a summary."""
    pruner = Pruner(session, meter)
    threshold = settings.threshold(window)

    async def pre_step(
        envelope: Envelope, turn: int, step: int, signal: asyncio.Event | None = None
    ) -> None:
        total = meter.measure(envelope).total
        if total < _prune_at(settings, window):
            return
        nodes = session.surface
        cut, kept = len(nodes), 0
        while cut > 0 and (kept < settings.retain(window) or cut == len(nodes)):
            cut -= 1
            kept += meter.price(nodes[cut])
        if total >= threshold or await pruner.savings(cut) >= 0.1 * window:
            await pruner.prune(protect_from=cut, trigger="pressure")

    return pre_step


def _prune_at(settings: CompactionSettings, window: int) -> int:
    """The ladder's prune mark: half the window the ratios apply to, at most the threshold
    (the retired ``compaction.prune_ratio`` at its default)."""
    at = math.floor(settings.effective_window(window) * min(0.5, settings.threshold_ratio))
    return min(at, settings.threshold(window))


@dataclass
class Outcome:
    strategy: Strategy
    behaviour: Behaviour
    model: BenchModel
    visible: list[Fact]
    recoverable: list[Fact]
    """Not visible, but in a spill file the final request names."""
    completed: bool

    def billed(self, price: float) -> float:
        return self.model.cache.billed(price)


def run_one(
    root: Path,
    shape: Shape,
    facts: tuple[Fact, ...],
    logs: dict[str, str],
    strategy: Strategy,
    behaviour: Behaviour,
    counter: Counter,
    ladder: CompactionSettings | None = None,
) -> Outcome:
    """One session by one strategy; ``ladder``: the ladder's settings (default: reefline's)."""
    work = root / f"{strategy.replace(' ', '-')}-{behaviour}-{shape.turns}-{shape.window}"
    if ladder is not None:
        work = work.with_name(f"{work.name}-{ladder.threshold_ratio}-{ladder.retain_ratio}")
    work.mkdir()
    for name, text in logs.items():
        (work / name).write_text(text)
    window = UNLIMITED if strategy == "no compaction" else shape.window
    session = Session.create(
        work / "home", cwd=str(work), registry=register_events(EventRegistry())
    )
    meter = TokenMeter(session, counter.estimator, window)
    model = BenchModel(behaviour, counter, shape, facts, window)
    bash = BashTool(cwd=work, spill_dir=session.spill_dir, policy="auto")
    hooks = Hooks()
    service: BasicCompactService | None = None
    if strategy == "ladder":
        service = BasicCompactService(
            session, meter, model, ladder or CompactionSettings(), pruner=Pruner(session, meter)
        )
    elif strategy == "summary only":
        service = BasicCompactService(session, meter, model, summary_only_settings(), pruner=None)
    elif strategy == "mask only":
        hooks.pre_step.append(mask_only(session, meter, CompactionSettings(), window))
    if service is not None:
        service.install(hooks)
    agent = Agent(
        session,
        model,
        "bench-model",
        [bash],
        settings=LoopSettings(max_steps=shape.steps + 2),
        hooks=hooks,
        context_window=window,
    )

    async def drive() -> bool:
        ok = True
        for turn in range(1, shape.turns + 1):
            ok = (await agent.run_turn(prompt(shape, facts, turn))).reason == "completed" and ok
        final = "Final question: list every fact you were told or saw in the logs."
        return (await agent.run_turn(final)).reason == "completed" and ok

    completed = asyncio.run(drive())
    final = model.final_request or []
    text = "\n".join(str(m.get("content") or "") for m in final)
    visible = [f for f in facts if f.kept(text)]
    recoverable = []
    spills = [Path(p) for p in dict.fromkeys(_SPILL.findall(text))]
    spilled = "\n".join(p.read_text(errors="replace") for p in spills if p.is_file())
    for fact in facts:
        if fact not in visible and fact.key in spilled:
            recoverable.append(fact)
    if service is not None:
        service.close()
    meter.close()
    session.close()
    return Outcome(strategy, behaviour, model, visible, recoverable, completed)


def run() -> list[Figure | Table]:
    estimator = Estimator()
    counter = Counter(estimator)
    items: list[Figure | Table] = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in SESSIONS:
            facts = plant(shape)
            logs = outputs(shape, facts, estimator)
            outcomes = {
                (strategy, behaviour): run_one(
                    Path(tmp), shape, facts, logs, strategy, behaviour, counter
                )
                for behaviour in BEHAVIOURS
                for strategy in STRATEGIES
            }
            items += [table(shape, facts, outcomes), *targets(shape, facts, outcomes)]
            best = best_fixed(Path(tmp), shape, facts, logs, counter, SWEEP_MARKS)
            items += schedule_figures(shape, outcomes, best)
    return items


SWEEP_MARKS = tuple(round(0.2 + 0.05 * i, 2) for i in range(13))
"""Marks (shares of the window) the sweep tries: from 20% (the earliest the schedule may
choose: a quarter of the threshold) to 80%, the default threshold."""
SWEEP_TAILS = (0.0, 0.05)
"""Retained tails (shares of the window) the sweep tries; the ladder folds them to a step."""


@dataclass(frozen=True)
class Fixed:
    """The ladder run with a fixed mark and tail instead of its cost schedule."""

    mark: float
    tail: float
    outcome: Outcome


def best_fixed(
    root: Path,
    shape: Shape,
    facts: tuple[Fact, ...],
    logs: dict[str, str],
    counter: Counter,
    marks: tuple[float, ...],
    tails: tuple[float, ...] = SWEEP_TAILS,
) -> Fixed:
    """The cheapest (billed input at cache 0.1) of the ladder's runs with every fixed mark in
    ``marks`` and tail in ``tails``, silent model: what the best possible choice of
    *when* to compact reaches on this session, found by trying them all."""
    runs = []
    for mark in marks:
        for tail in tails:
            settings = CompactionSettings(threshold_ratio=mark, retain_ratio=tail, cache_price=0)
            outcome = run_one(root, shape, facts, logs, "ladder", "silent", counter, settings)
            if outcome.completed:
                runs.append(Fixed(mark, tail, outcome))
    return min(runs, key=lambda run: run.outcome.billed(0.1))


def schedule_figures(
    shape: Shape, outcomes: dict[tuple[Strategy, Behaviour], Outcome], best: Fixed
) -> list[Figure]:
    """The ladder's cost schedule beside the best fixed mark the sweep found (target: within
    2%), and that best mark beside summary only: the lowest ratio any schedule reaches."""
    name = group(shape)
    ladder = outcomes["ladder", "silent"].billed(0.1)
    peer = outcomes["summary only", "silent"].billed(0.1)
    where = f"best fixed mark ({best.mark:.0%} of the window, tail {best.tail:.0%})"
    return [
        Figure(
            name,
            "ladder, silent: billed input at cache 0.1",
            round(ladder),
            "tokens",
            where,
            round(best.outcome.billed(0.1)),
            "ratio ≤ 1.02",
            ladder <= 1.02 * best.outcome.billed(0.1),
        ),
        Figure(
            name,
            f"{where}: billed input at cache 0.1 (the lowest the sweep found)",
            round(best.outcome.billed(0.1)),
            "tokens",
            "summary only",
            round(peer),
        ),
    ]


def group(shape: Shape) -> str:
    return f"Context economy and fidelity ({shape.title})"


def _labels(facts: list[Fact]) -> str:
    return " ".join(f.label for f in facts) or "—"


def table(
    shape: Shape, facts: tuple[Fact, ...], outcomes: dict[tuple[Strategy, Behaviour], Outcome]
) -> Table:
    rows = []
    for (strategy, behaviour), o in outcomes.items():
        m = o.model
        window = "∞" if strategy == "no compaction" else f"{shape.window:,}"
        rows.append(
            [
                strategy,
                behaviour,
                f"{m.prompt_tokens:,}",
                *(f"{o.billed(price):,.0f}" for price in CACHE_PRICES),
                f"{m.cache.hit_rate:.0%}",
                str(m.summary_calls),
                str(m.requests),
                f"{m.largest:,} / {window}" + ("" if o.completed else " (a turn failed)"),
                f"{len(o.visible)}/{len(facts)} ({_labels(o.visible)})",
                _labels(o.recoverable),
            ]
        )
    where = "; ".join(
        f"{f.label}: "
        + (
            f"turn {f.turn} prompt"
            if f.step is None
            else f"{f.where} of turn {f.turn} step {f.step}"
            + (f" (was {f.old_turn}.{f.old_step})" if f.old_key else "")
        )
        for f in facts
    )
    return Table(
        group(shape),
        [
            "strategy",
            "behaviour",
            "prompt tokens",
            *(f"billed input at cache {price}" for price in CACHE_PRICES),
            "cache hit rate",
            "summary calls",
            "requests",
            "largest request / window",
            "facts visible at the end",
            "others in a named spill file",
        ],
        rows,
        note=(
            f"Facts — {where}. 'reply' is said only in the model's own step text; 'corrected' "
            "counts when its newest value is visible and the old one does not come after it. "
            "Billed input is in full-price tokens: uncached + price × cached, where a "
            "request's cached tokens are its longest common prefix (header, then messages, "
            "serialized) with an earlier request of the run, in tokens, rounded down to "
            "128-token steps, from 1,024 tokens on. Summary calls "
            "are counted in requests, prompt tokens and billed input; a request refused as "
            "over the window is counted as sent, and caches nothing."
        ),
    )


def economy_target(shape: Shape) -> float:
    """The ladder's billed input against summary only's, at most: 0.9× at 16k, 0.6× at 128k."""
    return 0.9 if shape.window <= 16_000 else 0.6


def targets(
    shape: Shape, facts: tuple[Fact, ...], outcomes: dict[tuple[Strategy, Behaviour], Outcome]
) -> list[Figure]:
    """The ladder's targets beside summary only: billed input at cache 0.1 at most 0.9× its
    at a 16k window, 0.6× at 128k (:func:`economy_target`),
    prompt tokens at most its, silent facts at least its, noting facts all, no request over
    the window (every turn completed)."""
    name = group(shape)
    figures = []
    for behaviour in BEHAVIOURS:
        ladder = outcomes["ladder", behaviour]
        peer = outcomes["summary only", behaviour]
        figures += [
            Figure(
                name,
                f"ladder, {behaviour}: billed input at cache 0.1",
                round(ladder.billed(0.1)),
                "tokens",
                "summary only",
                round(peer.billed(0.1)),
                f"ratio ≤ {economy_target(shape)}",
                ladder.billed(0.1) <= economy_target(shape) * peer.billed(0.1),
            ),
            Figure(
                name,
                f"ladder, {behaviour}: prompt tokens",
                ladder.model.prompt_tokens,
                "tokens",
                "summary only",
                peer.model.prompt_tokens,
                "ratio ≤ 1",
                ladder.model.prompt_tokens <= peer.model.prompt_tokens,
            ),
        ]
        kept, theirs = len(ladder.visible), len(peer.visible)
        figures.append(
            Figure(
                name,
                f"ladder, {behaviour}: facts visible at the end ({_labels(ladder.visible)})",
                kept,
                f"of {len(facts)}",
                "summary only",
                theirs,
                "≥ summary only's" if behaviour == "silent" else f"all {len(facts)}",
                kept >= theirs if behaviour == "silent" else kept == len(facts),
            )
        )
        figures.append(
            Figure(
                name,
                f"ladder, {behaviour}: largest request",
                ladder.model.largest,
                "tokens",
                "the window",
                shape.window,
                "≤ window, every turn completed",
                ladder.model.largest <= shape.window and ladder.completed,
            )
        )
    return figures


if __name__ == "__main__":
    for item in run():
        print(item)
