"""Hardening of the front ends (``--plain``, the app, headless), each through the real CLI on
a real terminal (tmux) or through Pilot, each failing without its fix."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer
from tests.reliability import test_hardening
from tests.reliability.conftest import REEFLINE, only_session
from tests.reliability.test_hardening import _alive, _wait_screen, reefline_pid, sleepers, wait_for

nap = test_hardening.nap
"""The fixture: a ``sleep`` only this test runs."""


def tmux_session(name: str, env: dict[str, str], cwd: Path, *args: str) -> None:
    """Start the real CLI with ``args`` in a tmux pane; ``EXITED <code>`` shows when it ends.
    The terminal's settings are written before and after (see :func:`terminal_settings`)."""
    if shutil.which("tmux") is None or shutil.which("pgrep") is None:
        pytest.skip("tmux and pgrep are needed")
    env_args = [a for k, v in {**env, "TERM": "xterm-256color"}.items() for a in ("-e", f"{k}={v}")]
    command = (
        f"echo TTY-BEFORE $(stty -g); {shlex.join([REEFLINE, *args])}; echo EXITED $?; "
        "echo TTY-AFTER $(stty -g); sleep 60"
    )
    subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "100", "-y", "30", "-c",
                    str(cwd), *env_args, command], check=True)  # fmt: skip


def terminal_settings(name: str) -> tuple[str, str]:
    """The pane's ``stty -g`` before the CLI started and after it ended."""
    _wait_screen(name, "TTY-AFTER")
    pane = subprocess.run(
        ["tmux", "capture-pane", "-t", name, "-p", "-J", "-S", "-100"],
        capture_output=True, text=True,
    ).stdout  # fmt: skip
    said = dict(line.split(" ", 1) for line in pane.splitlines() if line.startswith("TTY-"))
    return said["TTY-BEFORE"], said["TTY-AFTER"]


def send_line(name: str, text: str) -> None:
    subprocess.run(["tmux", "send-keys", "-t", name, "-l", text], check=True)
    subprocess.run(["tmux", "send-keys", "-t", name, "Enter"], check=True)


def last_events(env: dict[str, str], n: int = 3) -> list[dict]:
    lines = only_session(env).read_text().splitlines()
    return [json.loads(line) for line in lines if line][-n:]


# --- every signal that ends the app restores the terminal ------------------------------------


@pytest.mark.parametrize(
    "sig", [signal.SIGHUP, signal.SIGQUIT, signal.SIGINT], ids=lambda s: s.name
)
def test_every_signal_that_ends_the_app_restores_the_terminal(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, nap: str, sig: int
) -> None:
    """SIGHUP sent to the app while a command runs (the terminal still there), SIGQUIT, and a
    SIGINT from outside (ctrl+c is a key on the app's raw terminal): the turn is closed and
    the bash group killed as for SIGTERM, and the pane is left out of the alternate screen
    with the cursor shown and mouse reporting off; the exit code names the signal."""
    openai_server.push({"tool_calls": [{"name": "bash", "arguments": {"command": nap}}]})
    name = f"sig-{os.getpid()}-{int(sig)}"
    tmux_session(name, cli_env, workdir, "--approve", "auto", "--base-url",
                 openai_server.base_url, "--model", "m")  # fmt: skip
    try:
        _wait_screen(name, "Message reefline")
        send_line(name, "nap")
        wait_for(lambda: sleepers(nap) != [], what="the command to start")
        pid = reefline_pid(name)
        os.kill(pid, sig)
        wait_for(lambda: not _alive(pid), what="reefline to exit")
        wait_for(lambda: sleepers(nap) == [], what="the bash group to be killed")
        screen = _wait_screen(name, "EXITED")
        assert f"EXITED {128 + sig}" in screen
        flags = subprocess.run(
            ["tmux", "display", "-p", "-t", name,
             "#{alternate_on} #{cursor_flag} #{mouse_any_flag} #{mouse_standard_flag} "
             "#{mouse_button_flag} #{mouse_sgr_flag}"],
            capture_output=True, text=True,
        ).stdout.split()  # fmt: skip
        # Normal screen, cursor shown, no mouse tracking of any kind.
        assert flags == ["0", "1", "0", "0", "0", "0"]
        before, after = terminal_settings(name)
        assert after == before  # line mode, echo: as the app found them
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        for p in sleepers(nap):
            os.kill(p, 9)
    last = last_events(cli_env)
    assert any(e["type"] == "turn/end" and e["data"]["reason"] == "cancelled" for e in last), [
        (e["type"], e["data"]) for e in last
    ]


# --- --plain: a line typed before the approval question never answers it --------------------


def screen_lines(name: str) -> list[str]:
    pane = subprocess.run(
        ["tmux", "capture-pane", "-t", name, "-p"], capture_output=True, text=True
    )
    return [line.strip() for line in pane.stdout.splitlines()]


@pytest.mark.parametrize("typed", [["yes"], ["always"], ["yes", "always"]], ids="+".join)
def test_plain_a_line_typed_before_the_question_does_not_answer_it(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, typed: list[str]
) -> None:
    """``--plain --approve ask`` on a real terminal: while the model is still thinking (its
    request held open by the server), the person types "yes" and/or "always". The question
    then shown is not answered by them: the command waits for a line typed after it, the
    typed lines go to the agent as steering, and the next command is asked about again
    ("always" typed ahead did not stop the asking)."""
    import threading

    thinking = threading.Event()
    openai_server.push(
        {
            "tool_calls": [{"name": "bash", "arguments": {"command": "touch RAN1"}}],
            "hold": thinking,
        },
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch RAN2"}}]},
        {"text": "ok"},
    )
    name = f"ahead-{os.getpid()}-{len(typed)}-{typed[0]}"
    tmux_session(name, cli_env, workdir, "--plain", "--approve", "ask", "--base-url",
                 openai_server.base_url, "--model", "m")  # fmt: skip
    question = "[always] this session"
    try:
        _wait_screen(name, "/quit leaves")
        send_line(name, "go")
        wait_for(lambda: len(openai_server.requests) == 1, what="the model to be asked")
        for line in typed:
            send_line(name, line)
        # The terminal echoes what it has taken in: the lines wait in its input queue.
        wait_for(lambda: all(line in screen_lines(name) for line in typed), what="the echo")
        thinking.set()
        _wait_screen(name, "kept as a message for the agent")  # said before the question
        screen = _wait_screen(name, question)
        assert "Run this command" in screen
        assert not (workdir / "RAN1").exists()
        assert "without asking" not in screen
        send_line(name, "y")  # the answer, typed after the question was shown
        wait_for(lambda: (workdir / "RAN1").exists(), what="the approved command to run")
        wait_for(
            lambda: sum(question in line for line in screen_lines(name)) == 2,
            what="the next command to be asked about",
        )
        assert not (workdir / "RAN2").exists()
        send_line(name, "n")
        _wait_screen(name, "declined")
        send_line(name, "/quit")
        _wait_screen(name, "EXITED 0")
    finally:
        thinking.set()
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    assert not (workdir / "RAN2").exists()
    events = [json.loads(line) for line in only_session(cli_env).read_text().splitlines()]
    steering = [e["data"]["content"] for e in events if e["type"] == "steering/message"]
    assert steering == typed
    policies = [e["data"] for e in events if e["type"] == "command/run"]
    assert policies == []  # "always" switched nothing


# --- settings-derived strings reach the terminal written out, never obeyed -------------------

TITLE = "\x1b]0;PWNED\x07"
"""An escape sequence that retitles a terminal."""


@pytest.mark.parametrize("source", ["--model", "REEFLINE_MODEL", "config file"])
def test_plain_writes_out_a_model_name_that_holds_escapes(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, tmp_path: Path,
    source: str,
) -> None:  # fmt: skip
    """``--plain``'s banner, ``/model`` and its confirmation write the model name's escapes
    out (they used to print it raw: the terminal was retitled), wherever the name came from."""
    env = dict(cli_env)
    args = ["--plain", "--base-url", openai_server.base_url]
    if source == "--model":
        args += ["--model", f"a{TITLE}"]
    elif source == "REEFLINE_MODEL":
        env["REEFLINE_MODEL"] = f"a{TITLE}"
    else:
        config = tmp_path / "evil.toml"
        config.write_text('model = "a\\u001b]0;PWNED\\u0007"\n')  # TOML's escapes
        env["REEFLINE_CONFIG"] = str(config)
    said = subprocess.run(
        [REEFLINE, *args], input=f"/model\n/model b{TITLE}\n/model\n/quit\n", cwd=workdir,
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert said.returncode == 0, said.stderr
    assert "\x1b" not in said.stdout + said.stderr and "\x07" not in said.stdout + said.stderr
    shown = "\\x1b]0;PWNED\\x07"
    banner = said.stdout.splitlines()[0]
    assert banner.startswith(f"reefline · a{shown} · session "), banner
    assert f"Model: a{shown}." in said.stdout
    assert f"Model set to b{shown} for the next request" in said.stdout
    assert f"Model: b{shown}." in said.stdout


@pytest.mark.parametrize("front", ["--plain", "-p"])
def test_a_base_url_with_escapes_gets_a_message(
    cli_env: dict[str, str], workdir: Path, front: str
) -> None:
    """A base URL holding a control character is refused at start with a message that writes
    it out (it was an "internal error" from the HTTP client at the first request)."""
    args = ["--plain"] if front == "--plain" else ["-p", "hi"]
    said = subprocess.run(
        [REEFLINE, *args, "--model", "m", "--base-url", f"http://127.0.0.1:9/v1{TITLE}"],
        input="/quit\n", cwd=workdir, env=cli_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert said.returncode == 2, (said.stdout, said.stderr)
    assert "\x1b" not in said.stdout + said.stderr
    assert "internal error" not in said.stderr
    assert "--base-url 'http://127.0.0.1:9/v1\\x1b]0;PWNED\\x07' holds a control character" in (
        said.stderr
    )


def test_sessions_writes_out_a_home_that_holds_escapes(
    cli_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    """``reefline sessions`` with no session yet names the folder it looked in: a
    REEFLINE_HOME holding an escape sequence is written out, not obeyed."""
    home = tmp_path / f"home{TITLE}"
    said = subprocess.run(
        [REEFLINE, "sessions"], cwd=workdir, env={**cli_env, "REEFLINE_HOME": str(home)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert said.returncode == 0, said.stderr
    assert "\x1b" not in said.stdout + said.stderr
    assert "home\\x1b]0;PWNED\\x07/sessions" in said.stdout


# --- a command after many empty lines is in view with its question ---------------------------


def test_plain_approval_keeps_what_runs_in_view_after_empty_lines(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """``--plain`` on a 30-row terminal asks about 80 empty lines then ``touch RAN``: the
    question, the collapsed run (numbered) and the line that runs (numbered 81) are on the
    screen together; what runs is the command byte for byte."""
    command = "\n" * 80 + "touch RAN"
    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "ok"}
    )
    name = f"blank-{os.getpid()}"
    tmux_session(name, cli_env, workdir, "--plain", "--approve", "ask", "--base-url",
                 openai_server.base_url, "--model", "m")  # fmt: skip
    try:
        _wait_screen(name, "/quit leaves")
        send_line(name, "go")
        _wait_screen(name, "[always] this session")
        lines = screen_lines(name)
        assert any("Run this command" in line and "81 lines, 80 of them empty" in line
                   for line in lines), lines  # fmt: skip
        assert "1 │ ⋮ 80 empty lines" in lines and "81 │ touch RAN" in lines, lines
        send_line(name, "y")
        wait_for(lambda: (workdir / "RAN").exists(), what="the approved command to run")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    [call] = [
        json.loads(line)["data"]
        for line in only_session(cli_env).read_text().splitlines()
        if json.loads(line)["type"] == "tool/start"
    ]
    assert json.loads(call["arguments"])["command"] == command


@pytest.mark.parametrize(
    "sig", [signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM], ids=lambda s: s.name
)
def test_every_signal_that_ends_plain_at_its_prompt_restores_the_terminal(
    cli_env: dict[str, str], workdir: Path, sig: int
) -> None:
    """``--plain`` waiting at its prompt (prompt-toolkit has the terminal raw): SIGHUP sent
    while the terminal is still there and SIGQUIT leave it in line mode with echo, as
    SIGTERM does; the exit code names the signal."""
    name = f"plainsig-{os.getpid()}-{int(sig)}"
    tmux_session(name, cli_env, workdir, "--plain", "--demo")
    try:
        _wait_screen(name, "/quit leaves")
        wait_for(lambda: "›" in screen_lines(name), what="the prompt")
        pid = reefline_pid(name)
        os.kill(pid, sig)
        wait_for(lambda: not _alive(pid), what="reefline to exit")
        assert f"EXITED {128 + sig}" in _wait_screen(name, "EXITED")
        before, after = terminal_settings(name)
        assert after == before
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
