"""One pressure reading per step: the pre-step checkpoint asks the meter once and every
decision there (compact at the mark, summarize ahead before it) reads that value.

The real loop drives the demo model in a small window with the basic backend as the wiring
builds it (pruner, summaries written ahead); the meter is a real :class:`TokenMeter` that
counts the readings asked of it. A checkpoint that wrote no compaction read it once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.envelope import Envelope
from agent.log.events import Event
from agent.log.registry import EventRegistry
from agent.log.session import Session
from agent.loop import Agent
from agent.measurement import Measurement
from agent.meter import TokenMeter
from agent.tokens import Estimator
from compact.basic import BasicCompactService, Pruner
from compact.contract.events import register_events
from compact.contract.policy import CompactionSettings
from tools.bash import BashTool
from tui.demo import ScriptedModel

WINDOW = 2_500


class CountingMeter(TokenMeter):
    """A token meter that counts the readings asked of it (a bound is one reading, even
    when it measures)."""

    readings = 0
    _inside = False

    def measure(self, envelope: Envelope | None = None, **header: Any) -> Measurement:
        if not self._inside:
            self.readings += 1
        return super().measure(envelope, **header)

    def bound(self, envelope: Envelope, *, warm_at: int = 0) -> int:
        self.readings += 1
        self._inside = True
        try:
            return super().bound(envelope, warm_at=warm_at)
        finally:
            self._inside = False


async def test_each_checkpoint_reads_the_meter_once(
    tmp_path: Path, workdir: Path, estimator: Estimator
) -> None:
    estimator.messages_tokens([{"role": "user", "content": "load the tokenizer"}])
    session = Session.create(
        tmp_path / "home", cwd=str(workdir), registry=register_events(EventRegistry())
    )
    meter = CountingMeter(session, estimator, WINDOW)
    model = ScriptedModel(estimator, context_window=WINDOW)
    bash = BashTool(cwd=workdir, spill_dir=session.spill_dir, policy="auto")
    agent = Agent(session, model, "m", [bash], context_window=WINDOW)
    service = BasicCompactService(
        session, meter, model, CompactionSettings(), pruner=Pruner(session, meter), ahead=True
    )
    service.install(agent.hooks)
    # What each checkpoint asked: the readings since the previous step opened, and whether
    # a compaction was written in between.
    checkpoints: list[tuple[int, bool]] = []
    since = {"readings": 0, "compacted": False}

    def on_event(event: Event) -> None:
        if event.type == "compact/start":
            since["compacted"] = True
        elif event.type == "step/start":
            checkpoints.append((meter.readings - int(since["readings"]), bool(since["compacted"])))
            since.update(readings=meter.readings, compacted=False)

    session.subscribe(on_event)
    try:
        for n in range(1, 9):
            await agent.run_turn(f"look at README.md and parser.py, round {n}")
    finally:
        service.close()
        bash.close()
        session.close()
    quiet = [readings for readings, compacted in checkpoints if not compacted]
    assert any(compacted for _, compacted in checkpoints), "no compaction: window too large"
    assert len(quiet) > 10 and set(quiet) == {1}, checkpoints
