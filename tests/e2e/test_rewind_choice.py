"""``/rewind N`` after commands changed files asks "conversation only, or conversation and
files" — one effect of the command layer, asked by each front end its way: the plain REPL
reads the answer (the real CLI against the loopback server), headless takes the default."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.e2e.conftest import REEFLINE, Run
from tests.openai_server import OpenAIServer


def plain(server: OpenAIServer, env: dict[str, str], cwd: Path, stdin: str) -> str:
    args = ["--plain", "--base-url", server.base_url, "--model", "m"]
    out = subprocess.run(
        [REEFLINE, *args, "--approve", "auto", "--sandbox", "off"],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_plain_rewind_asks_and_files_puts_them_back(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    notes = workdir / "notes.txt"
    notes.write_text("one\n")
    openai_server.agent_commands = ["echo two >> notes.txt"]
    out = plain(openai_server, cli_env, workdir, "add a line\n/rewind 1\nf\n/quit\n")
    assert notes.read_text() == "one\n"
    said = out.split("Back before turn 1")[1]
    assert "Put back 1 file" in said, out


def test_plain_rewind_conversation_only_leaves_the_files(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    notes = workdir / "notes.txt"
    notes.write_text("one\n")
    openai_server.agent_commands = ["echo two >> notes.txt"]
    out = plain(openai_server, cli_env, workdir, "add a line\n/rewind 1\nc\n/quit\n")
    assert "Back before turn 1" in out
    assert notes.read_text() == "one\ntwo\n"


def test_headless_rewind_takes_the_default_and_says_the_other(
    run_cli: Run, openai_server: OpenAIServer, workdir: Path
) -> None:
    notes = workdir / "notes.txt"
    notes.write_text("one\n")
    openai_server.agent_commands = ["echo two >> notes.txt"]
    server = ["--base-url", openai_server.base_url, "--model", "m"]
    first = run_cli("-p", "add a line", *server, "--approve", "auto", "--sandbox", "off")
    assert first.returncode == 0, first.stderr
    out = run_cli("--continue", *server, "-p", "/rewind 1")
    assert out.returncode == 0, out.stderr
    assert "Go back with… conversation only (or: /rewind 1 files)" in out.stdout
    assert "Back before turn 1" in out.stdout
    assert notes.read_text() == "one\ntwo\n"
