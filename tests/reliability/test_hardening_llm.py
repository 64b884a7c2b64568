"""Hardening of the model client and its error path: a key a server or model echoes back, a
reply shaped in ways the client did not expect, a reply without end, an overflow worded by
llama-cpp-python. Each through the real CLI against the loopback server, each failing
without its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.llm.call_bounds import MAX_TEXT_CHARS
from agent.log.session import Session
from agent.redaction import PREFIX_CHARS
from compact.contract.registry import build_registry
from tests.openai_server import OpenAIServer
from tests.reliability.conftest import Run, log_events, only_session
from tests.reliability.test_provider_faults import (
    ask,
    assert_log_clean,
    bash_call,
    two_bash_turns,
)

KEY = "sk-ECHOED-4b1d9e27c0a8f3b6d5e1c9a7b2f04d"
"""40 characters, none of them shared with the filler around it."""
HEAD = KEY[:PREFIX_CHARS]


def leaked(*texts: str) -> list[str]:
    """The texts that hold the key's first ``PREFIX_CHARS`` characters (or more of it)."""
    return [t[max(0, t.find(HEAD) - 40) : t.find(HEAD) + 60] for t in texts if HEAD in t]


def with_key(run_cli: Run, server: OpenAIServer, prompt: str, *extra: str):
    return ask(
        run_cli,
        server,
        prompt,
        *extra,
        env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url},
    )


# --- 3. a key echoed back is redacted before any cut, and wherever it is logged ---------------


@pytest.mark.parametrize(
    "where",
    ["HTTP error body", "error event mid-stream", "stream line that is not JSON"],
)
def test_a_key_echoed_where_a_cut_goes_through_it_is_redacted(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], where: str
) -> None:
    """The error text is cut (at 400 or 120 characters) one character before the key's end:
    39 of its 40 characters were left, unredacted, on stderr and in the log."""
    if where == "HTTP error body":
        openai_server.push({"status": 400, "message": "a" * 361 + KEY + " was rejected"})
    elif where == "error event mid-stream":
        message = "b" * 361 + KEY + " was rejected"
        openai_server.push({"text": "partial", "error_after": 2, "message": message})
    else:
        openai_server.push({"text": "partial", "raw_after": 2, "raw": "{" + "c" * 80 + KEY})
    out = with_key(run_cli, openai_server, "hi")
    log = only_session(cli_env).read_text()
    assert "***" in out.stderr + log  # the error was reported, with the key masked
    assert leaked(out.stdout, out.stderr, log) == []
    assert openai_server.headers[0]["authorization"] == f"Bearer {KEY}"  # the key was in use
    assert_log_clean(cli_env)


@pytest.mark.parametrize("json_mode", [False, True], ids=["text", "json"])
def test_a_key_in_the_prompt_the_reply_and_a_command_is_never_shown_or_logged(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], json_mode: bool
) -> None:
    """The model echoes the key in its reasoning, its text (split across deltas, and once
    cut short at the reply's end) and a command, whose output holds it too; the user's own
    prompt holds it. Only the Authorization header may carry it. ``--json`` prints every
    delta, the command's live output among them."""
    openai_server.push(
        {
            "reasoning": f"the user's key is {KEY}.",
            "text": "Checking the key.",
            "tool_calls": [bash_call(f"echo key={KEY}", "echo")],
            "chunk_size": 7,
        },
        {"text": f"Your key is {KEY}, and cut short: {KEY[:30]}", "chunk_size": 7},
    )
    extra = ("--json",) if json_mode else ()
    out = with_key(run_cli, openai_server, f"is {KEY} valid?", "--approve", "auto", *extra)
    assert out.returncode == 0, out.stderr
    events = assert_log_clean(cli_env)
    answer = [e for e in events if e["type"] == "assistant/message"][-1]["data"]["text"]
    assert answer == "Your key is ***, and cut short: ***"
    if json_mode:
        assert "key=***" in out.stdout  # the command's live output
    else:
        assert out.stdout == answer + "\n"
    [result] = [e for e in events if e["type"] == "tool/result"]
    assert "key=***" in json.dumps(result)  # the command ran and printed it; the log masks it
    sent = json.dumps([r["messages"] for r in openai_server.requests])
    log = only_session(cli_env).read_text()
    assert leaked(out.stdout, out.stderr, log, sent) == []
    assert all(h["authorization"] == f"Bearer {KEY}" for h in openai_server.headers)


# --- 6. a reply shaped in ways the client did not expect --------------------------------------


def test_tool_call_arguments_sent_as_an_object_are_accepted(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.push(
        {
            "tool_calls": [bash_call("echo from-an-object", "obj")],
            "arguments_as_object": True,
        },
        {"text": "done"},
    )
    out = ask(run_cli, openai_server, "go", "--approve", "auto")
    assert out.returncode == 0, out.stderr
    assert "internal error" not in out.stderr
    events = assert_log_clean(cli_env)
    [answer] = [e for e in events if e["type"] == "assistant/message"][:1]
    [call] = answer["data"]["tool_calls"]
    assert json.loads(call["arguments"]) == {"command": "echo from-an-object"}
    tool = openai_server.requests[-1]["messages"][-1]
    assert tool["role"] == "tool" and tool["content"].startswith("from-an-object")


def test_a_stream_chunk_nested_too_deep_ends_the_turn_with_a_readable_error(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    deep = "[" * 200_000 + "]" * 200_000
    openai_server.push({"text": "partial", "raw_after": 2, "raw": deep})
    out = ask(run_cli, openai_server, "hi")
    assert out.returncode == 1
    assert "internal error" not in out.stderr
    assert "not an OpenAI-compatible reply" in out.stderr and "nested" in out.stderr
    events = assert_log_clean(cli_env)
    assert events[-1]["data"]["reason"] == "error"
    again = ask(run_cli, openai_server, "again", "--continue")  # the log loads
    assert again.returncode == 0, again.stderr


# --- 8. reply text has a bound --------------------------------------------------------------


def test_a_reply_past_the_text_bound_is_cut_with_a_note(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    """Text and reasoning each well past the bound: each is cut at the bound, the rest
    dropped as it streams; the user and (in the next request) the model read the note, and
    the log line stays near the bound."""
    size = MAX_TEXT_CHARS + 1_000_000
    openai_server.push(
        {"reasoning": "r" * size, "text": "t" * size + "THE-END", "chunk_size": 65536},
    )
    out = ask(run_cli, openai_server, "write a lot", timeout=120)
    assert out.returncode == 0, out.stderr
    assert "THE-END" not in out.stdout and "the rest was dropped" in out.stdout
    assert len(out.stdout) < MAX_TEXT_CHARS + 1000
    assert_log_clean(cli_env)
    log = only_session(cli_env)
    [line] = [x for x in log.read_text().splitlines() if '"assistant/message"' in x]
    assert len(line) < 2 * MAX_TEXT_CHARS + 10_000  # the text and the reasoning, each cut
    data = json.loads(line)["data"]
    for part, char in (("text", "t"), ("reasoning", "r")):
        kept, note = data[part][:MAX_TEXT_CHARS], data[part][MAX_TEXT_CHARS:]
        assert kept == char * MAX_TEXT_CHARS
        assert not note.startswith(char) and "the rest was dropped" in note and len(note) < 300
    again = ask(run_cli, openai_server, "and?", "--continue")
    assert again.returncode == 0, again.stderr
    sent = openai_server.requests[-1]["messages"]
    assert any("the rest was dropped" in str(m.get("content")) for m in sent)


# --- 10. llama-cpp-python's own overflow wording ----------------------------------------------


def test_an_overflow_worded_as_requested_tokens_exceed_the_window_is_recovered(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    """llama-cpp-python, when its error mapping does not apply, answers a prompt that does
    not fit with HTTP 500 and its exception's text: that is an overflow (whose window is
    read from it), not a server error to retry."""
    common = two_bash_turns(run_cli, openai_server)
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
