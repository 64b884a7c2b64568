"""Going back: ``reefline fork`` (and /rewind) make a new session from the log just before a
prompt; the parent is only read (the real CLI, a loopback server, real bash)."""

from __future__ import annotations

import json
from pathlib import Path

from agent.log.fork import ForkError, fork_points, fork_session
from agent.log.session import Session
from compact.contract.registry import build_registry
from tests.e2e.conftest import Run, log_events, session_files
from tests.e2e.test_resume_state import ask, call
from tests.openai_server import OpenAIServer


def two_turns(run_cli: Run, server: OpenAIServer) -> None:
    """Turn 1 goes down into sub/ and answers; turn 2 asks something else."""
    server.push({"tool_calls": [call("mkdir -p sub && cd sub", "a")]}, {"text": "in sub"})
    assert ask(run_cli, server, "go down").returncode == 0
    server.push({"tool_calls": [call("cd .. && touch top", "b")]}, {"text": "back up"})
    assert ask(run_cli, server, "now go back up", "--continue").returncode == 0


def test_fork_lists_its_points_and_goes_on_from_before_a_prompt(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    two_turns(run_cli, openai_server)
    [parent_log] = session_files(cli_env)
    parent_id, before = parent_log.stem, parent_log.read_bytes()
    listing = run_cli("fork", parent_id)
    assert listing.returncode == 0, listing.stderr
    rows = listing.stdout.splitlines()
    assert len(rows) == 2 and "go down" in rows[0] and "now go back up" in rows[1]
    at = int(rows[1].split()[0])

    out = run_cli("fork", parent_id, "--at", str(at))
    assert out.returncode == 0, out.stderr
    child_id = out.stdout.strip()
    assert f"reefline --resume {child_id}" in out.stderr
    assert parent_log.read_bytes() == before  # the parent is only read

    child = log_events(parent_log.with_name(f"{child_id}.jsonl"))
    parent = log_events(parent_log)
    assert child[0]["type"] == "session/start" and child[0]["data"]["id"] == child_id
    assert child[1:at] == parent[1:at]  # the history before the prompt, as it was
    child_lines = parent_log.with_name(f"{child_id}.jsonl").read_bytes().splitlines()
    assert child_lines[1:at] == before.splitlines()[1:at]  # a copy of the log's bytes
    assert child[at]["type"] == "session/fork"
    assert child[at]["data"] == {"parent": parent_id, "at_seq": at}

    # Going on: the shell is where that moment left it (sub/), the model sees turn 1 only.
    openai_server.push({"tool_calls": [call("pwd", "c")]}, {"text": "here"})
    again = ask(run_cli, openai_server, "where are you?", "--resume", child_id)
    assert again.returncode == 0, again.stderr
    result = [e for e in log_events(parent_log.with_name(f"{child_id}.jsonl"))
              if e["type"] == "tool/result"][-1]  # fmt: skip
    assert result["data"]["content"].splitlines()[0] == str(workdir / "sub")
    sent = [m.get("content") for m in openai_server.requests[-2]["messages"]]
    assert "go down" in sent and "now go back up" not in sent


def test_fork_refuses_a_seq_that_starts_no_turn(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    two_turns(run_cli, openai_server)
    [log] = session_files(cli_env)
    inside = next(e["seq"] for e in log_events(log) if e["type"] == "tool/result")
    out = run_cli("fork", log.stem, "--at", str(inside))
    assert out.returncode == 2
    assert "does not start a turn with a prompt" in out.stderr and "start at:" in out.stderr
    assert len(session_files(cli_env)) == 1  # nothing was written

    parent = Session.open(log.parent.parent, log.stem, registry=build_registry(), readonly=True)
    points = fork_points(parent)
    new_id, point = fork_session(parent, points[0].prompt_seq)  # the prompt's seq works too
    assert point == points[0]
    child = Session.open(log.parent.parent, new_id, registry=build_registry())
    assert [e.type for e in child.events][-2:] == ["session/fork", "session/resume"]
    assert not any(e.type == "turn/start" for e in child.events)  # before the first turn
    child.close()
    try:
        fork_session(parent, 10_000)
    except ForkError as exc:
        assert json.dumps(str(exc))
    else:
        raise AssertionError("a seq past the log was accepted")
