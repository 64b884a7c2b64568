"""Recall and undo end to end: the real CLI against the loopback server.

Recall: after a compaction the checkpoint names a transcript of what it replaced, and a
model with only bash reads an exact value back from it (in every sandbox mode). Undo:
``/uncompact`` puts the shadowed items back byte for byte, is refused when they cannot fit,
and resume and fork go on from it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from agent.log.session import Session
from compact.contract.registry import build_registry
from tests.e2e.conftest import Run, log_events, session_files
from tests.openai_server import OpenAIServer

SECRET = "VALUE-ONLY-IN-THE-OUTPUT-7731"
WINDOW = "20000"


def flags(server: OpenAIServer, *extra: str) -> list[str]:
    return ["--base-url", server.base_url, "--model", "m", "--context-window", WINDOW, *extra]


def bash_call(command: str, call_id: str) -> dict:
    return {"id": call_id, "name": "bash", "arguments": {"command": command}}


def two_turns_of_history(run_cli: Run, server: OpenAIServer) -> None:
    """Two turns whose commands printed a value no user message holds."""
    server.push(
        {"tool_calls": [bash_call(f"echo the build id is {SECRET}; seq 1 300", "c1")]},
        {"text": "I looked at the build."},
    )
    done = run_cli(
        "-p", "look at the build " + "detail " * 300, *flags(server, "--approve", "auto")
    )
    assert done.returncode == 0, done.stderr
    server.push({"tool_calls": [bash_call("seq 1 300", "c2")]}, {"text": "Counted again."})
    done = run_cli(
        "-p", "count again " + "more " * 300, "--continue", *flags(server, "--approve", "auto")
    )
    assert done.returncode == 0, done.stderr


def checkpoint_text(env: dict[str, str]) -> str:
    [log] = session_files(env)
    return [
        e["data"]["content"]
        for e in log_events(log)
        if e["type"] == "user/message" and e["data"].get("source") == "compact"
    ][-1]


def named_transcript(checkpoint: str) -> str:
    match = re.search(r"The full transcript this summary replaces: (\S+) — grep it", checkpoint)
    assert match, checkpoint
    return match.group(1)


@pytest.mark.parametrize("sandbox", ["off", "read-only", "workspace-write"])
def test_the_model_greps_the_named_transcript_for_a_value_only_the_original_held(
    sandbox: str,
    run_cli: Run,
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    request: pytest.FixtureRequest,
) -> None:
    if sandbox != "off":
        request.getfixturevalue("bwrap")
    openai_server.summarize = True
    two_turns_of_history(run_cli, openai_server)
    compacted = run_cli("compact", *flags(openai_server)[:4])
    assert compacted.returncode == 0, compacted.stderr
    checkpoint = checkpoint_text(cli_env)
    assert SECRET not in checkpoint  # the summary dropped it: only the original holds it
    path = named_transcript(checkpoint)
    # The model reads the path from its request and greps it with bash.
    openai_server.push(
        {"tool_calls": [bash_call(f"grep -o 'VALUE-[A-Z0-9-]*' {path}", "g1")]},
        {"text": "Found it."},
    )
    done = run_cli(
        "-p",
        "what was the build id?",
        "--continue",
        *flags(openai_server, "--approve", "auto", "--sandbox", sandbox),
    )
    assert done.returncode == 0, done.stderr
    first = openai_server.requests[-2]
    assert any(path in str(m.get("content")) for m in first["messages"])  # named to the model
    [result] = [m for m in openai_server.requests[-1]["messages"] if m.get("tool_call_id") == "g1"]
    assert SECRET in result["content"], result["content"]
    [log] = session_files(cli_env)
    ran = [e["data"] for e in log_events(log) if e["type"] == "tool/result"][-1]
    assert ran["sandbox"] == sandbox


def test_a_merged_checkpoint_reaches_every_earlier_transcript_and_a_missing_one_is_rebuilt(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.summarize = True
    two_turns_of_history(run_cli, openai_server)
    assert run_cli("compact", *flags(openai_server)[:4]).returncode == 0
    first = named_transcript(checkpoint_text(cli_env))
    openai_server.push({"tool_calls": [bash_call("seq 1 400", "c3")]}, {"text": "More."})
    more = run_cli(
        "-p", "and more " + "words " * 300, "--continue", *flags(openai_server, "--approve", "auto")
    )
    assert more.returncode == 0, more.stderr
    assert run_cli("compact", *flags(openai_server)[:4]).returncode == 0
    merged = checkpoint_text(cli_env)
    second = named_transcript(merged)
    assert second != first
    # One line names a transcript however many merges: the earlier one is named inside it.
    assert first not in merged and "recall-*.md" in merged
    assert "earlier checkpoint" in Path(second).read_text()
    assert first in Path(second).read_text()
    assert SECRET in Path(first).read_text()
    # Gone from disk (another machine, a cleared folder): the next open writes it again.
    text = Path(first).read_text()
    Path(first).unlink()
    shutil.rmtree(Path(second).parent)
    done = run_cli("-p", "hello", "--continue", *flags(openai_server))
    assert done.returncode == 0, done.stderr
    assert Path(first).read_text() == text
    assert Path(second).is_file()
    assert oct(Path(first).stat().st_mode & 0o777) == "0o600"


def surface_messages(env: dict[str, str], session_id: str | None = None) -> list[dict]:
    home = Path(env["REEFLINE_HOME"])
    sid = session_id or session_files(env)[-1].stem
    session = Session.open(home, sid, registry=build_registry(), readonly=True)
    return session.derive_messages()


def test_undo_restores_the_exact_messages_and_resume_and_fork_go_on_from_it(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.summarize = True
    two_turns_of_history(run_cli, openai_server)
    before = surface_messages(cli_env)
    assert run_cli("compact", *flags(openai_server)[:4]).returncode == 0
    dry = run_cli("compact", "--dry-run", *flags(openai_server)[:4])
    assert dry.returncode == 0 and "nothing sent to the model" in dry.stdout, dry.stdout
    # The request after the compaction carries the checkpoint and a new workspace context.
    openai_server.push({"text": "ok"})
    assert run_cli("-p", "next", "--continue", *flags(openai_server)).returncode == 0
    undone = run_cli("uncompact", *flags(openai_server)[:4])
    assert undone.returncode == 0, undone.stderr
    assert "Undid compaction #1" in undone.stdout, undone.stdout
    after = surface_messages(cli_env)
    # Byte for byte what the model saw before, then what came after it (the workspace
    # context put back after the checkpoint, the last turn).
    assert after[: len(before)] == before
    assert not any("<compacted-summary>" in str(m.get("content")) for m in after)
    assert after[len(before)]["content"].startswith("Working directory:")
    # Resume: the next request holds the restored history (no immediate re-compaction).
    openai_server.push({"text": "resumed"})
    assert run_cli("-p", "again", "--continue", *flags(openai_server)).returncode == 0
    sent = openai_server.requests[-1]["messages"][1:]
    assert sent[: len(before)] == before
    [log] = session_files(cli_env)
    events = log_events(log)
    assert [e["type"] for e in events].count("compact/summary") == 1  # not redone
    timeline = json.loads(run_cli("timeline", "--json").stdout)
    assert [r["kind"] for r in timeline] == ["compaction", "undo"]
    assert timeline[0]["undone_by"] == 2
    # A second undo has nothing left to undo, and says so.
    again = run_cli("uncompact", *flags(openai_server)[:4])
    assert again.returncode != 0 and "Nothing to undo" in again.stdout, again.stdout
    # Fork before the last prompt: the fork carries the undo and derives the same history.
    turn_start = [e["seq"] for e in events if e["type"] == "turn/start"][-1]
    forked = run_cli("fork", log.stem, "--at", str(turn_start))
    assert forked.returncode == 0, forked.stderr
    fork_id = forked.stdout.strip()
    assert surface_messages(cli_env, fork_id)[: len(before)] == before
    # ... and a turn in the fork sends it.
    openai_server.push({"text": "forked"})
    went_on = run_cli("-p", "in the fork", "--resume", fork_id, *flags(openai_server))
    assert went_on.returncode == 0, went_on.stderr
    assert openai_server.requests[-1]["messages"][1 : 1 + len(before)] == before


def test_undo_is_refused_when_the_history_would_not_fit_the_window(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.summarize = True
    two_turns_of_history(run_cli, openai_server)
    assert run_cli("compact", *flags(openai_server)[:4]).returncode == 0
    [log] = session_files(cli_env)
    count = len(log_events(log))
    small = ["--base-url", openai_server.base_url, "--model", "m", "--context-window", "1500"]
    refused = run_cli("uncompact", *small)
    assert refused.returncode != 0
    assert "more than the 1.5k-token window: it stays compacted" in refused.stdout, refused.stdout
    events = log_events(log)[count:]
    assert "compact/undo" not in [e["type"] for e in events]
    assert any(e["type"] == "command/done" and not e["data"]["ok"] for e in events)


def test_a_crash_while_the_undo_is_written_leaves_the_surface_as_it_was(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.summarize = True
    two_turns_of_history(run_cli, openai_server)
    assert run_cli("compact", *flags(openai_server)[:4]).returncode == 0
    compacted = surface_messages(cli_env)
    assert run_cli("uncompact", *flags(openai_server)[:4]).returncode == 0
    [log] = session_files(cli_env)
    lines = log.read_bytes().splitlines(keepends=True)
    [undo_at] = [i for i, line in enumerate(lines) if b'"compact/undo"' in line]
    log.write_bytes(b"".join(lines[:undo_at]) + lines[undo_at][:40])  # torn mid-write
    openai_server.push({"text": "after the crash"})
    assert run_cli("-p", "hi", "--continue", *flags(openai_server)).returncode == 0
    sent = openai_server.requests[-1]["messages"][1:]
    assert sent[: len(compacted)] == compacted  # still compacted: the undo never happened


def test_the_gauge_says_compacting_soon_before_the_automatic_compaction(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    import subprocess

    from tests.e2e.conftest import REEFLINE

    openai_server.summarize = True
    stdin = "".join(f"part {n}: " + "word " * 700 + "\n" for n in range(13))
    done = subprocess.run(
        [REEFLINE, "--plain", *flags(openai_server)[:4], "--context-window", "12000"],
        input=stdin,
        cwd=workdir,
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = done.stdout
    assert done.returncode == 0, done.stderr + out
    soon = out.find("compacting soon")
    compacted = out.find("#1 auto")
    assert soon != -1, out
    assert compacted == -1 or soon < compacted, out
    [log] = session_files(cli_env)
    assert "compact/summary" in [e["type"] for e in log_events(log)], out


def test_a_session_opened_in_another_home_is_told_where_its_transcripts_are(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], tmp_path: Path
) -> None:
    """The log moved to another home (another machine): the checkpoint names a path that
    is not there; the transcript is rebuilt in this session's folder and the next request
    says where, once."""
    openai_server.summarize = True
    two_turns_of_history(run_cli, openai_server)
    assert run_cli("compact", *flags(openai_server)[:4]).returncode == 0
    old_home = Path(cli_env["REEFLINE_HOME"])
    named = named_transcript(checkpoint_text(cli_env))
    new_home = tmp_path / "elsewhere"
    shutil.copytree(old_home, new_home)
    shutil.rmtree(old_home)
    moved = {"REEFLINE_HOME": str(new_home)}
    for prompt in ("where is it?", "and again?"):
        openai_server.push({"text": "Noted."})
        done = run_cli("-p", prompt, "--continue", *flags(openai_server), env=moved)
        assert done.returncode == 0, done.stderr
    here = next(new_home.rglob(Path(named).name))
    assert SECRET in here.read_text() and not Path(named).exists()
    sent = "\n".join(str(m.get("content")) for m in openai_server.requests[-1]["messages"])
    assert sent.count(f"{named} is at {here}") == 1


def test_headless_says_compacting_soon_before_it_compacts_and_why_it_did(
    run_cli: Run, openai_server: OpenAIServer
) -> None:
    """``-p`` on stderr: the warning comes before the automatic compaction, whose start line
    says what set it off and what it kept verbatim."""
    openai_server.summarize = True
    openai_server.agent_commands = ["seq 1 400"] * 14
    done = run_cli(
        "-p",
        "count things",
        *flags(openai_server, "--approve", "auto")[:4],
        "--context-window",
        "16000",
        "--approve",
        "auto",
    )
    err = done.stderr
    assert done.returncode == 0, err
    soon = err.find("reefline: compacting soon (context ~")
    started = err.find("reefline: compacting the conversation (auto: the context reached ")
    assert -1 < soon < started, err
    assert "past the auto mark at" in err[started:] and "kept verbatim: " in err[started:]
