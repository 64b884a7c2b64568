"""A session with many tool results, written through the real :class:`Session`: what a long
agent run leaves behind, for the pruning benchmark and the SIGTERM-during-prune test."""

from __future__ import annotations

import json
from pathlib import Path

from agent.log.session import Session
from compact.contract.registry import build_registry

OUTPUT = (
    "".join(f"line {i}: compiled module_{i}.c into build/module_{i}.o\n" for i in range(12))
    + "[exit 0 · 0.1s]"
)
"""A result of about 200 tokens: its placeholder costs a fraction of it."""


def build_long_session(home: Path, results: int, cwd: str, *, steps_per_turn: int = 50) -> Session:
    """A closed session under ``home`` holding ``results`` bash calls with their results, in
    turns of ``steps_per_turn`` steps (a ``turn/end`` is fsynced: one per call would make the
    build slow). Returns it closed; open it again by its id."""
    session = Session.create(home, cwd=cwd, registry=build_registry())
    done = turn = 0
    while done < results:
        turn += 1
        session.append("turn/start", {"turn": turn})
        session.append("user/message", {"content": f"turn {turn}: build the next targets"})
        for step in range(1, min(steps_per_turn, results - done) + 1):
            done += 1
            call = f"call_{done}"
            arguments = json.dumps({"command": f"make target_{done}"})
            session.append("step/start", {"turn": turn, "step": step})
            session.append(
                "assistant/message",
                {
                    "turn": turn,
                    "step": step,
                    "model": "m",
                    "finish_reason": "tool_calls",
                    "tool_calls": [{"id": call, "name": "bash", "arguments": arguments}],
                },
            )
            session.append(
                "tool/start",
                {
                    "turn": turn,
                    "step": step,
                    "call_id": call,
                    "name": "bash",
                    "arguments": arguments,
                },
            )
            session.append(
                "tool/result",
                {
                    "turn": turn,
                    "step": step,
                    "call_id": call,
                    "name": "bash",
                    "content": OUTPUT,
                    "exit_code": 0,
                    "duration_s": 0.1,
                },
            )
            session.append("step/end", {"turn": turn, "step": step})
        session.append("turn/end", {"turn": turn, "reason": "completed"})
    session.close()
    return session
