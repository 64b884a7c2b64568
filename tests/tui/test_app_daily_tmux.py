"""A daily-driver session in tmux, end to end (the issue's "done when"): the real ``reefline``
continues a session held with the loopback server without a flag (while the environment
names a cloud provider), follows its output after a scroll up and back, keeps keys landing
in the prompt after a click on a card and after Shift+Tab into the timeline, and gives a
resumed session its own approval policy.

Fixtures and the tmux driver come from :mod:`tests.tui.test_app_tmux`.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.tui.test_app_tmux import (  # noqa: F401  (fixtures)
    ANSWER,
    REEFLINE,
    Tmux,
    app_env,
    project,
    server_port,
    tiktoken_cache,
    tmux,
)

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

DEAD_CLOUD = "http://127.0.0.1:9/v1"
"""Where the environment says a cloud provider is: nothing listens (the discard port), so a
request sent there fails loudly on screen."""


def _cli(folder: Path, env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [REEFLINE, *args],
        cwd=folder,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def _sessions(env: dict[str, str]) -> list[str]:
    return [p.stem for p in sorted((Path(env["REEFLINE_HOME"]) / "sessions").glob("*.jsonl"))]


def _click(pane: Tmux, screen: str, text: str) -> None:
    """A left click on the lowest ``text`` the pane shows (SGR mouse reports, as a terminal
    sends them; the app turned mouse reporting on)."""
    for row, line in reversed(list(enumerate(screen.splitlines(), start=1))):
        column = line.find(text)
        if column >= 0:
            x, y = column + 2, row
            pane.tmux("send-keys", "-t", pane.target, "-l", f"\x1b[<0;{x};{y}M\x1b[<0;{x};{y}m")
            return
    raise AssertionError(f"{text!r} is not on the screen:\n{screen}")


def test_a_daily_session_in_tmux(
    tmux: Tmux,  # noqa: F811
    server_port: int,  # noqa: F811
    project: Path,  # noqa: F811
    app_env: dict[str, str],  # noqa: F811
) -> None:
    local = ["--base-url", f"http://127.0.0.1:{server_port}/v1", "--model", "m"]
    # A session that chose to run commands unasked (its commands ran: long cards), and then
    # one held without a choice.
    _cli(project, app_env, "--plain", *local, stdin="/approve auto\nsay hi\n/quit\n")
    [auto_id] = _sessions(app_env)
    _cli(project, app_env, "-p", "say hi", *local)
    [ask_id] = [s for s in _sessions(app_env) if s != auto_id]
    cloud = {**app_env, "OPENAI_API_KEY": "sk-not-for-this-session", "OPENAI_BASE_URL": DEAD_CLOUD}

    # --continue without a flag: the local session, on its server (not the environment's),
    # with its own policy (ask: the dialog comes; ctrl+c there leaves the command unrun).
    command = f"cd {shlex.quote(str(project))} && {shlex.quote(REEFLINE)} --continue"
    tmux.start(
        f'{command}; echo "[reefline exited with status $?"', width=120, height=40, env=cloud
    )
    screen = tmux.wait_for("○ ready", ask_id[-6:])
    assert "commands run without asking" not in screen
    tmux.type("list the files")
    tmux.wait_for("Allow once")  # the local server's tool call
    tmux.keys("C-c")
    tmux.wait_for("○ ready", "not run")

    # /resume the session of the other policy: its own (auto), on its own server.
    tmux.type(f"/resume {auto_id}")
    screen = tmux.wait_for("commands run without asking", auto_id[-6:], "show all")

    # A click on a card's "show all", then a slash command typed: it runs.
    _click(tmux, screen, "show all")
    tmux.wait_for("show less")
    tmux.type("/model")
    tmux.wait_for("Model: m.")

    # A prompt: its commands run unasked, the answer comes from the local server.
    tmux.type("read the README again")
    tmux.wait("the second answer", lambda s: "read the README again" in s and "○ ready" in s)

    # Scroll up and back down (and once more at the bottom): later output is followed.
    tmux.type("/help")
    tmux.wait_for("ctrl+q quit")
    tmux.keys("PageUp")
    tmux.wait("the view to scroll up", lambda s: "ctrl+q quit" not in s)
    tmux.keys("PageDown")
    tmux.wait_for("ctrl+q quit")
    tmux.keys("PageDown")  # at the bottom already, as people press it
    tmux.keys("C-p")  # /compact from the palette: output that no prompt sent brought
    tmux.wait_for("Search for commands")
    tmux.tmux("send-keys", "-t", tmux.target, "-l", "/compact")
    tmux.wait_for("Condense older history")
    tmux.keys("Enter")
    tmux.wait_for("Compacted ", "#1 manual")  # the notice is in view, not below it
    # (The palette is a modal whose keys are its own until it is gone.)
    tmux.wait("the palette to close", lambda s: "Search for commands" not in s)

    # Shift+Tab into the timeline, then type: the keys land in the prompt.
    tmux.keys("BTab")
    tmux.type("/approve")
    tmux.wait_for("Bash approval policy: auto")

    # Back to the session left in ask: it asks again.
    tmux.type(f"/resume {ask_id}")
    tmux.wait("the ask policy back", lambda s: "commands run without asking" not in s)
    tmux.type("read the README once more")
    tmux.wait_for("Allow once")
    tmux.keys("C-c")
    tmux.wait_for("○ ready")
    tmux.keys("C-q")
    status, screen = tmux.wait_exit()
    assert status == 0 and "Traceback" not in screen, screen
    home = Path(app_env["REEFLINE_HOME"]) / "sessions"
    for sid in (auto_id, ask_id):
        log = (home / f"{sid}.jsonl").read_text()
        assert "sk-not-for-this-session" not in log and "127.0.0.1:9/" not in log
        assert "cannot connect" not in log.lower() and "connection" not in log.lower()
    answers = [line for line in (home / f"{auto_id}.jsonl").read_text().splitlines()]
    assert sum('"Done: ran 2 commands."' in line for line in answers) == 2
