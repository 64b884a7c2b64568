"""Hardening: attacks by a hostile repository, model or server, each through the real CLI
against the loopback server, each failing without its fix."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer
from tests.reliability.conftest import REEFLINE, only_session

SECRET = "ssh-ed25519-PRIVATE-9f3b2c"


def run(
    env: dict[str, str], cwd: Path, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [REEFLINE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def sent(server: OpenAIServer) -> str:
    return "\n".join(str(m.get("content")) for r in server.requests for m in r["messages"])


# --- a hostile repository's AGENTS.md ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["symlink to a key file", "symlink to environ", "fifo", "zero"])
def test_agents_md_that_is_not_a_regular_file_of_the_project_is_not_read(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, tmp_path: Path, kind: str
) -> None:
    agents = workdir / "AGENTS.md"
    if kind == "symlink to a key file":
        key = tmp_path / "id_ed25519"
        key.write_text(SECRET)
        agents.symlink_to(key)
    elif kind == "symlink to environ":
        agents.symlink_to("/proc/self/environ")
    elif kind == "fifo":
        os.mkfifo(agents)
    else:
        agents.symlink_to("/dev/zero")
    env = {**cli_env, "REEFLINE_PROBE": SECRET}
    started = time.monotonic()
    out = run(env, workdir, "-p", "hi", "--base-url", openai_server.base_url, "--model", "m")
    assert out.returncode == 0, out.stderr
    assert time.monotonic() - started < 30  # a FIFO did not hang the turn
    text = sent(openai_server)
    assert "Working directory" in text and "Project instructions" not in text
    assert SECRET not in text and "REEFLINE_PROBE" not in text
    assert SECRET not in only_session(cli_env).read_text()


def test_a_huge_agents_md_is_read_capped(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    with open(workdir / "AGENTS.md", "w") as f:
        f.write("Run the linter before committing.\n")
        f.write("x" * 50_000_000)
    out = run(cli_env, workdir, "-p", "hi", "--base-url", openai_server.base_url, "--model", "m")
    assert out.returncode == 0, out.stderr
    text = sent(openai_server)
    assert "Run the linter before committing." in text and "AGENTS.md truncated" in text
    assert len(text) < 20_000


# --- a session left with an unanswered call mid-surface (damage from an older version) ----


def test_a_call_left_unanswered_mid_surface_is_repaired_on_load(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    from agent.loop import unanswered_tool_calls
    from agent.session import Session
    from tui.wiring import build_registry

    home = Path(cli_env["REEFLINE_HOME"])
    session = Session.create(home, cwd=str(workdir), registry=build_registry())
    session.append("turn/start", {"turn": 1})
    session.append("user/message", {"content": "look"})
    session.append(
        "assistant/message",
        {"turn": 1, "step": 1, "text": "Looking.", "finish_reason": "tool_calls", "model": "m",
         "tool_calls": [{"id": "gone", "name": "bash", "arguments": '{"command": "ls"}'}]},
    )  # fmt: skip
    session.append("turn/end", {"turn": 1, "reason": "error", "error": "disk full"})
    session.append("turn/start", {"turn": 2})
    session.append("user/message", {"content": "and now?"})
    session.append(
        "turn/end", {"turn": 2, "reason": "error", "error": "tool calls without results"}
    )
    session.close()
    out = run(cli_env, workdir, "-p", "hello", "--continue", "--base-url",
              openai_server.base_url, "--model", "m")  # fmt: skip
    assert out.returncode == 0, out.stderr
    messages = openai_server.requests[-1]["messages"]
    assert unanswered_tool_calls(messages[1:]) == []
    fixed = next(m for m in messages if m["role"] == "assistant")
    assert "tool_calls" not in fixed and "results were never recorded" in fixed["content"]
    assert fixed["content"].startswith("Looking.")
    reopened = Session.open(home, session.id, registry=build_registry(), readonly=True)
    assert [e.type for e in reopened.events[:7]] == [e.type for e in session.events[:7]]


# --- nothing a model or server sends reaches the terminal raw --------------------------------

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
HOSTILE = f"done {OSC52}\x1b]0;title\x07\x1b[2J\u202etxt.exe\x9b31m end"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def assert_inert(text: str) -> None:
    for char in RAW:
        assert char not in text, repr(text)


def test_what_reaches_a_terminal_is_written_out_never_obeyed(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    openai_server.push(
        {"text": HOSTILE},
        {"status": 500, "message": f"overloaded {OSC52}", "type": "server_error"},
        {"text": "second"},
    )
    args = ["--base-url", openai_server.base_url, "--model", "m"]
    first = run(cli_env, workdir, "-p", f"hi {OSC52}", *args)
    assert first.returncode == 0, first.stderr
    assert_inert(first.stdout)
    assert "\\x1b]52;c;ZWNobyBwd25lZA==\\x07" in first.stdout  # shown, not obeyed
    assert "\\u202etxt.exe" in first.stdout
    second = run(cli_env, workdir, "-p", "again", "--continue", "--json", *args)
    assert second.returncode == 0, second.stderr
    assert_inert(second.stderr)
    assert "overloaded" in second.stderr  # the retry line, written out
    assert_inert(second.stdout)
    import json

    lines = [json.loads(line) for line in second.stdout.splitlines()]
    assert any(e["type"] == "assistant/message" for e in lines)  # still valid JSON
    for command in (["export"], ["sessions"], ["timeline"]):
        out = run(cli_env, workdir, *command)
        assert out.returncode == 0, out.stderr
        assert_inert(out.stdout + out.stderr)
    exported = run(cli_env, workdir, "export").stdout
    assert "\\x1b]52;c;" in exported
    listing = run(cli_env, workdir, "sessions").stdout
    assert "hi \\x1b]52;c;" in listing


def test_export_to_a_file_is_private(cli_env: dict[str, str], workdir: Path) -> None:
    assert run(cli_env, workdir, "-p", "hi", "--demo").returncode == 0
    target = workdir / "out.md"
    out = subprocess.run(
        [sys.executable, "-c", "import os, sys; os.umask(0); os.execv(sys.argv[1], sys.argv[1:])",
         REEFLINE, "export", "-o", str(target)],
        cwd=workdir, env=cli_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert oct(target.stat().st_mode & 0o777) == "0o600"
