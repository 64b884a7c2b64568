"""Real sessions with compaction events registered, a meter, an agent and a backend."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.llm.chat import ChatModel
from agent.llm.client import OpenAICompatible
from agent.llm.retry import RetryPolicy
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
from tests.openai_server import OpenAIServer
from tools.bash import BashTool
from tui.demo import ScriptedModel


@pytest.fixture(scope="session")
def estimator() -> Estimator:
    return Estimator()


@dataclass
class Rig:
    """Everything one compaction test needs, built from real objects."""

    session: Session
    meter: TokenMeter
    agent: Agent
    service: BasicCompactService
    notices: list[str]

    def surface_types(self) -> list[str]:
        return [self.session.events[s].type for s in self.session.surface]

    def compact_events(self) -> list[str]:
        return [e.type for e in self.session.events if e.type.startswith("compact/")]


@pytest.fixture
def make_rig(tmp_path: Path, estimator: Estimator) -> Iterator[object]:
    made: list[Rig] = []

    def make(
        model: ChatModel | None = None,
        window: int | None = 8000,
        pruner: bool = False,
        system: str | None = None,
        **settings: object,
    ) -> Rig:
        registry = register_events(EventRegistry())
        session = Session.create(tmp_path / "home", cwd=str(tmp_path), registry=registry)
        meter = TokenMeter(session, estimator, window)
        model = model or ScriptedModel(estimator, context_window=window or 8000)
        loop_settings = LoopSettings(system_prompt=system) if system else LoopSettings()
        bash = BashTool(cwd=tmp_path, spill_dir=session.spill_dir, policy="auto")
        agent = Agent(session, model, "m", [bash], settings=loop_settings, context_window=window)
        service = BasicCompactService(
            session,
            meter,
            model,
            CompactionSettings(**settings),  # type: ignore[arg-type]
            pruner=Pruner(session, meter) if pruner else None,
        )
        notices: list[str] = []
        service.add_listener(lambda n: notices.append(n.text))
        rig = Rig(session, meter, agent, service, notices)
        made.append(rig)
        return rig

    yield make
    for rig in made:
        rig.service.close()
        rig.session.close()


def server_model(server: OpenAIServer) -> OpenAICompatible:
    return OpenAICompatible(
        base_url=server.base_url,
        api_key=None,
        provider="local",
        retry=RetryPolicy(max_attempts=1, base_delay_s=0.01),
        request_timeout=10,
    )


def add_turn(
    session: Session, turn: int, words: int = 20, calls: int = 1, open_turn: bool = False
) -> None:
    """A closed turn: request, ``calls`` tool steps with ~``words``-word outputs, an answer."""
    filler = " ".join(f"w{turn}_{i}" for i in range(words))
    session.append("turn/start", {"turn": turn})
    session.append("user/message", {"content": f"request {turn}: {filler[:80]}"})
    for step in range(1, calls + 1):
        session.append("step/start", {"turn": turn, "step": step})
        cid = f"c{turn}_{step}"
        session.append(
            "assistant/message",
            {
                "turn": turn,
                "step": step,
                "finish_reason": "tool_calls",
                "model": "m",
                "tool_calls": [{"id": cid, "name": "bash", "arguments": '{"command": "ls -la"}'}],
            },
        )
        session.append(
            "tool/result",
            {
                "turn": turn,
                "step": step,
                "call_id": cid,
                "name": "bash",
                "content": f"{filler}\n[exit 0 · 0.01s]",
                "exit_code": 0,
            },
        )
        session.append("step/end", {"turn": turn, "step": step})
    step = calls + 1
    session.append("step/start", {"turn": turn, "step": step})
    session.append(
        "assistant/message",
        {
            "turn": turn,
            "step": step,
            "text": f"answer {turn}: {filler[:200]}",
            "finish_reason": "stop",
            "model": "m",
        },
    )
    session.append("step/end", {"turn": turn, "step": step})
    if not open_turn:
        session.append("turn/end", {"turn": turn, "reason": "completed"})
