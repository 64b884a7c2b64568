"""The loop guard through the real ``reefline -p``: the same call repeated is told to the
model once, in that call's result, and to the person on stderr; the turn goes on."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.e2e.conftest import Run, log_events, session_files
from tests.openai_server import OpenAIServer

NOTE = "this same bash call (same arguments)"


def same_call(n: int) -> dict:
    # Every other call spells the arguments with other spacing: still the same call.
    arguments = '{ "command" :  "cat notes.txt" }' if n % 2 else {"command": "cat notes.txt"}
    return {"tool_calls": [{"id": f"c{n}", "name": "bash", "arguments": arguments}]}


def run_loop(
    run_cli: Run, server: OpenAIServer, workdir: Path, calls: int, guard: str | None = None
) -> subprocess.CompletedProcess[str]:
    (workdir / "notes.txt").write_text("hello\n")
    server.push(*[same_call(n) for n in range(calls)], {"text": "done"})
    env = {} if guard is None else {"REEFLINE_LOOP_GUARD": guard}
    return run_cli(
        "-p", "read notes", "--base-url", server.base_url, "--model", "m",
        "--approve", "auto", "--sandbox", "off", env=env,
    )  # fmt: skip


def tool_messages(server: OpenAIServer) -> list[str]:
    return [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]


def test_the_fourth_identical_call_is_told_once(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    out = run_loop(run_cli, openai_server, workdir, 7)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "done\n"  # never stops the turn
    results = tool_messages(openai_server)
    assert len(results) == 7
    assert [i for i, text in enumerate(results) if NOTE in text] == [3]
    assert "4 times among your last 10 tool calls" in results[3]
    assert results[3].startswith("hello")  # the output is kept, the note after it
    assert out.stderr.count("with the same arguments 4 times") == 1
    [log] = session_files(cli_env)
    logged = [e["data"]["content"] for e in log_events(log) if e["type"] == "tool/result"]
    assert logged == results  # model-visible means logged


def test_off_never_tells(run_cli: Run, openai_server: OpenAIServer, workdir: Path) -> None:
    out = run_loop(run_cli, openai_server, workdir, 6, guard="off")
    assert out.returncode == 0, out.stderr
    assert len(tool_messages(openai_server)) == 6
    assert not any(NOTE in text for text in tool_messages(openai_server))
    assert "same arguments" not in out.stderr


def test_the_setting_moves_the_mark(
    run_cli: Run, openai_server: OpenAIServer, workdir: Path
) -> None:
    out = run_loop(run_cli, openai_server, workdir, 3, guard="2")
    assert out.returncode == 0, out.stderr
    assert [i for i, t in enumerate(tool_messages(openai_server)) if NOTE in t] == [1]


def test_a_wrong_setting_is_refused(run_cli: Run, openai_server: OpenAIServer) -> None:
    out = run_cli("-p", "x", "--base-url", openai_server.base_url, "--model", "m",
                  env={"REEFLINE_LOOP_GUARD": "often"})  # fmt: skip
    assert out.returncode == 2
    assert "REEFLINE_LOOP_GUARD" in out.stderr and "loop_guard" in out.stderr


def test_one_is_refused_it_would_flag_every_call(run_cli: Run, openai_server: OpenAIServer) -> None:
    out = run_cli("-p", "x", "--base-url", openai_server.base_url, "--model", "m",
                  env={"REEFLINE_LOOP_GUARD": "1"})  # fmt: skip
    assert out.returncode == 2
    assert "give 0 (off) or 2 to 10" in out.stderr
