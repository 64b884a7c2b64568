"""Helpers for building real sessions in a temporary home."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.log.events import Event
from agent.log.session import Session


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def session(home: Path, tmp_path: Path) -> Session:
    s = Session.create(home, cwd=str(tmp_path))
    yield s
    s.close()


def user(session: Session, text: str) -> Event:
    return session.append("user/message", {"content": text})


def assistant(
    session: Session, text: str = "", calls: list[str] = (), turn: int = 1, step: int = 1
) -> Event:
    return session.append(
        "assistant/message",
        {
            "turn": turn,
            "step": step,
            "text": text,
            "tool_calls": [
                {"id": c, "name": "bash", "arguments": '{"command": "ls"}'} for c in calls
            ],
            "finish_reason": "tool_calls" if calls else "stop",
            "model": "m",
        },
    )


def result(
    session: Session, call_id: str, content: str = "out", turn: int = 1, step: int = 1
) -> Event:
    return session.append(
        "tool/result",
        {"turn": turn, "step": step, "call_id": call_id, "name": "bash", "content": content},
    )


def replace(
    session: Session, start: int, end: int, text: str, cite: list[int] | None = None
) -> Event:
    if cite is None:
        nodes = list(session.surface)
        cite = nodes[nodes.index(start) : nodes.index(end) + 1]
    return session.append(
        "user/message",
        {"content": text, "source": "compact", "compaction_id": "c"},
        surface_op={"op": "replace", "start": start, "end": end},
        source_event_seqs=sorted(cite),
    )
