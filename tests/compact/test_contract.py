"""The contract: compact/* events and the cached tool-pairing helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.log.registry import EventError, EventRegistry
from agent.log.session import Session
from agent.log.surface import SurfaceError
from compact.contract.events import COMPACT_EVENTS, register_events
from compact.contract.service import ERROR_SENTENCES, CompactionError
from compact.parts.pairing import (
    open_calls_at_cuts,
    tool_pairing_balanced_after,
    tool_pairing_balanced_before,
)


@pytest.fixture
def session(tmp_path: Path) -> Session:
    s = Session.create(tmp_path, cwd=str(tmp_path), registry=register_events(EventRegistry()))
    yield s
    s.close()


def call(session: Session, *ids: str, step: int = 1) -> int:
    return session.append(
        "assistant/message",
        {
            "turn": 1,
            "step": step,
            "finish_reason": "tool_calls",
            "model": "m",
            "tool_calls": [{"id": i, "name": "bash", "arguments": "{}"} for i in ids],
        },
    ).seq


def result(session: Session, call_id: str) -> int:
    return session.append(
        "tool/result", {"turn": 1, "step": 1, "call_id": call_id, "name": "bash", "content": "x"}
    ).seq


def user(session: Session, text: str = "hi") -> int:
    return session.append("user/message", {"content": text}).seq


def test_compact_events_are_log_only(session: Session) -> None:
    for model in COMPACT_EVENTS:
        assert not model.on_surface
    with pytest.raises(EventError, match="not a surface type"):
        session.append(
            "compact/start", {"compaction_id": "a", "trigger": "auto"}, surface_op={"op": "append"}
        )
    registry = EventRegistry()
    assert "compact/start" not in registry  # core does not know them
    register_events(registry)
    register_events(registry)  # idempotent
    assert {"compact/start", "compact/summary", "compact/end", "compact/prune"} <= set(
        registry.names
    )


def test_compact_end_undo_and_edit_are_durable() -> None:
    durable = {m.model_fields["type"].default for m in COMPACT_EVENTS if m.durable}
    assert durable == {"compact/end", "compact/undo", "compact/edit"}


def test_every_error_code_has_a_sentence() -> None:
    for code in ("busy", "cancelled", "changed", "summary", "commit", "persistence"):
        err = CompactionError(code)  # type: ignore[arg-type]
        assert err.sentence == ERROR_SENTENCES[code] and err.detail
        assert err.explained == err.sentence  # no detail beyond the sentence: said once
    err = CompactionError("summary", "the summarizer failed: Could not reach the server.")
    assert err.explained == (
        f"{ERROR_SENTENCES['summary']} Why: the summarizer failed: Could not reach the server."
    )


def test_closed_and_open_steps(session: Session) -> None:
    u = user(session)
    a = call(session, "c1")
    r = result(session, "c1")
    b = call(session, "c2", step=2)
    assert tool_pairing_balanced_before(session, u) and tool_pairing_balanced_after(session, u)
    assert tool_pairing_balanced_before(session, a) and not tool_pairing_balanced_after(session, a)
    assert not tool_pairing_balanced_before(session, r) and tool_pairing_balanced_after(session, r)
    assert tool_pairing_balanced_before(session, b) and not tool_pairing_balanced_after(session, b)


def test_multi_call_step_and_a_neutral_node_inside_an_open_pair(session: Session) -> None:
    a = call(session, "c1", "c2", "c3")
    r1 = result(session, "c1")
    steer = session.append("steering/message", {"content": "also this"}).seq
    r2 = result(session, "c2")
    r3 = result(session, "c3")
    assert not tool_pairing_balanced_after(session, a)
    assert not tool_pairing_balanced_after(session, r1)
    # It counts; it does not match ids: a neutral node between a call and its result sits on
    # unbalanced cuts on both sides.
    assert not tool_pairing_balanced_before(session, steer)
    assert not tool_pairing_balanced_after(session, steer)
    assert not tool_pairing_balanced_after(session, r2)
    assert tool_pairing_balanced_after(session, r3)


def test_cache_folds_appends_and_rebuilds_after_replace(session: Session) -> None:
    u = user(session)
    a = call(session, "c1")
    r = result(session, "c1")
    assert open_calls_at_cuts(session) == [0, 0, 1, 0]
    u2 = user(session, "more")  # appended: folded into the same cache
    assert open_calls_at_cuts(session) == [0, 0, 1, 0, 0]
    cp = session.append(
        "user/message",
        {"content": "summary", "source": "compact"},
        surface_op={"op": "replace", "start": u, "end": r},
        source_event_seqs=[u, a, r],
    ).seq
    # Rebuilt for the new generation: the checkpoint at position 0, the old seqs gone.
    assert open_calls_at_cuts(session) == [0, 0, 0]
    assert tool_pairing_balanced_before(session, cp) and tool_pairing_balanced_after(session, u2)
    with pytest.raises(SurfaceError, match="not on the surface"):
        tool_pairing_balanced_before(session, a)


def test_corrupt_surface_raises(session: Session) -> None:
    u = user(session)
    result(session, "orphan")  # a result that answers no call
    with pytest.raises(SurfaceError, match="corrupt surface"):
        tool_pairing_balanced_before(session, u)
