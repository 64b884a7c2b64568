"""The plain REPL: a real subprocess with piped stdin, and prompt-toolkit with a pipe input."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import time
from pathlib import Path

from prompt_toolkit.application import create_app_session
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from agent.log.store import list_sessions
from tests.tui.conftest import UI
from tui.history import history_path
from tui.line.input import make_session, prompt_reader
from tui.line.repl import PlainRepl

REEFLINE = str(Path(sys.executable).with_name("reefline"))


def plain_env(tmp_path: Path) -> dict[str, str]:
    """This process's environment without provider or reefline settings, homed in tmp_path."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "DEEPSEEK_", "REEFLINE_"))
    }
    (tmp_path / "c.toml").write_text("")  # a config that sets nothing
    env.update(REEFLINE_HOME=str(tmp_path / "home"), REEFLINE_CONFIG=str(tmp_path / "c.toml"))
    return env


def test_piped_stdin_runs_turns_and_commands(tmp_path: Path, workdir: Path) -> None:
    """``printf ... | reefline --plain --demo``: answers, tool lines, a gauge per turn."""
    env = plain_env(tmp_path)
    stdin = (
        "what is in README.md\nand parser.py\n/compact the parser\n/context\n/timeline\n"
        "/compcat\n/quit\nnever read\n"
    )
    proc = subprocess.run(
        [REEFLINE, "--plain", "--demo", "--approve", "auto"],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=workdir,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "offline demo model" in out
    assert "$ ls -la" in out and "$ head -n 20 -- README.md" in out
    assert "  exit 0 · " in out
    assert "I looked at" in out and "# Sample project" in out
    assert out.count("ctx [") == 4  # after each turn, after /compact, and for /context
    assert "tool results" in out and "session totals" in out
    assert "Compacted " in out and "── #1 manual · done" in out
    assert "#1 manual · done" in out.split("session totals")[1]
    assert "Unknown command /compcat — did you mean /compact?" in out
    assert "never read" not in out
    [stored] = list_sessions(tmp_path / "home")
    assert "what is in README.md" in stored.path.read_text()


def test_piped_stdin_denies_bash_unless_allowed(tmp_path: Path, workdir: Path) -> None:
    """Nobody can answer an approval on a pipe, so commands are denied by default."""
    env = plain_env(tmp_path)
    proc = subprocess.run(
        [REEFLINE, "--plain", "--demo"],
        input="hello there\n",
        capture_output=True,
        text=True,
        cwd=workdir,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0
    assert "Command not run" in proc.stdout


def test_slash_completion() -> None:
    """``/co`` completes to /compact and /context with their help."""
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        session = make_session(None)
        completions = list(session.completer.get_completions(Document("/co"), CompleteEvent()))
        assert [c.text for c in completions] == ["/compact", "/context"]
        assert "Condense" in completions[0].display_meta_text
        assert not list(session.completer.get_completions(Document("/compact x"), CompleteEvent()))


async def test_prompt_session_with_a_pipe_input(ui: UI) -> None:
    """Keys typed into the PromptSession run a turn, complete a command and save history."""
    runtime = ui.runtime()
    out = io.StringIO()
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        session = make_session(ui.home)
        repl = PlainRepl(runtime, prompt_reader(session), out, interactive=True)
        task = asyncio.create_task(repl.run())
        for chunk in ["hello there\r", "/tim", "\t", "\r", "/approve\r", "/quit\r"]:
            await asyncio.sleep(0.3 if chunk.endswith("\r") else 0.1)
            if chunk == "/tim":  # typed at the prompt, once the turn is over: not a fixed time
                # (its first command starts the sandbox, longer on a loaded machine)
                deadline = time.monotonic() + 10
                while "I looked at" not in out.getvalue() and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                await asyncio.sleep(0.3)
            pipe.send_text(chunk)
        assert await asyncio.wait_for(task, 10) == 0
    text = out.getvalue()
    assert "$ ls -la" in text and "I looked at" in text
    assert "ctx [" in text
    assert "No compactions yet." in text
    assert "Bash approval policy: auto." in text
    history = history_path(ui.home).read_text()
    assert "+hello there" in history and "+/timeline" in history


def test_plain_says_a_reply_was_cut_a_lowered_window_and_usage_not_reported(
    tmp_path: Path, workdir: Path
) -> None:
    """``--plain`` against a loopback server: the cut reply, the notice, /context totals."""
    from tests.openai_server import OpenAIServer

    env = plain_env(tmp_path)
    message = "request (9000 tokens) exceeds the available context size (6000 tokens)"
    WINDOW = ("--context-window", "20000")
    with OpenAIServer() as server:
        server.push(
            {"text": "Once upon", "usage": False, "finish_reason": "length"},
            {"status": 400, "message": message, "type": "exceed_context_size_error"},
            # Whether the overflow's compaction asks for a summary and retries depends on the
            # history's size (paths included): every reply it may take reports no usage.
            {"text": "## Primary request and intent\n- a story", "usage": False},
            {"text": "fine", "usage": False},
        )
        proc = subprocess.run(
            [REEFLINE, "--plain", "--base-url", server.base_url, "--model", "m", *WINDOW],
            input="a story\nmore\n/context\n/quit\n",
            capture_output=True,
            text=True,
            cwd=workdir,
            env=env,
            timeout=60,
        )
    out = proc.stdout
    assert "Once upon" in out and "! The reply was cut off at the output cap" in out
    assert "! The server says its context window is 6,000 tokens" in out
    assert "window 6,000 from the server's error" in out
    assert "usage    not reported by the server" in out


def test_plain_prints_a_running_commands_output_as_it_comes(tmp_path: Path, workdir: Path) -> None:
    from tests.openai_server import OpenAIServer

    env = plain_env(tmp_path)
    command = "echo first; sleep 0.3; seq 1 50"
    with OpenAIServer() as server:
        server.push(
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo one"}}]},
            {"text": "all done"},
        )
        proc = subprocess.run(
            [REEFLINE, "--plain", "--approve", "auto", "--base-url", server.base_url,
             "--model", "m", "--context-window", "20000"],
            input="count\n/quit\n", capture_output=True, text=True, cwd=workdir, env=env,
            timeout=60,
        )  # fmt: skip
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    lines = out.splitlines()
    live = [line for line in lines if line.startswith("  │ ")]
    assert live[0] == "  │ first" and "  │ 19" in live  # as it came, numbered lines too
    assert "  │ 20" not in live and "  │ … (more output; the result says how much)" in live
    assert lines.index(live[0]) < next(i for i, x in enumerate(lines) if x.startswith("  exit 0"))
    outcomes = [x for x in lines if x.startswith("  exit 0 · ")]
    assert len(outcomes) == 2 and outcomes[0].endswith(" · 51 lines"), outcomes
    assert outcomes[1].endswith(" · 1 line"), outcomes  # in number with its count


def test_plain_rewind_lists_the_prompts_and_goes_back(tmp_path: Path, workdir: Path) -> None:
    env = plain_env(tmp_path)
    proc = subprocess.run(
        [REEFLINE, "--plain", "--demo", "--approve", "auto"],
        input="what is in README.md\nand parser.py\n/rewind\n/rewind 9\n/rewind 2\n/quit\n",
        capture_output=True, text=True, cwd=workdir, env=env, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "    1. turn 1: what is in README.md" in out and "    2. turn 2: and parser.py" in out
    assert "! Usage: /rewind N, with N from 1 to 2" in out
    assert "Back before turn 2" in out and "\nand parser.py\n" in out.split("Back before")[1]
    sessions = sorted((tmp_path / "home" / "sessions").glob("*.jsonl"))
    assert len(sessions) == 2  # the parent, kept, and the fork


def test_live_output_reaches_the_terminal_only_through_the_filter(
    tmp_path: Path, workdir: Path
) -> None:
    """A command that prints terminal escapes (a title change, a colour) while it runs: the
    live lines show them written out, never raw, in --plain and in --json."""
    from tests.openai_server import OpenAIServer

    env = plain_env(tmp_path)
    command = r"printf 'live \033]0;pwned\007 \033[31mred\n'; sleep 0.2"
    with OpenAIServer() as server:
        server.push(
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
            {"text": "done"},
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
            {"text": "done"},
        )
        base = ["--approve", "auto", "--base-url", server.base_url, "--model", "m",
                "--context-window", "20000"]  # fmt: skip
        plain = subprocess.run(
            [REEFLINE, "--plain", *base], input="go\n/quit\n", capture_output=True,
            text=True, cwd=workdir, env=env, timeout=60,
        )  # fmt: skip
        headless = subprocess.run(
            [REEFLINE, "-p", "go", "--json", *base], capture_output=True, text=True,
            cwd=workdir, env=env, timeout=60,
        )  # fmt: skip
    for out in (plain.stdout, headless.stdout):
        assert "\x1b" not in out and "\x07" not in out, out
    live = [line for line in plain.stdout.splitlines() if line.startswith("  │ ")]
    assert live and "live" in live[0] and "red" in live[0]
    assert any('"type": "tool/output"' in line for line in headless.stdout.splitlines())


def test_plain_says_every_record_so_its_numbers_match_the_timeline(
    tmp_path: Path, workdir: Path
) -> None:
    """Compactions mask the older outputs they read (prunes, numbered in the timeline):
    --plain says each one, so the numbers it prints run 1, 2, 3… as /timeline lists them
    (it printed #1 then #3)."""
    import re

    lines = (f"Line {n}: the parser reads a header, then its value." for n in range(80))
    (workdir / "README.md").write_text("# Sample project\n\n" + "\n".join(lines) + "\n")
    stdin = (
        "explore the README.md\nnow parser.py\nlook at everything\nand again README.md\n"
        "more parser.py\n/timeline\n/quit\n"
    )
    proc = subprocess.run(
        [REEFLINE, "--plain", "--demo", "--approve", "auto", "--context-window", "7000"],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=workdir,
        env=plain_env(tmp_path),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    said = [int(n) for n in re.findall(r"^── #(\d+) ", proc.stdout, re.MULTILINE)]
    timeline = [int(n) for n in re.findall(r"^#(\d+) ", proc.stdout, re.MULTILINE)]
    assert len(timeline) >= 2 and "prune" in proc.stdout
    assert said == timeline == list(range(1, len(timeline) + 1)), (said, timeline)
