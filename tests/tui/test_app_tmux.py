"""End to end: the real ``reefline`` in tmux against the loopback OpenAI-compatible server.

The server (``python -m tests.openai_server``) runs as its own process; with ``--agent`` it
answers each prompt with bash tool calls and then a short text reply, with ``--summarize`` it
answers summary requests. The app runs in a private tmux server (its own socket, so nothing
else on the machine can disturb it, and ``remain-on-exit`` keeps a dead pane readable) with an
isolated environment, and is driven by keystrokes. Every wait polls the pane; on a timeout
or an early exit the assertion message holds the whole pane.
"""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
REEFLINE = str(Path(sys.executable).with_name("reefline"))
AGENT_COMMANDS = ("ls -la", "cat README.md")
ANSWER = f"Done: ran {len(AGENT_COMMANDS)} commands."
"""The server's text reply once every ``--agent`` command has run."""
EXITED = "[reefline exited with status"
EXITED_RE = re.compile(r"\[reefline exited with status (\d+)")
PANE_VARIABLES = ("TERM", "HOME", "PATH", "REEFLINE_HOME", "REEFLINE_CONFIG", "TIKTOKEN_CACHE_DIR")
WAIT_S = 30.0
"""Generous: a loaded 2-core machine can take seconds to start Python and Textual."""

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


# --- the loopback model server ------------------------------------------------------------------


@pytest.fixture(scope="module")
def server_port() -> Iterator[int]:
    """Start ``tests.openai_server`` and read the ``PORT n`` line it prints."""
    args = ["--summarize", *(a for c in AGENT_COMMANDS for a in ("--agent", c))]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.openai_server", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], WAIT_S)
        line = proc.stdout.readline() if ready else ""
        if not line.startswith("PORT "):
            proc.kill()
            _, err = proc.communicate(timeout=5)
            pytest.fail(f"the loopback server did not start: {line!r}\n{err}")
        yield int(line.split()[1])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- tmux -------------------------------------------------------------------------------------


class Tmux:
    """One app in one pane of a private tmux server."""

    def __init__(self, socket: str, config: Path) -> None:
        self.socket = socket
        self.config = config
        self.target = "app"

    def tmux(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, "-f", str(self.config), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=WAIT_S,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {done.stderr}")
        return done.stdout

    def start(self, command: str, *, width: int, height: int, env: dict[str, str]) -> None:
        """Start the private server in ``env`` (it becomes the panes' environment); the
        variables that matter are also set on the session, TERM above all, which tmux would
        otherwise set to its own terminal type."""
        flags = [f"-e{k}={env[k]}" for k in PANE_VARIABLES if k in env]
        self.tmux(
            "new-session",
            "-d",
            "-s",
            self.target,
            "-x",
            str(width),
            "-y",
            str(height),
            *flags,
            command,
            env=env,
        )

    def screen(self, *, history: bool = False) -> str:
        """The visible pane; with ``history`` also what scrolled off (after the app left
        the alternate screen, tmux's "Pane is dead" line can push the last words up)."""
        scroll = ["-S", "-"] if history else []
        return self.tmux("capture-pane", "-t", self.target, "-p", *scroll, check=False)

    def exited(self) -> bool:
        return (
            self.tmux("list-panes", "-t", self.target, "-F", "#{pane_dead}", check=False).strip()
            == "1"
        )

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.target, *keys)

    def type(self, text: str) -> None:
        """Literal text, then Enter as a key of its own."""
        self.tmux("send-keys", "-t", self.target, "-l", text)
        self.keys("Enter")

    def wait(
        self,
        what: str,
        predicate: Callable[[str], bool],
        timeout: float = WAIT_S,
        *,
        history: bool = False,
    ) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen(history=history)
            if predicate(screen):
                return screen
            if EXITED in screen or self.exited():
                screen = self.screen(history=True)  # the last words, read after the pane died
                if predicate(screen):
                    return screen
                raise AssertionError(
                    f"the app exited while waiting for {what}; the pane:\n{screen}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the pane:\n{screen}")
            time.sleep(0.1)

    def wait_for(self, *texts: str, timeout: float = WAIT_S) -> str:
        """Poll until every one of ``texts`` is on the same screen."""
        return self.wait(
            " and ".join(map(repr, texts)), lambda s: all(t in s for t in texts), timeout
        )

    def wait_exit(self, timeout: float = WAIT_S) -> tuple[int, str]:
        """Wait for the exit line the shell prints after the app; (status, pane)."""
        screen = self.wait(
            "the app to exit", lambda s: EXITED_RE.search(s) is not None, timeout, history=True
        )
        match = EXITED_RE.search(screen)
        assert match is not None
        return int(match.group(1)), screen

    def kill(self) -> None:
        """Stop the private server and remove its socket file (tmux leaves it behind)."""
        self.tmux("kill-server", check=False)
        folder = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
        (folder / self.socket).unlink(missing_ok=True)


@pytest.fixture(scope="module")
def tiktoken_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiktoken")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small project; README.md is long enough that ``/compact`` has something to do."""
    d = tmp_path / "project"
    d.mkdir()
    lines = [
        f"Note {i}: the parser reads a header and splits it on the first colon." for i in range(40)
    ]
    (d / "README.md").write_text("# Sample project\n\n" + "\n".join(lines) + "\n")
    (d / "parser.py").write_text("def parse_header(line):\n    return line.split(':', 1)\n")
    (d / "notes.txt").write_text("todo: handle folded headers\n")
    return d


@pytest.fixture
def app_env(tmp_path: Path, tiktoken_cache: Path) -> dict[str, str]:
    """The environment of the app: nothing of the user's model or reefline settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "DEEPSEEK_", "REEFLINE_", "TMUX"))
    }
    (tmp_path / "user").mkdir()
    (tmp_path / "config.toml").write_text("")  # a config that sets nothing
    env.update(
        HOME=str(tmp_path / "user"),
        REEFLINE_HOME=str(tmp_path / "home"),
        REEFLINE_CONFIG=str(tmp_path / "config.toml"),
        TIKTOKEN_CACHE_DIR=str(tiktoken_cache),
        TERM="xterm-256color",
    )
    return env


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    config = tmp_path / "tmux.conf"
    config.write_text("set-option -g default-shell /bin/sh\nset-option -g remain-on-exit on\n")
    session = Tmux(f"reefline-test-{uuid.uuid4().hex[:10]}", config)
    try:
        yield session
    finally:
        session.kill()


def app_command(project: Path, port: int) -> str:
    """A shell line that runs the app in ``project`` and then prints its exit status (tmux
    itself does not always learn the status of a pane's process)."""
    flags = f"--base-url http://127.0.0.1:{port}/v1 --model m --approve auto --context-window 8000"
    app = f"cd {shlex.quote(str(project))} && {shlex.quote(REEFLINE)} {flags}"
    return f'{app}; echo "{EXITED} $?"'


def read_log(home: Path) -> list[dict[str, Any]]:
    [log] = (home / "sessions").glob("*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]


# --- tests ------------------------------------------------------------------------------------


def test_prompt_tool_card_compact_and_quit(
    tmux: Tmux, server_port: int, project: Path, app_env: dict[str, str]
) -> None:
    """Start at 120×40, prompt, see the tool card and the answer, /compact, see the timeline
    row, quit with ctrl+q, then read the session file."""
    tmux.start(app_command(project, server_port), width=120, height=40, env=app_env)
    tmux.wait_for("○ ready", "compactions", "No compactions yet")  # 120 columns: panel open

    tmux.type("list the files and read the README")
    tmux.wait_for("$ ls -la")
    screen = tmux.wait_for(ANSWER, "○ ready")  # the answer, and the turn has ended
    assert "README.md" in screen and "exit 0" in screen, screen

    tmux.type("/compact")
    screen = tmux.wait(
        "the compaction in the timeline and its outcome",
        lambda s: "#1 manual" in s and "Compacted " in s and "history items" in s,
    )
    assert "context compacted (manual)" in screen, screen  # the marker in the transcript
    assert "✗" not in screen and "failed" not in screen, screen

    tmux.keys("C-q")
    status, screen = tmux.wait_exit()
    assert status == 0 and "Traceback" not in screen, screen

    events = read_log(Path(app_env["REEFLINE_HOME"]))
    types = [e["type"] for e in events]
    # The turn: the prompt, a card per command with its result, the answer, a clean end.
    [prompt] = [e for e in events if e["type"] == "user/message" and e["data"]["source"] == "user"]
    assert prompt["data"]["content"] == "list the files and read the README"
    starts = [e for e in events if e["type"] == "tool/start"]
    results = {e["data"]["call_id"]: e for e in events if e["type"] == "tool/result"}
    assert [json.loads(e["data"]["arguments"])["command"] for e in starts] == list(AGENT_COMMANDS)
    for start in starts:
        result = results[start["data"]["call_id"]]
        assert result["data"]["exit_code"] == 0 and result["seq"] > start["seq"]
    assert "README.md" in results[starts[0]["data"]["call_id"]]["data"]["content"]
    answers = [e["data"]["text"] for e in events if e["type"] == "assistant/message"]
    assert answers[-1] == ANSWER
    [turn_end] = [e for e in events if e["type"] == "turn/end"]
    assert turn_end["data"]["reason"] == "completed"
    # /compact: command/run, then a compact/start … compact/end bracket, then command/done.
    [run] = [e for e in events if e["type"] == "command/run"]
    [done] = [e for e in events if e["type"] == "command/done"]
    [start] = [e for e in events if e["type"] == "compact/start"]
    [end] = [e for e in events if e["type"] == "compact/end"]
    assert run["data"]["name"] == "compact"
    assert done["data"]["command_id"] == run["data"]["command_id"] and done["data"]["ok"]
    assert done["data"]["text"].startswith("Compacted ")
    assert start["data"]["trigger"] == "manual"
    assert start["data"]["source_command_id"] == run["data"]["command_id"]
    assert end["data"]["compaction_id"] == start["data"]["compaction_id"]
    assert end["data"].get("error") is None
    assert turn_end["seq"] < run["seq"] < start["seq"] < end["seq"] < done["seq"]
    between = types[start["seq"] : end["seq"]]
    assert "compact/summary" in between, types


def test_starts_and_quits_at_80x24(
    tmux: Tmux, server_port: int, project: Path, app_env: dict[str, str]
) -> None:
    """The smallest supported size: the app draws, and ctrl+q exits cleanly."""
    tmux.start(app_command(project, server_port), width=80, height=24, env=app_env)
    screen = tmux.wait_for("○ ready", "Message reefline")
    assert "compactions" not in screen, screen  # the panel starts closed below 120 columns
    tmux.keys("C-q")
    status, screen = tmux.wait_exit()
    assert status == 0 and "Traceback" not in screen, screen
    # Nothing happened in the session: it leaves no empty log behind.
    assert not list((Path(app_env["REEFLINE_HOME"]) / "sessions").glob("*.jsonl"))


def test_leaving_the_app_says_how_to_go_on(
    tmux: Tmux, server_port: int, project: Path, app_env: dict[str, str]
) -> None:
    """On exit the terminal keeps the line to continue the session (peers print it too)."""
    tmux.start(app_command(project, server_port), width=100, height=30, env=app_env)
    tmux.wait_for("○ ready", "Message reefline")
    tmux.type("list the files")
    tmux.wait_for(ANSWER, "○ ready")
    tmux.keys("C-q")
    status, screen = tmux.wait_exit()
    [log] = (Path(app_env["REEFLINE_HOME"]) / "sessions").glob("*.jsonl")
    assert status == 0 and f"reefline --resume {log.stem}" in screen, screen
