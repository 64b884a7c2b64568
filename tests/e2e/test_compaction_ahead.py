"""Compaction written ahead, end to end: the real CLI against the loopback server.

The scripted agent reads a file at every step; the context crosses the compaction mark
after about nine steps, and the summary starts about two steps before it
(:mod:`compact.basic.ahead`)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from agent.log.session import Session
from agent.turns import unanswered_tool_calls
from agent.usage_totals import usage_totals
from compact.contract.registry import build_registry
from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.openai_server import SUMMARY_MARK, OpenAIServer

WINDOW = "6000"
COMMANDS = 10
"""Tool steps of the long turn: the mark comes at about the ninth."""


def flags(server: OpenAIServer) -> list[str]:
    model = ["--base-url", server.base_url, "--model", "m"]
    return [*model, "--approve", "auto", "--context-window", WINDOW]


def setup(workdir: Path, server: OpenAIServer, commands: int = COMMANDS) -> None:
    (workdir / "data.txt").write_text("\n".join(f"record {i}: value {i * 7}" for i in range(60)))
    server.summarize = True
    server.agent_commands = ["cat data.txt"] * commands


def plain(
    env: dict[str, str], workdir: Path, server: OpenAIServer, lines: str
) -> subprocess.CompletedProcess[str]:
    """The ``--plain`` REPL reading ``lines`` (a prompt or a command each) from stdin."""
    return subprocess.run(
        [REEFLINE, "--plain", *flags(server)],
        input=lines,
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def cat_replies(count: int) -> list[dict[str, Any]]:
    """``count`` scripted replies, each calling bash to read data.txt."""
    call = {"name": "bash", "arguments": {"command": "cat data.txt"}}
    return [{"tool_calls": [{**call, "id": f"c{n}"}]} for n in range(count)]


def is_summary(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or [{}]
    return SUMMARY_MARK in str(messages[-1].get("content"))


def brackets(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Each compaction's events (start to end), in log order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        cid = event["data"].get("compaction_id")
        if cid and (event["type"].startswith("compact/") or event["type"] == "user/message"):
            out.setdefault(cid, []).append(event)
    return list(out.values())


def wait_for(condition: Any, what: str, proc: subprocess.Popen[bytes]) -> None:
    """Poll ``condition`` (the log, the server) until it holds; fail if the CLI exits first."""
    deadline = time.monotonic() + 60
    while not condition():
        assert proc.poll() is None, f"the CLI exited before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_ready_summary_is_committed_whole_at_the_checkpoint(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    setup(workdir, openai_server)
    done = run_cli("-p", "read data.txt again and again", *flags(openai_server))
    assert done.returncode == 0, done.stderr
    [log] = session_files(cli_env)
    events = log_events(log)
    landed = [
        b
        for b in brackets(events)
        if b[-1]["type"] == "compact/end" and not b[-1]["data"].get("error")
    ]
    assert landed, [e["type"] for e in events]
    bracket = landed[0]
    assert bracket[0]["data"].get("ahead") is True
    # The whole bracket at the checkpoint, in one run of seqs, outside any step.
    seqs = [e["seq"] for e in bracket]
    assert seqs == list(range(seqs[0], seqs[-1] + 1))
    kinds = [e["type"] for e in bracket]
    assert kinds[0] == "compact/start" and kinds[-3:] == [
        "compact/summary",
        "user/message",
        "compact/end",
    ]
    assert set(kinds[1:-3]) == {"compact/progress"}
    assert all(e["data"]["status"] == "ok" for e in bracket[1:-3])
    assert events[seqs[0] - 1]["type"] == "step/end"
    after = next(e for e in events[seqs[-1] :] if e["type"].startswith("step/"))
    assert after["type"] == "step/start"
    # It was written ahead: the server had the summary request before the bracket opened
    # (a foreground summary is asked for inside its bracket).
    first_summary = next(i for i, b in enumerate(openai_server.requests) if is_summary(b))
    assert openai_server.arrived[first_summary] < bracket[0]["time"]


def test_every_output_the_commit_folds_away_is_in_the_summary_written_ahead(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """Each step reads a different file. An output folded out of view at an ahead commit
    (``carried_by`` that compaction) must be one its summary read: else it is gone from the
    view and, being marked carried, from every later summary too."""
    for part in range(COMMANDS):
        lines = (f"part {part} fact {i}: {i * 13 + part}" for i in range(60))
        (workdir / f"part{part}.txt").write_text("\n".join(lines))
    openai_server.summarize = True
    openai_server.agent_commands = [f"cat part{part}.txt" for part in range(COMMANDS)]
    done = run_cli("-p", "read the parts", *flags(openai_server))
    assert done.returncode == 0, done.stderr
    [log] = session_files(cli_env)
    events = log_events(log)
    by_seq = {e["seq"]: e for e in events}
    landed = {
        b[0]["data"]["compaction_id"]: b
        for b in brackets(events)
        if b[0]["data"].get("ahead") and b[-1]["data"].get("discarded") is False
    }
    assert landed, [e["type"] for e in events]
    summaries = [json.dumps(b["messages"]) for b in openai_server.requests if is_summary(b)]
    folded = 0
    for prune in (e for e in events if e["type"] == "compact/prune"):
        if prune["data"].get("carried_by") not in landed:
            continue
        for seq in prune["data"]["shadowed_seqs"]:
            first_line = str(by_seq[seq]["data"]["content"]).splitlines()[0]
            assert any(first_line in body for body in summaries), (seq, first_line)
            folded += 1
    assert folded, "an ahead commit folded no output: nothing was checked"


def test_the_checkpoint_waits_only_for_the_rest_of_a_summary_in_flight(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    setup(workdir, openai_server)
    openai_server.summary_stall_s = 120  # until the test has seen the checkpoint wait
    proc = subprocess.Popen(
        [REEFLINE, "-p", "read data.txt again and again", *flags(openai_server)],
        cwd=workdir,
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(openai_server.stalled.is_set, "the summary written ahead", proc)
        wait_for(lambda: bool(session_files(cli_env)), "the session log", proc)
        [log] = session_files(cli_env)

        def opened() -> bool:
            return any(e["type"] == "compact/start" for e in log_events(log))

        wait_for(opened, "the checkpoint", proc)
        events = log_events(log)
        start = next(e for e in events if e["type"] == "compact/start")
        assert start["data"].get("ahead") is True
        # The bracket is open and waits: the summary has not come yet, no step has opened.
        assert [e["type"] for e in events[start["seq"] :]] == ["compact/start"]
        summaries = [i for i, b in enumerate(openai_server.requests) if is_summary(b)]
        # Asked for before the bracket opened: it is the summary written ahead, waited for.
        assert len(summaries) == 1
        assert openai_server.arrived[summaries[0]] < start["time"]
        openai_server.unstalled.set()
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
    bracket = brackets(log_events(log))[0]
    kinds = [e["type"] for e in bracket]
    # The call made ahead is the bracket's one call: it was waited for, not made again.
    assert kinds == [
        "compact/start",
        "compact/progress",
        "compact/summary",
        "user/message",
        "compact/end",
    ], kinds
    assert bracket[1]["data"]["status"] == "ok" and bracket[-1]["data"].get("error") is None


def _discarded(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in brackets(events) if b[-1]["data"].get("discarded")]


def test_a_manual_compaction_discards_the_summary_written_ahead_and_its_cost_is_counted(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """Eight tool steps: the summary starts ahead before the final answer, and the turn ends
    below the mark; /compact then replaces the history it summarized. The final answer goes
    silent after its first chunk (which sends the summary) until the summary is answered,
    so the summary is done, and paid for, before /compact discards it."""
    setup(workdir, openai_server, commands=0)
    replies = cat_replies(8)
    openai_server.push(*replies, {"text": "Done.", "stall_after": 1, "stall_s": 60})

    def go_on_once_summarized() -> None:
        if openai_server.summarized.wait(60):
            openai_server.unstalled.set()

    threading.Thread(target=go_on_once_summarized, daemon=True).start()
    done = plain(cli_env, workdir, openai_server, "read data.txt again and again\n/compact\n")
    assert done.returncode == 0, done.stderr
    [log] = session_files(cli_env)
    events = log_events(log)
    [discarded] = _discarded(events)
    assert discarded[0]["data"].get("ahead") is True
    assert "manual compaction" in discarded[-1]["data"]["error"]
    # Logged after the manual compaction, outside any turn; its call is in the usage.
    manual = next(
        e for e in events if e["type"] == "compact/start" and e["data"]["trigger"] == "manual"
    )
    assert discarded[0]["seq"] > manual["seq"]
    assert [e["data"]["status"] for e in discarded[1:-1]] == ["ok"]
    session = Session.open(
        Path(cli_env["REEFLINE_HOME"]), log.stem, registry=build_registry(), readonly=True
    )
    totals = usage_totals(session.events)
    assert totals.summary_calls == 2  # the one written ahead and the manual one
    summaries = [b for b in openai_server.requests if is_summary(b)]
    assert totals.input == sum(
        len(json.dumps(b["messages"])) // 4 + 1 for b in openai_server.requests
    ), "every call the server billed is in the usage"
    assert len(summaries) == 2
    records = json.loads(run_cli("timeline", "--json").stdout)
    assert [r["status"] for r in records if r["kind"] == "compaction"] == ["done", "discarded"]


def test_a_rewind_discards_the_summary_written_ahead_in_the_session_left(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    setup(workdir, openai_server, commands=8)
    done = plain(cli_env, workdir, openai_server, "read data.txt again and again\n/rewind 1\n")
    assert done.returncode == 0, done.stderr
    logs = session_files(cli_env)
    assert len(logs) == 2, done.stdout
    parent = next(p for p in logs if "session/fork" not in p.read_text())
    events = log_events(parent)
    [discarded] = _discarded(events)
    assert "session ended" in discarded[-1]["data"]["error"]
    assert events[discarded[0]["seq"] - 1]["type"] == "turn/end"  # between turns
    assert not any(e["type"] == "compact/summary" for e in events)  # nothing committed


def test_sigkill_while_a_summary_runs_ahead_leaves_nothing_and_resumes_clean(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    (workdir / "data.txt").write_text("\n".join(f"record {i}: value {i * 7}" for i in range(60)))
    openai_server.summarize = True
    openai_server.summary_stall_s = 120
    replies = cat_replies(8)
    # The last reply begins (the summary ahead goes once a step's reply has begun) and then
    # goes silent until the server stops.
    openai_server.push(*replies, {"text": "Done.", "stall_after": 1, "stall_s": 120})
    proc = subprocess.Popen(
        [REEFLINE, "-p", "read data.txt again and again", *flags(openai_server)],
        cwd=workdir,
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(
            lambda: any(is_summary(b) for b in list(openai_server.requests)),
            "the summary written ahead",
            proc,
        )
        proc.kill()
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    [log] = session_files(cli_env)
    assert not any(e["type"].startswith("compact/") for e in log_events(log))
    openai_server.summary_stall_s = 0
    openai_server.unstalled.set()
    again = run_cli("-p", "go on", "--continue", *flags(openai_server))
    assert again.returncode == 0, again.stderr
    session = Session.open(
        Path(cli_env["REEFLINE_HOME"]), log.stem, registry=build_registry(), readonly=True
    )
    # The killed turn was closed by the resume's repair.
    assert any(e.type == "turn/end" and e.data.reason == "interrupted" for e in session.events)
    assert unanswered_tool_calls(session.derive_messages()) == []
    starts = [e for e in session.events if e.type == "compact/start"]
    ends = {e.data.compaction_id for e in session.events if e.type == "compact/end"}
    assert all(s.data.compaction_id in ends for s in starts)  # no orphan either


def test_a_failing_summary_written_ahead_hands_over_to_the_foreground_and_its_fallback(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    setup(workdir, openai_server)
    openai_server.summary_status = 400
    done = run_cli("-p", "read data.txt again and again", *flags(openai_server))
    assert done.returncode == 0, done.stderr
    events = log_events(session_files(cli_env)[0])
    ahead = [b for b in brackets(events) if b[0]["data"].get("ahead")]
    assert ahead, [e["type"] for e in events]
    # The call made ahead failed; whether it was discarded before the checkpoint or the
    # checkpoint was already waiting for it, a compaction landed with the model-free
    # checkpoint after the foreground summary failed too.
    first = ahead[0]
    assert first[1]["type"] == "compact/progress" and first[1]["data"]["status"] == "failed"
    summaries = [e for e in events if e["type"] == "compact/summary"]
    assert summaries and summaries[0]["data"]["model"] == "fallback"
    foreground_calls = [
        e
        for b in brackets(events)
        if any(x["type"] == "compact/summary" for x in b)
        for e in b
        if e["type"] == "compact/progress"
    ]
    assert any(e["data"]["status"] == "failed" for e in foreground_calls)
    assert len([b for b in openai_server.requests if is_summary(b)]) >= 2


def test_ahead_false_summarizes_only_at_the_mark_and_a_bad_value_is_said(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    setup(workdir, openai_server)
    off = {"REEFLINE_COMPACTION": json.dumps({"ahead": False})}
    done = run_cli("-p", "read data.txt again and again", *flags(openai_server), env=off)
    assert done.returncode == 0, done.stderr
    events = log_events(session_files(cli_env)[0])
    starts = [e for e in events if e["type"] == "compact/start"]
    assert starts and not any(e["data"].get("ahead") for e in starts)
    bad = {"REEFLINE_COMPACTION": json.dumps({"ahead": "sometimes"})}
    refused = run_cli("-p", "hi", *flags(openai_server), env=bad)
    assert refused.returncode == 2
    assert "compaction.ahead" in refused.stderr and "boolean" in refused.stderr, refused.stderr


def test_a_summary_waiting_for_a_step_that_failed_goes_when_that_step_ends(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """The summary ahead goes once the step's reply begins; a step whose request fails has
    no reply. Its end lets the summary go: it runs while the person reads the error."""
    (workdir / "data.txt").write_text("\n".join(f"record {i}: value {i * 7}" for i in range(60)))
    openai_server.summarize = True
    replies = cat_replies(8)
    openai_server.push(*replies, {"status": 400, "message": "the model is overloaded"})
    proc = subprocess.Popen(
        [REEFLINE, "--plain", *flags(openai_server)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=workdir,
        env=cli_env,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"read data.txt again and again\n")
        proc.stdin.flush()
        wait_for(lambda: bool(session_files(cli_env)), "the session log", proc)
        [log] = session_files(cli_env)

        def failed() -> bool:
            return any(e["type"] == "turn/end" for e in log_events(log))

        wait_for(failed, "the turn to end on the failed request", proc)
        # The turn is over and no next one begins: only the failed step's end sends it.
        wait_for(
            lambda: any(is_summary(b) for b in list(openai_server.requests)),
            "the summary written ahead",
            proc,
        )
        assert [e["data"]["reason"] for e in log_events(log) if e["type"] == "turn/end"] == [
            "error"
        ]
        _, stderr = proc.communicate(timeout=60)  # end of input: the session ends
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
