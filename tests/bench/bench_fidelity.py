"""Context fidelity: what a long bash-heavy session still remembers, and what it cost.

A scripted session of 4 turns × 12 bash steps (real bash, real files of ~1,500 tokens each),
a 16k window, then a final question. Six facts are planted: one in the first user message,
five in tool outputs (at the head, the middle and the tail of an output). The model plays
two behaviours: *silent* (its step text never mentions what it saw) and *noting* (its next
step text repeats a fact it just saw, as real models do). As summarizer it keeps every fact
it is shown, so what is lost is lost by the context manager, not by the model.

Four strategies run the same session in the same run: reefline's ladder (prune, then
summarize), summary only (pruner off), mask only (the pruner alone, no summaries) and no
compaction with an unlimited window. For each: total prompt tokens (conversation and
summary requests), requests, summary calls, the largest request against the window, and
which facts are visible in the final request — or, if not, recoverable from a spill file the
final request names.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent.chat import ChatRequest
from agent.envelope import Envelope
from agent.llm import ToolCall, Usage
from agent.llm_errors import ContextOverflow
from agent.loop import Agent, Hooks
from agent.loop_settings import LoopSettings
from agent.meter import TokenMeter
from agent.registry import EventRegistry
from agent.replies import Completed, Reply, StreamEvent
from agent.session import Session
from agent.tokens import Estimator
from compact.basic import BasicCompactService
from compact.events import register_events
from compact.policy import CompactionSettings
from compact.prune import Pruner
from tests.bench.report import Figure, Table
from tools.bash import BashTool

WINDOW = 16_000
TURNS = 4
STEPS = 12
OUTPUT_TOKENS = 1_500
UNLIMITED = 10_000_000
SUMMARY_MARK = "## Primary request and intent"

Behaviour = Literal["silent", "noting"]
Strategy = Literal["ladder", "summary only", "mask only", "no compaction"]
STRATEGIES: tuple[Strategy, ...] = ("ladder", "summary only", "mask only", "no compaction")


@dataclass(frozen=True)
class Fact:
    key: str
    """The token searched for in the final request."""
    sentence: str
    turn: int
    step: int | None
    """None: planted in the first user message."""
    where: Literal["prompt", "head", "middle", "tail"]


FACTS = (
    Fact("FACT-A-7731", "The deploy token is named FACT-A-7731.", 1, None, "prompt"),
    Fact("FACT-B-54329", "The staging database listens on port FACT-B-54329.", 1, 3, "head"),
    Fact("FACT-C-0918", "The flaky test is test_refund_race, ticket FACT-C-0918.", 1, 9, "middle"),
    Fact("FACT-D-4410", "The cache is invalidated by the nightly job FACT-D-4410.", 2, 6, "tail"),
    Fact("FACT-E-2207", "The payment provider sandbox key id is FACT-E-2207.", 3, 4, "middle"),
    Fact("FACT-F-6652", "The release branch is frozen under change FACT-F-6652.", 4, 8, "head"),
)
_FACT = re.compile(r"FACT-[A-F]-\d{4,5}")
_TURN = re.compile(r"Turn \d+:|Final question")
_SPILL = re.compile(r"(/\S+?\.(?:out|log|txt))\b")


def write_outputs(folder: Path, estimator: Estimator, turns: int) -> None:
    """One log file per step, ~OUTPUT_TOKENS tokens, facts planted where FACTS says."""
    for turn in range(1, turns + 1):
        for step in range(1, STEPS + 1):
            lines = []
            n = 0
            while estimator.count("\n".join(lines)) < OUTPUT_TOKENS:
                n += 1
                lines.append(
                    f"2026-11-30T12:{n % 60:02d}:{(n * 7) % 60:02d}Z worker-{n % 5} "
                    f"turn{turn} step{step} processed batch {turn * 1000 + step * 50 + n} "
                    f"in {(n * 13) % 97} ms, queue depth {(n * 3) % 17}"
                )
            for fact in FACTS:
                if (fact.turn, fact.step) == (turn, step):
                    at = {"head": 1, "middle": len(lines) // 2, "tail": len(lines) - 1}
                    lines.insert(at[fact.where], f"NOTE {fact.sentence}")
            (folder / f"out-{turn}-{step}.log").write_text("\n".join(lines) + "\n")


class Counter:
    """Prices every request independently of the client (with a per-message cache, so the
    no-compaction run does not cost quadratic time)."""

    def __init__(self, estimator: Estimator) -> None:
        self.estimator = estimator
        self._cache: dict[str, int] = {}

    def request(self, request: ChatRequest) -> int:
        total = self.estimator.tools_tokens(request.tools)
        for message in request.messages:
            key = json.dumps(message, sort_keys=True)
            if key not in self._cache:
                self._cache[key] = self.estimator.message_tokens(message)
            total += self._cache[key]
        return total


@dataclass
class BenchModel:
    """The scripted provider: an agent that reads one file per step, and a summarizer that
    keeps every fact it is shown. Refuses a request over its window, as a server would."""

    behaviour: Behaviour
    counter: Counter
    window: int
    turns: int
    provider: str = "bench"
    steps_done: dict[int, int] = field(default_factory=dict)
    requests: int = 0
    summary_calls: int = 0
    prompt_tokens: int = 0
    largest: int = 0
    final_request: list[dict[str, Any]] | None = None

    def context_window(self, model: str) -> int | None:
        return self.window

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        prompt = self.counter.request(request)
        self.requests += 1
        self.prompt_tokens += prompt
        self.largest = max(self.largest, prompt)
        if prompt > self.window:
            raise ContextOverflow(
                f"bench says: this model's maximum context length is {self.window} tokens",
                status=400,
                limit=self.window,
            )
        last = request.messages[-1]
        if last.get("role") == "user" and SUMMARY_MARK in str(last.get("content")):
            self.summary_calls += 1
            reply = self._summary(request)
        else:
            reply = self._step(request)
        completion = self.counter.estimator.count(reply.text) + 8 * len(reply.tool_calls)
        reply.usage = Usage(prompt_tokens=prompt, completion_tokens=completion)
        yield Completed(reply)

    def _step(self, request: ChatRequest) -> Reply:
        turn = _current_turn(request.messages, self.turns)
        done = self.steps_done.get(turn, 0)
        if turn > self.turns:
            self.final_request = request.messages
            return Reply("Here is what I know.", None, [], "stop", None, "bench")
        if done >= STEPS:
            return Reply(f"Turn {turn} is done.", None, [], "stop", None, "bench")
        self.steps_done[turn] = done + 1
        text = f"Step {done + 1}: reading out-{turn}-{done + 1}.log."
        last = request.messages[-1]
        if self.behaviour == "noting" and last.get("role") == "tool":
            seen = _FACT.findall(str(last.get("content")))
            if seen:
                sentence = next(f.sentence for f in FACTS if f.key == seen[0])
                text = f"Noted: {sentence} " + text
        args = json.dumps({"command": f"cat out-{turn}-{done + 1}.log"})
        call = ToolCall(id=f"call-{turn}-{done + 1}", name="bash", arguments=args)
        return Reply(text, None, [call], "tool_calls", None, "bench")

    def _summary(self, request: ChatRequest) -> Reply:
        body = request.messages[1:-1]
        text = "\n".join(str(m.get("content") or "") for m in body)
        requests = [
            " ".join(str(m["content"]).split())[:160]
            for m in body
            if m.get("role") == "user" and "<compacted-summary>" not in str(m["content"])
        ]
        earlier = re.findall(r"^- User: .*$", text, flags=re.M)
        facts = [f.sentence for f in FACTS if f.key in text]
        commands = sum(len(m.get("tool_calls") or ()) for m in body)
        out = [
            SUMMARY_MARK,
            *dict.fromkeys([*earlier, *(f"- User: {r}" for r in requests)]),
            "## Critical context",
            *(f"- {s}" for s in facts),
            "## Current work",
            f"- {commands} more commands run (cat of step logs)",
        ]
        summary = "\n".join(out)
        finish = "stop"
        cap = request.max_tokens
        if cap is not None and self.counter.estimator.count(summary) > cap:
            finish = "length"
        return Reply(summary, None, [], finish, None, "bench")


def _current_turn(messages: list[dict[str, Any]], turns: int) -> int:
    """The turn being worked on: the newest turn prompt on the surface, or quoted by the
    checkpoint when the prompt itself was compacted away."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        found = _TURN.findall(str(message.get("content") or ""))
        if found:
            last = found[-1]
            return turns + 1 if last.startswith("Final") else int(last.split()[1].rstrip(":"))
    raise AssertionError("no turn prompt on the surface")


def _prompt(turn: int) -> str:
    first = f" {FACTS[0].sentence} Keep it in mind." if turn == 1 else ""
    return f"Turn {turn}: read the twelve step logs of turn {turn} one by one.{first}"


def mask_only(session: Session, meter: TokenMeter, settings: CompactionSettings) -> Any:
    """The ladder's masking alone at the pre-step checkpoint (same marks, same retained tail,
    same whole-pass rule), never a summary."""
    pruner = Pruner(session, meter)
    threshold = settings.threshold(WINDOW)

    async def pre_step(envelope: Envelope, turn: int, step: int, signal: asyncio.Event) -> None:
        total = meter.measure(envelope).total
        if total < settings.prune_at(WINDOW):
            return
        nodes = session.surface
        cut, kept = len(nodes), 0
        while cut > 0 and (kept < settings.retain(WINDOW) or cut == len(nodes)):
            cut -= 1
            kept += meter.price(nodes[cut])
        if total >= threshold or await pruner.savings(cut) >= 0.1 * WINDOW:
            await pruner.prune(protect_from=cut, trigger="pressure", signal=signal)

    return pre_step


@dataclass
class Outcome:
    strategy: Strategy
    behaviour: Behaviour
    model: BenchModel
    visible: list[str]
    recoverable: list[str]
    before_checkpoint: list[str]
    """Facts planted before the newest checkpoint started."""
    checkpoints: int
    completed: bool


def run_one(
    root: Path, strategy: Strategy, behaviour: Behaviour, estimator: Estimator, turns: int = TURNS
) -> Outcome:
    work = root / f"{strategy.replace(' ', '-')}-{behaviour}-{turns}"
    work.mkdir()
    write_outputs(work, estimator, turns)
    window = UNLIMITED if strategy == "no compaction" else WINDOW
    session = Session.create(
        work / "home", cwd=str(work), registry=register_events(EventRegistry())
    )
    meter = TokenMeter(session, estimator, window)
    model = BenchModel(behaviour, Counter(estimator), window, turns)
    bash = BashTool(cwd=work, spill_dir=session.spill_dir, policy="auto")
    hooks = Hooks()
    settings = CompactionSettings()
    service: BasicCompactService | None = None
    if strategy in ("ladder", "summary only"):
        pruner = Pruner(session, meter) if strategy == "ladder" else None
        service = BasicCompactService(session, meter, model, settings, pruner=pruner)
        service.install(hooks)
    elif strategy == "mask only":
        hooks.pre_step.append(mask_only(session, meter, settings))
    agent = Agent(
        session,
        model,
        "bench-model",
        [bash],
        settings=LoopSettings(max_steps=STEPS + 2),
        hooks=hooks,
        context_window=window,
    )

    async def drive() -> bool:
        ok = True
        for turn in range(1, turns + 1):
            ok = (await agent.run_turn(_prompt(turn))).reason == "completed" and ok
        final = "Final question: list every fact you were told or saw in the logs."
        return (await agent.run_turn(final)).reason == "completed" and ok

    completed = asyncio.run(drive())
    final = model.final_request or []
    text = "\n".join(str(m.get("content") or "") for m in final)
    visible = [f.key for f in FACTS if f.key in text]
    recoverable = []
    for fact in FACTS:
        if fact.key in visible:
            continue
        for path in _SPILL.findall(text):
            file = Path(path)
            if file.is_file() and fact.key in file.read_text(errors="replace"):
                recoverable.append(fact.key)
                break
    summaries = [e for e in session.events if e.type == "compact/summary"]
    before: list[str] = []
    if summaries:
        newest = summaries[-1].data.compaction_id  # type: ignore[attr-defined]
        start = next(
            e.seq
            for e in session.events
            if e.type == "compact/start" and e.data.compaction_id == newest  # type: ignore[attr-defined]
        )
        before = [f.key for f in FACTS if _planted_at(session, f) < start]
    if service is not None:
        service.close()
    meter.close()
    session.close()
    return Outcome(
        strategy, behaviour, model, visible, recoverable, before, len(summaries), completed
    )


def _planted_at(session: Session, fact: Fact) -> int:
    """Seq of the first surface event whose content holds the fact."""
    for event in session.events:
        content = getattr(event.data, "content", None)
        if isinstance(content, str) and fact.key in content:
            return event.seq
    raise AssertionError(f"{fact.key} was never planted")


LONG_TURNS = 10
"""A longer run of the same session (facts still in turns 1–4), where the masked history
grows until the ladder summarizes it: the checkpoint must carry what the originals said."""


def run() -> list[Figure | Table]:
    estimator = Estimator()
    items: list[Figure | Table] = []
    with tempfile.TemporaryDirectory() as tmp:
        for turns in (TURNS, LONG_TURNS):
            outcomes: dict[tuple[Strategy, Behaviour], Outcome] = {}
            for behaviour in ("silent", "noting"):
                for strategy in STRATEGIES:
                    outcomes[strategy, behaviour] = run_one(
                        Path(tmp), strategy, behaviour, estimator, turns
                    )
            items += [table(outcomes, turns), *targets(outcomes, turns)]
    return items


def group(turns: int) -> str:
    return (
        f"Context fidelity ({turns} turns × {STEPS} bash steps of ~{OUTPUT_TOKENS:,} tokens, "
        f"{WINDOW // 1000}k window)"
    )


def table(outcomes: dict[tuple[Strategy, Behaviour], Outcome], turns: int) -> Table:
    rows = []
    for (strategy, behaviour), o in outcomes.items():
        m = o.model
        rows.append(
            [
                strategy,
                behaviour,
                f"{m.prompt_tokens:,}",
                str(m.requests),
                str(m.summary_calls),
                f"{m.largest:,} / {'∞' if strategy == 'no compaction' else f'{WINDOW:,}'}",
                f"{len(o.visible)}/6 ({' '.join(k.split('-')[1] for k in o.visible) or '—'})",
                f"{len(o.recoverable)} ({' '.join(k.split('-')[1] for k in o.recoverable) or '—'})",
            ]
        )
    return Table(
        group(turns),
        [
            "strategy",
            "model",
            "prompt tokens",
            "requests",
            "summary calls",
            "largest request",
            "facts visible at the end",
            "others in a named spill file",
        ],
        rows,
        note=(
            "Facts: A in the first user message; B at the head of an output (turn 1), C in the "
            "middle (turn 1), D at the tail (turn 2), E in the middle (turn 3), F at the head "
            "(turn 4). Summary calls are counted in requests and prompt tokens."
        ),
    )


def targets(outcomes: dict[tuple[Strategy, Behaviour], Outcome], turns: int) -> list[Figure]:
    """The ladder's targets: no request over the window; *noting* keeps all six facts in
    view; *silent* keeps every fact planted before the newest checkpoint in view and every
    other one in view or in a spill file the final request names; on the 4-turn session,
    total prompt tokens at most 0.8× summary only's."""
    name = group(turns)
    figures = []
    for behaviour in ("silent", "noting"):
        ladder = outcomes["ladder", behaviour]
        summary = outcomes["summary only", behaviour]
        ratio_target = turns == TURNS
        figures.append(
            Figure(
                name,
                f"ladder, {behaviour}: total prompt tokens",
                ladder.model.prompt_tokens,
                "tokens",
                "summary only",
                summary.model.prompt_tokens,
                "ratio ≤ 0.8" if ratio_target else None,
                ladder.model.prompt_tokens <= 0.8 * summary.model.prompt_tokens
                if ratio_target
                else None,
            )
        )
        figures.append(
            Figure(
                name,
                f"ladder, {behaviour}: largest request",
                ladder.model.largest,
                "tokens",
                "the window",
                WINDOW,
                "≤ window, every turn completed",
                ladder.model.largest <= WINDOW and ladder.completed,
            )
        )
        if behaviour == "noting":
            figures.append(
                Figure(
                    name,
                    "ladder, noting: facts visible in the final request",
                    len(ladder.visible),
                    "of 6",
                    target="6/6",
                    ok=len(ladder.visible) == 6,
                )
            )
            continue
        covered = all(k in ladder.visible for k in ladder.before_checkpoint)
        rest = [f.key for f in FACTS if f.key not in ladder.before_checkpoint]
        reachable = all(k in ladder.visible or k in ladder.recoverable for k in rest)
        # On the long run the ladder must have summarized every planted fact away from its
        # output (else the clause about checkpoints would hold for want of one).
        summarized = turns == TURNS or len(ladder.before_checkpoint) == len(FACTS)
        why = (
            "no checkpoint was needed: masking kept the context below the threshold"
            if ladder.checkpoints == 0
            else f"{len(ladder.before_checkpoint)} planted before the newest of "
            f"{ladder.checkpoints} checkpoints"
        )
        figures.append(
            Figure(
                name,
                f"ladder, silent: facts visible ({len(ladder.visible)}) or in a spill file the "
                f"final request names ({len(ladder.recoverable)}); {why}",
                len(ladder.visible) + len(ladder.recoverable),
                "of 6",
                target="all planted before the newest checkpoint visible, every other reachable"
                + ("" if turns == TURNS else "; all six planted before a checkpoint"),
                ok=covered and reachable and summarized,
            )
        )
    return figures


if __name__ == "__main__":
    for item in run():
        print(item)
