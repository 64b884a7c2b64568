"""Recall and undo end to end: the real CLI against the loopback server.

Recall: after a compaction the checkpoint names a transcript of what it replaced, and a
model with only bash reads an exact value back from it (in every sandbox mode). Undo:
``/uncompact`` puts the shadowed items back byte for byte, is refused when they cannot fit,
and resume and fork go on from it.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

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


def test_a_merged_checkpoint_keeps_every_earlier_transcript_and_a_missing_one_is_rebuilt(
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
    assert f"The full transcript of an earlier checkpoint merged into it: {first}" in merged
    assert SECRET in Path(first).read_text()
    assert "earlier checkpoint" in Path(second).read_text()
    # Gone from disk (another machine, a cleared folder): the next open writes it again.
    text = Path(first).read_text()
    Path(first).unlink()
    shutil.rmtree(Path(second).parent)
    done = run_cli("-p", "hello", "--continue", *flags(openai_server))
    assert done.returncode == 0, done.stderr
    assert Path(first).read_text() == text
    assert Path(second).is_file()
    assert oct(Path(first).stat().st_mode & 0o777) == "0o600"
