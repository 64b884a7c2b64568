"""Tests of the compaction package.

The helpers below build real session logs in the exact shapes the contract documents
(``compact/start`` · ``compact/summary`` · replacement ``user/message`` · ``compact/end``;
``compact/prune`` followed by its replacement ``tool/result``) so consumers of the log — the
timeline, the reports — are tested against what a backend writes, without a backend.
"""

from __future__ import annotations

import json
from pathlib import Path

from agent.log.events import Event
from agent.log.registry import EventRegistry
from agent.log.session import Session
from compact.contract.events import register_events


def registry() -> EventRegistry:
    return register_events(EventRegistry())


def new_session(tmp_path: Path) -> Session:
    return Session.create(tmp_path / "home", cwd=str(tmp_path), registry=registry())


def reopen(session: Session) -> Session:
    """Close ``session`` and open it again: a real ``session/resume`` (and turn repair)."""
    session.close()
    return Session.open(session.home, session.id, registry=registry())


def user_turn(session: Session, turn: int, prompt: str) -> None:
    session.append("turn/start", {"turn": turn})
    session.append("user/message", {"content": prompt})


def bash_step(
    session: Session, turn: int, step: int, command: str, output: str, *, text: str = ""
) -> tuple[Event, Event]:
    """One closed step running ``command``; returns (assistant/message, tool/result)."""
    call_id = f"call-{turn}-{step}"
    arguments = json.dumps({"command": command})
    session.append("step/start", {"turn": turn, "step": step})
    call = session.append(
        "assistant/message",
        {
            "turn": turn,
            "step": step,
            "text": text,
            "tool_calls": [{"id": call_id, "name": "bash", "arguments": arguments}],
            "finish_reason": "tool_calls",
            "model": "m",
        },
    )
    session.append(
        "tool/start",
        {"turn": turn, "step": step, "call_id": call_id, "name": "bash", "arguments": arguments},
    )
    result = session.append(
        "tool/result",
        {
            "turn": turn,
            "step": step,
            "call_id": call_id,
            "name": "bash",
            "content": output,
            "exit_code": 0,
            "duration_s": 0.25,
        },
    )
    session.append("step/end", {"turn": turn, "step": step})
    return call, result


def answer(session: Session, turn: int, step: int, text: str, *, end: bool = True) -> Event:
    """A final step answering ``text``; closes the turn (``completed``) unless ``end`` is False."""
    session.append("step/start", {"turn": turn, "step": step})
    event = session.append(
        "assistant/message",
        {"turn": turn, "step": step, "text": text, "finish_reason": "stop", "model": "m"},
    )
    session.append("step/end", {"turn": turn, "step": step})
    if end:
        session.append("turn/end", {"turn": turn, "reason": "completed"})
    return event


def start_compaction(
    session: Session,
    cid: str,
    *,
    trigger: str = "auto",
    turn: int | None = None,
    focus: str | None = None,
    source_command_id: str | None = None,
) -> Event:
    return session.append(
        "compact/start",
        {
            "compaction_id": cid,
            "trigger": trigger,
            "turn": turn,
            "focus": focus,
            "source_command_id": source_command_id,
        },
    )


def compaction(
    session: Session,
    cid: str,
    *,
    keep: int = 1,
    trigger: str = "auto",
    turn: int | None = None,
    focus: str | None = None,
    summary: str = "## Primary request and intent\nfix the build",
    framed: str | None = None,
    shadowed_tokens: int = 38_100,
    summary_tokens: int = 2_300,
    model: str = "summarizer-m",
) -> dict[str, Event]:
    """A committed compaction of the surface from its head up to (not including) the last
    ``keep`` nodes, in the contract's bracket shape. Returns the four events by role."""
    nodes = list(session.surface)
    shadowed = nodes[: len(nodes) - keep]
    assert shadowed, "nothing to shadow"
    start = start_compaction(session, cid, trigger=trigger, turn=turn, focus=focus)
    summ = session.append(
        "compact/summary",
        {
            "compaction_id": cid,
            "summary": summary,
            "shadowed_range": {"start": shadowed[0], "end": shadowed[-1]},
            "shadowed_seqs": shadowed,
            "shadowed_tokens": shadowed_tokens,
            "summary_tokens": summary_tokens,
            "model": model,
            "usage": {"prompt_tokens": 900, "completion_tokens": 120},
            "max_tokens": 8192,
        },
    )
    checkpoint = session.append(
        "user/message",
        {
            "content": framed
            if framed is not None
            else f"<compacted-summary>{summary}</compacted-summary>",
            "source": "compact",
            "compaction_id": cid,
        },
        surface_op={"op": "replace", "start": shadowed[0], "end": shadowed[-1]},
        source_event_seqs=[start.seq, summ.seq, *shadowed],
    )
    end = session.append("compact/end", {"compaction_id": cid, "turn": turn})
    return {"start": start, "summary": summ, "checkpoint": checkpoint, "end": end}


def failed_compaction(
    session: Session, cid: str, error: str, *, trigger: str = "manual"
) -> dict[str, Event]:
    """A compaction that ended with an error before touching the surface."""
    start = start_compaction(session, cid, trigger=trigger)
    end = session.append("compact/end", {"compaction_id": cid, "error": error})
    return {"start": start, "end": end}


def prune(
    session: Session,
    result: Event,
    placeholder: str,
    *,
    tokens: int = 3_000,
    trigger: str = "pressure",
    kind: str = "mask",
) -> tuple[Event, Event]:
    """Prune one ``tool/result``: ``compact/prune`` then the replacement ``tool/result``."""
    seq = result.seq
    note = session.append(
        "compact/prune",
        {
            "shadowed_range": {"start": seq, "end": seq},
            "shadowed_seqs": [seq],
            "shadowed_tokens": tokens,
            "kind": kind,
            "trigger": trigger,
        },
    )
    data = result.data.model_dump()
    data["content"] = placeholder
    replacement = session.append(
        "tool/result",
        data,
        surface_op={"op": "replace", "start": seq, "end": seq},
        source_event_seqs=[seq],
    )
    return note, replacement
