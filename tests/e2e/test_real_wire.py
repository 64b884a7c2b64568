"""The real CLI against real servers' recorded bytes (``tests/fixtures/wire/``, recorded by
``make conformance``): the same scenarios, replayed with no model and no build.

Expectations are read from the recordings themselves (the call llama.cpp streamed, its
usage chunk, the context it reported, the limit its error stated).
"""

from __future__ import annotations

import json

from tests.agent.test_wire_replay import recorded_calls, recorded_usage
from tests.conformance.scenarios import AND_THESE, REMEMBER, REPEAT_CALL, STORY
from tests.e2e.conftest import Run, log_events, session_files
from tests.wire import ReplayServer, fixture


def replay(run_cli: Run, server: ReplayServer, prompt: str, *args: str, **env: str):  # type: ignore[no-untyped-def]
    return run_cli(
        "-p", prompt, "--base-url", server.base_url, "--model", "smollm2", *args, env=env
    )


def test_llama_server_tool_call_round_trip(run_cli: Run, cli_env: dict[str, str]) -> None:
    rec = fixture("llama-server", "tool-call")
    listing = json.loads(next(e for e in rec.exchanges if e.path == "/v1/models").body)
    with ReplayServer(rec.exchanges) as server:
        out = replay(run_cli, server, REPEAT_CALL, "--approve", "auto", REEFLINE_MAX_STEPS="2")
        asked = server.requests
    events = log_events(session_files(cli_env)[-1])
    starts = [e["data"] for e in events if e["type"] == "tool/start"]
    first_call = next(c for c in (recorded_calls(e) for e in rec.chats()) if c)[0]
    assert starts and starts[0]["arguments"] == first_call["arguments"], out.stderr
    assert any(e["type"] == "tool/result" and e["data"]["exit_code"] == 0 for e in events)
    usage = [e["data"]["usage"] for e in events if e["type"] == "assistant/message"]
    want = recorded_usage(rec.chats()[0])
    assert want is not None and usage[0]["prompt_tokens"] == want["prompt_tokens"]
    header = next(e["data"] for e in events if e["type"] == "request/header")
    assert header["context_window"] == listing["data"][0]["meta"]["n_ctx"]
    assert asked[0][:2] == ("GET", "/v1/models")  # asked before the first request


def test_llama_server_cut_reply_exits_1_and_says_so(run_cli: Run) -> None:
    rec = fixture("llama-server", "cut-off")
    with ReplayServer(rec.exchanges) as server:
        out = replay(run_cli, server, STORY, REEFLINE_MAX_OUTPUT_TOKENS="12")
    assert out.returncode == 1
    assert "cut off at the output cap of 12 tokens" in out.stderr
    assert out.stdout.strip()


def test_llama_server_overflow_lowers_the_window_and_recovers(
    run_cli: Run, cli_env: dict[str, str]
) -> None:
    first, second = fixture("llama-server", "overflow-first"), fixture("llama-server", "overflow")
    refused = next(e for e in second.chats() if e.status == 400)
    limit = json.loads(refused.body)["error"]["n_ctx"]
    args = ("--context-window", "8192")
    with ReplayServer(first.exchanges) as server:
        replay(run_cli, server, REMEMBER, *args, REEFLINE_MAX_OUTPUT_TOKENS="24")
    with ReplayServer(second.exchanges) as server:
        out = replay(
            run_cli, server, AND_THESE, "--continue", *args, REEFLINE_MAX_OUTPUT_TOKENS="24"
        )
    assert f"{limit:,} tokens" in out.stderr, out.stderr
    events = log_events(session_files(cli_env)[-1])
    ends = [e["data"] for e in events if e["type"] == "compact/end"]
    assert ends and ends[-1].get("error") is None
    headers = [e["data"] for e in events if e["type"] == "request/header"]
    assert headers[-1]["context_window"] == limit
    assert events[-1]["type"] == "turn/end"


def test_llama_cpp_python_overflow_reported_as_an_empty_200(
    run_cli: Run, cli_env: dict[str, str]
) -> None:
    first, second = (
        fixture("llama-cpp-python", "empty-200-first"),
        fixture("llama-cpp-python", "empty-200"),
    )
    env = {"REEFLINE_MAX_OUTPUT_TOKENS": "24", "REEFLINE_MAX_STEPS": "1"}
    args = ("--context-window", "8192", "--approve", "auto")
    with ReplayServer(first.exchanges) as server:
        replay(run_cli, server, REMEMBER, *args, **env)
    with ReplayServer(second.exchanges) as server:
        out = replay(run_cli, server, AND_THESE, "--continue", *args, **env)
    assert "stopped before the model had finished" not in out.stderr
    assert "2,048 tokens" in out.stderr, out.stderr
    events = log_events(session_files(cli_env)[-1])
    assert any(e["type"] == "compact/start" for e in events)


def test_a_hostile_servers_words_reach_the_terminal_only_as_visible_escapes(
    run_cli: Run, cli_env: dict[str, str]
) -> None:
    """The notice about whole replies and the error after it quote the server: an OSC 52
    clipboard write and a title change in them must be shown, not obeyed."""
    from tests.wire import Exchange

    osc = "\x1b]52;c;ZXZpbA==\x07"
    refusal = json.dumps({"error": {"message": f"Automatic streaming tool choice {osc}"}})
    said = json.dumps({"error": {"message": f"\x1b]0;pwned\x07 bad option {osc}"}})
    chat = "/v1/chat/completions"
    exchanges = [
        Exchange("POST", chat, None, 500, "application/json", [refusal]),
        Exchange("POST", chat, None, 200, "application/json", [said]),
    ]
    with ReplayServer(exchanges) as server:
        out = replay(run_cli, server, "hi", "--context-window", "8000")
    assert out.returncode == 1
    assert not any(c in out.stderr for c in ("\x1b", "\x07"))
    assert "\\x1b]52;c;ZXZpbA==\\x07" in out.stderr and "bad option" in out.stderr
