"""Provider faults on the loopback server, through the real CLI.

Each fault must end in a clear state the user can read on stderr (a retry notice, or one
readable error and exit 1, never a traceback) and a log that reopens with nothing to
repair: the CLI closed the turn itself.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent.log.session import Session
from agent.turns import unanswered_tool_calls
from compact.contract.registry import build_registry
from tests.openai_server import OpenAIServer
from tests.reliability.conftest import Run, log_events, only_session


def bash_call(command: str, call_id: str) -> dict:
    return {"id": call_id, "name": "bash", "arguments": {"command": command}}


def two_bash_turns(run_cli: Run, server: OpenAIServer) -> tuple[str, ...]:
    """Two turns of one bash call each, with a window so big that by the client's estimate
    everything fits (nothing compacts early); the summarizer on. Returns the flags used."""
    server.summarize = True
    common = ("--approve", "auto", "--context-window", "200000")
    for n in range(2):
        server.push(
            {"tool_calls": [bash_call(f"seq 1 {300 + n}", f"s{n}")]}, {"text": f"turn {n} done"}
        )
        assert ask(run_cli, server, f"count {n}", *common, "--continue").returncode == 0
    return common


def ask(run_cli: Run, server: OpenAIServer, prompt: str, *extra: str, **kw: object):
    out: subprocess.CompletedProcess[str] = run_cli(
        "-p", prompt, "--base-url", server.base_url, "--model", "m", *extra, **kw
    )
    assert "Traceback" not in out.stderr, out.stderr
    return out


def assert_log_clean(env: dict[str, str]) -> list[dict]:
    """The log is complete: it reopens with no torn tail and no repair, every tool call on
    the surface has its result, and the last turn ended on its own. Returns the events."""
    log = only_session(env)
    events = log_events(log)
    assert events[-1]["type"] == "turn/end"
    session = Session.open(Path(env["REEFLINE_HOME"]), log.stem, registry=build_registry())
    try:
        assert session.report.torn_bytes == 0
        assert session.report.repaired == []
        assert unanswered_tool_calls(session.derive_messages()) == []
    finally:
        session.close()
    return events


def retries(events: list[dict]) -> list[dict]:
    return [e["data"] for e in events if e["type"] == "llm/retry"]


def test_stall_mid_stream_times_out_and_is_retried_visibly(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.push(
        {"text": "I am about to go quiet", "chunk_size": 4, "stall_after": 3, "stall_s": 60},
        {"text": "back again"},
    )
    out = ask(run_cli, openai_server, "hi", env={"REEFLINE_REQUEST_TIMEOUT": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout == "back again\n"  # nothing of the voided attempt leaks into the answer
    assert "stopped responding" in out.stderr and "retry 1 in" in out.stderr
    events = assert_log_clean(cli_env)
    [retry] = retries(events)
    assert "no data from local for 1 s" in retry["error"]
    [answer] = [e for e in events if e["type"] == "assistant/message"]
    assert answer["data"]["text"] == "back again"


def test_disconnect_mid_stream_is_retried(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.push({"text": "half of a reply that never ends", "cut_after": 3}, {"text": "ok"})
    out = ask(run_cli, openai_server, "hi")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "ok\n"
    assert "reply was cut off" in out.stderr and "retry 1 in" in out.stderr
    assert len(retries(assert_log_clean(cli_env))) == 1
    assert openai_server.disconnects == 0 or openai_server.disconnects == 1


def test_429_storm_honours_retry_after(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    storm = {
        "status": 429,
        "message": "Rate limit reached",
        "type": "rate_limit",
        "retry_after": "0.3",
    }
    openai_server.push(storm, storm, storm, {"text": "finally"})
    out = ask(run_cli, openai_server, "hi")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "finally\n"
    assert out.stderr.count("rate limiting") == 3 and "retry 3 in 0.3s" in out.stderr
    done = retries(assert_log_clean(cli_env))
    assert [r["attempt"] for r in done] == [1, 2, 3]
    assert all(r["delay_s"] == pytest.approx(0.3) for r in done)  # the server's word, no jitter


def test_500s_until_retries_run_out(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    boom = {"status": 500, "message": "upstream exploded", "type": "server_error"}
    openai_server.push(*[boom] * 6, {"text": "never reached"})
    # One retry (REEFLINE_MAX_RETRIES) keeps the test short; the default is 3.
    out = ask(run_cli, openai_server, "hi", env={"REEFLINE_MAX_RETRIES": "1"})
    assert out.returncode == 1
    assert out.stdout == ""
    tries = len(openai_server.requests)
    assert tries == 2
    lines = out.stderr.strip().splitlines()
    assert "HTTP 500" in out.stderr and "upstream exploded" in out.stderr
    assert "try again in a moment" in out.stderr  # what the user can do
    assert "--continue" in lines[-1]  # and how to go on
    events = assert_log_clean(cli_env)
    assert len(retries(events)) == tries - 1
    end = events[-1]["data"]
    assert end["reason"] == "error" and "HTTP 500" in end["error"]
    assert not [e for e in events if e["type"] == "assistant/message"]


def test_malformed_sse_chunk_ends_the_turn_readably(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.push({"text": "some text then garbage", "malformed_after": 2})
    out = ask(run_cli, openai_server, "hi")
    assert out.returncode == 1
    assert "not an OpenAI-compatible reply" in out.stderr and "not valid JSON" in out.stderr
    events = assert_log_clean(cli_env)
    assert events[-1]["data"]["reason"] == "error"


def test_error_event_mid_stream_is_retried(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.push(
        {"text": "partial", "error_after": 2, "message": "overloaded", "type": "server_error"},
        {"text": "second try"},
    )
    out = ask(run_cli, openai_server, "hi")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "second try\n" and "overloaded" in out.stderr
    assert len(retries(assert_log_clean(cli_env))) == 1


def test_tool_call_to_an_unknown_tool_and_arguments_that_are_not_json(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    openai_server.push(
        {
            "tool_calls": [
                {"id": "c1", "name": "python", "arguments": {"code": "print(1)"}},
                {"id": "c2", "name": "bash", "arguments": '{"command": "touch x'},
                {"id": "c3", "name": "bash", "arguments": "[1, 2]"},
                {"id": "c4", "name": "bash", "arguments": {"command": "touch ran"}},
            ]
        },
        {"text": "handled"},
    )
    out = ask(run_cli, openai_server, "do things", "--approve", "auto")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "handled\n"
    events = assert_log_clean(cli_env)
    results = {e["data"]["call_id"]: e["data"] for e in events if e["type"] == "tool/result"}
    assert results["c1"]["is_error"] and "no tool named 'python'" in results["c1"]["content"]
    assert "Available tools: bash" in results["c1"]["content"]
    assert results["c2"]["is_error"] and "not valid JSON" in results["c2"]["content"]
    assert results["c3"]["is_error"] and "JSON object" in results["c3"]["content"]
    assert not results["c4"]["is_error"] and (workdir / "ran").exists()
    assert not (workdir / "x").exists()
    # The model got every error back, paired with its call, in order.
    tool_msgs = [m for m in openai_server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "c2", "c3", "c4"]


def test_a_2mb_answer(run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]) -> None:
    openai_server.push({"text": "BEGIN", "words": 230_000, "chunk_size": 65536})
    out = ask(run_cli, openai_server, "write a lot", timeout=120)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout) > 2_000_000
    assert out.stdout.startswith("BEGIN word0 word1") and out.stdout.endswith("word229999\n")
    events = assert_log_clean(cli_env)
    [answer] = [e for e in events if e["type"] == "assistant/message"]
    assert answer["data"]["text"] == out.stdout.rstrip("\n")


def test_context_overflow_the_client_did_not_foresee_is_recovered_by_compaction(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    common = two_bash_turns(run_cli, openai_server)
    overflow = {
        "status": 400,
        "code": "context_length_exceeded",
        "message": "This model's maximum context length is 2048 tokens. However, your messages "
        "resulted in 3120 tokens. Please reduce the length of the messages.",
    }
    openai_server.push(overflow, {"text": "recovered after compaction"})
    sent = len(openai_server.requests)
    out = ask(run_cli, openai_server, "and now?", *common, "--continue", "--json")
    assert out.returncode == 0, out.stderr
    events = assert_log_clean(cli_env)
    printed = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = [e["type"] for e in printed]
    assert "compact/summary" in kinds and kinds[-1] == "turn/end"
    start = next(e for e in printed if e["type"] == "compact/start")
    assert start["data"]["trigger"] == "overflow"
    end = next(e for e in printed if e["type"] == "compact/end")
    assert end["data"].get("error") is None
    answer = [e for e in printed if e["type"] == "assistant/message"][-1]
    assert answer["data"]["text"] == "recovered after compaction"
    # overflowed request, the summary requests (in chunks: the error stated a 2,048-token
    # window, which is now the one in use), the retried (smaller) request
    failed, *summaries, retried = openai_server.requests[sent:]
    assert summaries
    assert all("## Primary request and intent" in s["messages"][-1]["content"] for s in summaries)
    assert "2,048 tokens" in out.stderr
    assert len(json.dumps(retried["messages"])) < len(json.dumps(failed["messages"]))
    assert retried["messages"][-1]["content"] == "and now?"
    assert events[-1]["data"]["reason"] == "completed"
    timeline = run_cli("timeline", "--json")
    records = json.loads(timeline.stdout)
    assert [(r["trigger"], r["status"]) for r in records if r["kind"] == "compaction"] == [
        ("overflow", "done")
    ]


def test_auth_error_is_not_retried_and_says_what_to_do(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.push({"status": 401, "message": "Incorrect API key provided"})
    paired = {"OPENAI_API_KEY": "sk-wrong-key-123456", "OPENAI_BASE_URL": openai_server.base_url}
    out = ask(run_cli, openai_server, "hi", env=paired)
    assert out.returncode == 1
    assert len(openai_server.requests) == 1
    assert "rejected the API key" in out.stderr
    assert "Set the key in the OPENAI_API_KEY environment variable" in out.stderr
    assert "sk-wrong-key-123456" not in out.stderr
    assert_log_clean(cli_env)
