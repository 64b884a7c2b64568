"""Hardening of the model client and its error path: a key a server or model echoes back, a
reply shaped in ways the client did not expect, a reply without end, an overflow worded by
llama-cpp-python. Each through the real CLI against the loopback server, each failing
without its fix."""

from __future__ import annotations

import json
from pathlib import Path

from agent.session import Session
from compact.registry import build_registry
from tests.openai_server import OpenAIServer
from tests.reliability.conftest import Run, log_events, only_session
from tests.reliability.test_provider_faults import ask, bash_call

# --- 10. llama-cpp-python's own overflow wording ----------------------------------------------


def test_an_overflow_worded_as_requested_tokens_exceed_the_window_is_recovered(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    """llama-cpp-python, when its error mapping does not apply, answers a prompt that does
    not fit with HTTP 500 and its exception's text: that is an overflow (whose window is
    read from it), not a server error to retry."""
    openai_server.summarize = True
    common = ("--approve", "auto", "--context-window", "200000")
    for n in range(2):
        openai_server.push(
            {"tool_calls": [bash_call(f"seq 1 {300 + n}", f"s{n}")]}, {"text": f"turn {n} done"}
        )
        assert ask(run_cli, openai_server, f"count {n}", *common, "--continue").returncode == 0
    overflow = {
        "status": 500,
        "type": "internal_server_error",
        "message": "Requested tokens (6004) exceed context window of 6000",
    }
    openai_server.push(overflow, {"text": "recovered after compaction"})
    sent = len(openai_server.requests)
    out = ask(run_cli, openai_server, "and now?", *common, "--continue")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "recovered after compaction"
    assert "server error" not in out.stderr
    assert "6,000 tokens" in out.stderr  # the window it stated is the one in use now
    events = log_events(only_session(cli_env))
    assert not [e for e in events if e["type"] == "llm/retry"]
    start = [e for e in events if e["type"] == "compact/start"][-1]
    assert start["data"]["trigger"] == "overflow"
    failed, *summaries, retried = openai_server.requests[sent:]
    assert len(json.dumps(retried["messages"])) < len(json.dumps(failed["messages"]))
    assert summaries and retried["messages"][-1]["content"] == "and now?"
    home = Path(cli_env["REEFLINE_HOME"])
    Session.open(home, only_session(cli_env).stem, registry=build_registry()).close()
