"""The ``revise`` surface operation a ``compact/edit`` carries, on a real session on disk:
the node keeps its seq and place and shows the new text; a ``restore`` naming the edit takes
it back; the meter prices what the model reads, live and after a reload alike; an op that
does not fit the surface is refused and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.log.events import Event
from agent.log.registry import EventError
from agent.log.session import Session, SurfaceError
from agent.meter import TokenMeter
from agent.tokens import Estimator
from compact.contract.registry import build_registry


def checkpoint(session: Session) -> tuple[int, Event]:
    """Three messages, the first two replaced by a checkpoint; (its seq, the third)."""
    a = session.append("user/message", {"content": "a " * 50}).seq
    b = session.append("user/message", {"content": "b " * 50}).seq
    c = session.append("user/message", {"content": "c"})
    seq = session.append(
        "user/message",
        {"content": "<compacted-summary>\nold\n</compacted-summary>", "source": "compact"},
        surface_op={"op": "replace", "start": a, "end": b},
        source_event_seqs=[a, b],
    ).seq
    return seq, c


def edit(session: Session, target: int, text: str) -> Event:
    return session.append(
        "compact/edit",
        {
            "compaction_id": "cmp-1",
            "checkpoint_seq": target,
            "summary": text,
            "tokens_before": 1,
            "tokens_after": 1,
        },
        surface_op={"op": "revise", "target": target, "content": text},
    )


def undo(session: Session, edit_seq: int, target: int) -> Event:
    return session.append(
        "compact/undo",
        {
            "compaction_id": "cmp-1",
            "replacement_seq": edit_seq,
            "restored_seqs": [target],
            "restored_tokens": 1,
            "checkpoint_tokens": 1,
        },
        surface_op={"op": "restore", "replacement": edit_seq},
    )


@pytest.fixture
def session(tmp_path: Path) -> Session:
    s = Session.create(tmp_path / "home", cwd=str(tmp_path), registry=build_registry())
    yield s
    s.close()


def contents(session: Session) -> list[str]:
    return [m["content"] for m in session.derive_messages()]


def reopened(session: Session) -> Session:
    return Session.open(session.home, session.id, registry=build_registry(), readonly=True)


def test_revise_shows_new_text_in_place_and_restore_takes_it_back(session: Session) -> None:
    meter = TokenMeter(session, Estimator())
    seq, c = checkpoint(session)
    surface = list(session.surface)
    old = contents(session)
    first = edit(session, seq, "first correction " * 20)
    assert list(session.surface) == surface  # same node, same place
    assert contents(session) == ["first correction " * 20, "c"]
    second = edit(session, seq, "second")
    assert contents(session) == ["second", "c"]
    fresh = reopened(session)
    assert contents(fresh) == ["second", "c"]
    assert meter.measure().surface == TokenMeter(fresh, Estimator()).measure().surface
    # Only the newest revision is taken back, then the one before, then the original.
    with pytest.raises(SurfaceError, match="not the text its node shows now"):
        undo(session, first.seq, seq)
    undo(session, second.seq, seq)
    assert contents(session) == ["first correction " * 20, "c"]
    undo(session, first.seq, seq)
    assert contents(session) == old
    fresh = reopened(session)
    assert contents(fresh) == old
    live = meter.measure().surface
    assert live == TokenMeter(fresh, Estimator()).measure().surface
    assert c.seq in session.surface


def test_a_revise_that_does_not_fit_is_refused_and_nothing_written(session: Session) -> None:
    seq, _ = checkpoint(session)
    count = len(session.events)
    with pytest.raises(SurfaceError, match="not on the surface"):
        edit(session, 0, "x")  # session/start is no surface node
    with pytest.raises(EventError, match="cannot carry a revise op"):
        session.append(
            "user/message",
            {"content": "x"},
            surface_op={"op": "revise", "target": seq, "content": "x"},
        )
    assert len(session.events) == count
    assert len(session.path.read_text().splitlines()) == count
