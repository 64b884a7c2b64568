"""Compaction costs apart from the model: the transaction on a big surface, and the pre-step
pressure check at 100 vs 10,000 surface nodes."""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

# Loaded as in a session with a real model: how often the garbage collector passes during a
# compaction depends on how much the process holds, and the SDK is most of that.
import agent.llm.client  # noqa: F401
from agent.hooks import Hooks
from agent.log.messages import event_message
from agent.log.registry import EventRegistry
from agent.log.session import Session
from agent.loop import Agent
from agent.meter import TokenMeter
from agent.tokens import Estimator
from compact.basic import BasicCompactService
from compact.contract.events import register_events
from compact.parts.checkpoint import Summary, SummaryJob
from tests.bench.report import Figure
from tui.demo import ScriptedModel


class InstantSummaries(BasicCompactService):
    """The backend with its one subclass hook answering at once: what is left to time is
    range selection, pricing, the bracket and the surface replace."""

    async def summarize(self, job: SummaryJob) -> Summary:
        return Summary("## Primary request and intent\n- benchmark", None, "instant", None)


def build(
    home: Path, nodes: int, estimator: Estimator, window: int
) -> tuple[Session, Agent, InstantSummaries]:
    session = Session.create(home, cwd=str(home), registry=register_events(EventRegistry()))
    turn = 0
    while len(session.surface) < nodes:
        turn += 1
        session.append("turn/start", {"turn": turn})
        session.append("user/message", {"content": f"request {turn}: check the build output"})
        session.append(
            "assistant/message",
            {
                "turn": turn,
                "step": 1,
                "finish_reason": "tool_calls",
                "model": "m",
                "tool_calls": [
                    {"id": f"c{turn}", "name": "bash", "arguments": '{"command": "make"}'}
                ],
            },
        )
        session.append(
            "tool/result",
            {
                "turn": turn,
                "step": 1,
                "call_id": f"c{turn}",
                "name": "bash",
                "content": "gcc -c main.c\nok\n[exit 0 · 0.2s]",
            },
        )
        session.append(
            "assistant/message",
            {"turn": turn, "step": 2, "text": "Built fine.", "finish_reason": "stop", "model": "m"},
        )
        session.append("turn/end", {"turn": turn, "reason": "completed"})
    meter = TokenMeter(session, estimator, window)
    model = ScriptedModel(estimator)
    agent = Agent(session, model, "m", [], hooks=Hooks(), context_window=window)
    service = InstantSummaries(session, meter, model)
    return session, agent, service


def median_us(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def run() -> list[Figure]:
    estimator = Estimator()
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp:
        # Pressure check below the threshold: measure only, whatever the session length.
        checks = {}
        for nodes in (100, 10_000):
            session, agent, service = build(Path(tmp) / f"p{nodes}", nodes, estimator, 10_000_000)
            session.append("turn/start", {"turn": 10**6})
            loop = asyncio.new_event_loop()

            def check(
                loop: asyncio.AbstractEventLoop = loop,
                agent: Agent = agent,
                service: InstantSummaries = service,
            ) -> None:
                loop.run_until_complete(service._on_pre_step(agent.envelope(), 10**6, 1))

            check()
            checks[nodes] = median_us(check, 300)
            loop.close()
            session.close()
        figures.append(
            Figure(
                "Compaction",
                "pre-step pressure check at 10,000 nodes",
                checks[10_000],
                "µs",
                "at 100 nodes",
                checks[100],
                "ratio ≤ 2",
                checks[10_000] / checks[100] <= 2,
            )
        )

        # One compaction of a 10,000-node surface with an instant summarizer, next to the
        # least any summarizer call needs: deriving and serializing the shadowed messages.
        session, agent, service = build(Path(tmp) / "c", 10_000, estimator, 10_000_000)
        span = service.select_range(0)
        assert span is not None
        # The figure is the compaction: not the tokenizer's load, nor the meter's first fold
        # of the 10,000 appended events (it folds lazily until it is read).
        service.meter.measure(agent.envelope())
        t = time.perf_counter()
        json.dumps([m for s in span if (m := event_message(session.events[s]))])
        baseline = (time.perf_counter() - t) * 1e3
        t = time.perf_counter()
        result = asyncio.run(service.compact_now(agent.envelope()))
        overhead = (time.perf_counter() - t) * 1e3
        assert result is not None and len(result.shadowed_seqs) == len(span)
        session.close()
        figures.append(
            Figure(
                "Compaction",
                f"compaction of {len(span):,} nodes, instant summarizer",
                overhead,
                "ms",
                "derive + serialize the shadowed messages",
                baseline,
            )
        )
    return figures
