"""End to end: the real ``reefline --demo`` in tmux at 120×40, driven by keystrokes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REEFLINE = str(Path(sys.executable).with_name("reefline"))

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, *args: str) -> str:
        done = subprocess.run(["tmux", *args], capture_output=True, text=True, check=True)
        return done.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-t", self.name, "-p")

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.run("send-keys", "-t", self.name, *(["-l"] if literal else []), *keys)

    def type(self, text: str) -> None:
        self.keys(text, literal=True)
        self.keys("Enter")

    def wait_for(self, text: str, timeout: float = 20.0, *, gone: bool = False) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if (text in screen) != gone:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared; the screen was:\n{screen}")
            time.sleep(0.1)


@pytest.fixture
def tmux(tmp_path: Path, workdir: Path) -> Iterator[Tmux]:
    session = Tmux(f"reefline-test-{uuid.uuid4().hex[:8]}")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "DEEPSEEK_", "REEFLINE_"))
    }
    env.update(
        REEFLINE_HOME=str(tmp_path / "home"),
        REEFLINE_CONFIG=str(tmp_path / "config.toml"),
        TERM="xterm-256color",
    )
    flags = [
        f"-e{k}={v}"
        for k, v in env.items()
        if k in ("REEFLINE_HOME", "REEFLINE_CONFIG", "TERM", "PATH", "HOME", "TIKTOKEN_CACHE_DIR")
    ]
    command = f"cd {workdir} && exec {REEFLINE} --demo --approve auto"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session.name, "-x", "120", "-y", "40", *flags, command],
        check=True,
        env=env,
    )
    try:
        yield session
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session.name], capture_output=True)


def test_the_real_app_in_tmux(tmux: Tmux, tmp_path: Path) -> None:
    """Start, prompt, see tool cards and the answer, /compact, see the timeline row, quit."""
    tmux.wait_for("OFFLINE DEMO")
    tmux.wait_for("compactions")  # 120 columns: the timeline panel is open
    tmux.type("what is in README.md")
    screen = tmux.wait_for("I looked at")
    tmux.type("and parser.py")
    tmux.wait_for("and parser.py")
    screen = tmux.wait_for("ready")
    assert "exit 0" in screen
    tmux.type("/compact keep the parser")
    screen = tmux.wait_for("context compacted (manual)")
    assert "#1 manual" in screen and "✓" in screen
    tmux.type("/timeline")
    tmux.wait_for("#1 manual", gone=True)  # the panel toggled closed
    assert "context compacted (manual)" in tmux.screen()
    tmux.keys("C-q")
    deadline = time.monotonic() + 10
    while (
        subprocess.run(["tmux", "has-session", "-t", tmux.name], capture_output=True).returncode
        == 0
    ):
        assert time.monotonic() < deadline, tmux.screen()
        time.sleep(0.1)
    [log] = (tmp_path / "home" / "sessions").glob("*.jsonl")
    types = [json.loads(line)["type"] for line in log.read_text().splitlines()]
    assert types.count("turn/end") == 2
    assert "compact/summary" in types and types.index("compact/end") > types.index("compact/start")
