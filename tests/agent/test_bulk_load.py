"""A log replays with the garbage collector paused, and the collector comes back as it was."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from agent.log.bulk_load import without_collector
from agent.log.session import Session
from compact.contract.registry import build_registry


def test_the_collector_is_paused_inside_and_restored_after(collector_on: None) -> None:
    seen: list[bool] = []

    @without_collector
    def load(fail: bool) -> int:
        seen.append(gc.isenabled())
        if fail:
            raise ValueError("a bad line")
        return 7

    assert load(False) == 7 and gc.isenabled()
    with pytest.raises(ValueError):
        load(True)
    assert gc.isenabled() and seen == [False, False]
    gc.disable()  # a caller that paused it already keeps it paused
    load(False)
    assert not gc.isenabled()


def test_opening_a_long_log_makes_almost_no_pass(collector_on: None, tmp_path: Path) -> None:
    """Replaying 5,000 events allocates enough for dozens of the collector's passes;
    paused, the open makes at most the few of what follows the replay."""
    session = Session.create(tmp_path, cwd=str(tmp_path), registry=build_registry())
    for n in range(5000):
        session.append("user/message", {"content": f"message {n}"})
    session.close()
    passes: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.collect()
    gc.callbacks.append(note)
    try:
        reopened = Session.open(tmp_path, session.id, registry=build_registry())
    finally:
        gc.callbacks.remove(note)
    assert len(reopened.events) >= 5001
    reopened.close()
    assert gc.isenabled()
    assert len(passes) <= 3, f"{len(passes)} passes during the open"
