"""The human fold of the log (tui.view): one item per thing a person is shown, from real logs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.log.session import Session
from tests.compact import answer, bash_step, compaction, new_session, prune, user_turn
from tui.view.fold import LogView
from tui.view.items import (
    Answer,
    Checkpoint,
    Prompt,
    PruneBatch,
    SessionOpened,
    ToolRun,
    TurnClosed,
    TurnOpened,
)


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    s = new_session(tmp_path)
    yield s
    s.close()


def story(session: Session) -> None:
    user_turn(session, 1, "find why the build fails")
    _, result = bash_step(session, 1, 1, "make build", "error: missing symbol\n[exit 2 · 0.3s]")
    answer(session, 1, 2, "The header parser was renamed.")
    user_turn(session, 2, "fix it")
    session.append("step/start", {"turn": 2, "step": 1})
    session.append("steering/message", {"content": "only main.c"})
    prune(session, result, "[output masked]", tokens=900)
    compaction(session, "c1", keep=1, summary="## Primary request\nfix the build")
    session.append("step/end", {"turn": 2, "step": 1})
    session.append("turn/end", {"turn": 2, "reason": "cancelled"})


def test_a_log_folds_into_the_items_a_person_is_shown(session: Session) -> None:
    story(session)
    view = LogView()
    view.feed_all(session.events)
    kinds = [type(item).__name__ for item in view.items]
    assert kinds == [
        "SessionOpened",
        "TurnOpened",
        "Prompt",
        "Answer",  # the step that only called a tool
        "ToolRun",
        "Answer",
        "TurnClosed",
        "TurnOpened",
        "Prompt",
        "Prompt",
        "PruneBatch",
        "Checkpoint",
        "TurnClosed",
    ]
    opened, run = view.items[0], view.items[4]
    assert isinstance(opened, SessionOpened) and opened.session_id == session.id
    assert isinstance(run, ToolRun) and run.command == "make build"
    assert run.result is not None and run.result.exit_code == 0 and run.pruned
    assert "missing symbol" in run.result.content  # the original, never the placeholder
    steer = view.items[9]
    assert isinstance(steer, Prompt) and steer.steering and steer.text == "only main.c"
    batch, checkpoint = view.items[10], view.items[11]
    assert isinstance(batch, PruneBatch) and batch.record.status == "done"
    assert batch.record.tokens_before == 900
    assert isinstance(checkpoint, Checkpoint) and checkpoint.compaction_id == "c1"
    assert checkpoint.record is not None and checkpoint.record.status == "done"
    assert checkpoint.record.summary == "## Primary request\nfix the build"
    closed = view.items[-1]
    assert isinstance(closed, TurnClosed) and closed.stopped and closed.reason == "cancelled"
    assert isinstance(view.items[6], TurnClosed) and not view.items[6].stopped
    assert isinstance(view.items[1], TurnOpened) and view.items[1].turn == 1


def test_feeding_event_by_event_gives_what_the_whole_log_gives(session: Session) -> None:
    story(session)
    live = LogView()
    changes = [live.feed(event) for event in session.events]
    whole = LogView()
    whole.feed_all(session.events)
    assert live.items == whole.items
    # Later events change older items in place: the run gets its result, then is pruned;
    # the prune batch settles with its replacement, the checkpoint at compact/end.
    updates = [c for fed in changes for c in fed.changes if not c.new]
    kinds = [type(c.item).__name__ for c in updates]
    assert kinds == ["ToolRun", "ToolRun", "PruneBatch", "Checkpoint"]
    result, pruned, batch, settled = (c.item for c in updates)
    assert isinstance(batch, PruneBatch) and batch.record.status == "done"
    assert isinstance(result, ToolRun) and result.result is not None and not result.pruned
    assert isinstance(pruned, ToolRun) and pruned.pruned
    assert isinstance(settled, Checkpoint) and settled.record is not None
    assert settled.record.status == "done"
    assert sum(fed.timeline for fed in changes) >= 4  # prune, its replacement, the bracket


def test_a_result_without_a_start_keeps_the_command_the_model_sent(session: Session) -> None:
    """A call refused before it ran has no tool/start: its run still shows the command."""
    user_turn(session, 1, "delete it")
    session.append("step/start", {"turn": 1, "step": 1})
    arguments = json.dumps({"command": "rm -rf build"})
    calls = [
        {"id": "a", "name": "bash", "arguments": arguments},
        {"id": "b", "name": "bash", "arguments": json.dumps({"command": "ls"})},
    ]
    session.append(
        "assistant/message",
        {"turn": 1, "step": 1, "tool_calls": calls, "finish_reason": "tool_calls", "model": "m"},
    )
    session.append(
        "tool/result",
        {
            "turn": 1,
            "step": 1,
            "call_id": "a",
            "name": "bash",
            "content": "Command not run: the user's approval policy denies all commands.",
            "is_error": True,
        },
    )
    view = LogView()
    view.feed_all(session.events)
    run = view.run("a")
    assert run is not None and run.command == "rm -rf build" and run.not_run
    assert [call.id for call in view.unstarted_calls()] == ["b"]
    reply = next(item for item in view.items if isinstance(item, Answer))
    assert reply.empty and not reply.cut


def test_a_bash_call_with_arguments_that_are_not_json_shows_them_raw(session: Session) -> None:
    user_turn(session, 1, "x")
    session.append("step/start", {"turn": 1, "step": 1})
    session.append(
        "tool/start",
        {"turn": 1, "step": 1, "call_id": "c", "name": "bash", "arguments": "ls -la {"},
    )
    view = LogView()
    view.feed_all(session.events)
    run = view.run("c")
    assert run is not None and run.running
    assert run.bash_command is None and run.command == "ls -la {"
