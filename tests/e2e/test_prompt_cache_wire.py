"""What the real ``reefline -p`` sends for a provider's prompt cache, against the loopback
server: cache breakpoints for a Claude model behind an OpenAI-compatible gateway (billed as
an Anthropic-style cache bills them), and the session's ``prompt_cache_key`` for any
OpenAI-compatible server, with the fallback for a server that refuses it."""

from __future__ import annotations

import json
import subprocess

from tests.e2e.conftest import Run, log_events, session_files
from tests.openai_server import SUMMARY_MARK, OpenAIServer, cache_marks

CLAUDE = "anthropic/claude-sonnet-4"


def session_run(
    run_cli: Run, server: OpenAIServer, model: str, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """One ``-p`` turn of eight bash steps (distinct commands: no loop guard) whose outputs
    cross the automatic mark of a 6,000-token window once: a compaction mid-turn."""
    server.summarize = True
    server.agent_commands = [f"seq {i} {400 + i}" for i in range(8)]
    done = run_cli(
        "-p",
        "count things",
        "--base-url",
        server.base_url,
        "--model",
        model,
        "--context-window",
        "6000",
        "--approve",
        "auto",
        *extra,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "compaction #1 auto · done" in done.stderr, done.stderr
    return done


def chats(server: OpenAIServer) -> list[dict]:
    """The chat requests the server read whole (one reefline was making as it exited, a
    summary written ahead in the pause after the turn, may arrive without its body)."""
    return [body for body in server.requests if body.get("messages")]


def is_summary(body: dict) -> bool:
    last = body["messages"][-1]
    return SUMMARY_MARK in json.dumps(last.get("content"))


def test_marks_bill_most_of_the_prompt_as_cached_and_nothing_is_cached_without_them(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.bill_like_anthropic = True
    session_run(run_cli, openai_server, CLAUDE)
    sent = openai_server.requests
    bills = [b for b in openai_server.bills if sent[b.request].get("messages")]
    assert all(b.marks <= 4 for b in bills) and max(b.marks for b in bills) == 4
    assert all(sum(cache_marks(m) for m in body["messages"]) <= 4 for body in chats(openai_server))
    prompt = sum(b.prompt for b in bills)
    assert sum(b.read for b in bills) > 0.6 * prompt  # most of it read from the cache
    # The summary request continues the last step request: all but its instruction is read.
    summary = next(b for b in bills if is_summary(sent[b.request]))
    assert summary.read > 0.8 * summary.prompt
    assert cache_marks(sent[summary.request]["messages"][-1]) == 0  # the instruction: unmarked
    # reefline read the gateway's figures; the marks never reached the log.
    [log] = session_files(cli_env)
    events = log_events(log)
    usages = [e["data"]["usage"] for e in events if e["type"] == "assistant/message"]
    steps = sorted((b for b in bills if not is_summary(sent[b.request])), key=lambda b: b.request)
    assert [u["cached_tokens"] for u in usages] == [b.read for b in steps]
    assert "cache_control" not in log.read_text()

    # The same session with the breakpoints setting off: nothing marked, nothing cached.
    off = OpenAIServer().start()
    try:
        off.bill_like_anthropic = True
        session_run(run_cli, off, CLAUDE, env={"REEFLINE_CACHE_BREAKPOINTS": "off"})
        assert len(off.bills) >= len(steps)
        assert all(b.read == 0 and b.marks == 0 for b in off.bills)
        assert all(isinstance(m["content"], str) for r in chats(off) for m in r["messages"])
    finally:
        off.stop()


def test_the_cache_key_is_the_session_id_in_every_request_and_after_a_resume(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    session_run(run_cli, openai_server, "qwen2.5")
    [log] = session_files(cli_env)
    sid = log.name.removesuffix(".jsonl")
    openai_server.agent_commands = []
    done = run_cli("-p", "and now?", "--resume", sid)
    assert done.returncode == 0, done.stderr
    sent = chats(openai_server)
    assert any(is_summary(body) for body in sent)
    assert [body.get("prompt_cache_key") for body in sent] == [sid] * len(sent)
    # No marks for a model that is not Claude: every message as it always was.
    assert all(isinstance(m["content"], str) for body in sent for m in body["messages"])


def test_a_server_that_refuses_the_key_is_asked_again_without_it_once_for_the_session(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.reject_cache_key = True
    done = session_run(run_cli, openai_server, "qwen2.5")
    assert done.stderr.count("refused prompt_cache_key") == 1, done.stderr
    first, again, *rest = chats(openai_server)
    assert "prompt_cache_key" in first
    assert again == {k: v for k, v in first.items() if k != "prompt_cache_key"}
    assert rest and not any("prompt_cache_key" in body for body in rest)
    assert any(is_summary(body) for body in rest)
    [log] = session_files(cli_env)
    said = [e for e in log_events(log) if "prompt_cache_key" in json.dumps(e)]
    assert not said  # a notice, not history
