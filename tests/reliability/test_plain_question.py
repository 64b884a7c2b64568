"""``--plain``'s approval question on a real terminal (tmux): a typed sentence never answers
it, and Ctrl+C still interrupts a running command after a question was answered."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer
from tests.reliability import test_hardening
from tests.reliability.conftest import REEFLINE, only_session
from tests.reliability.test_hardening import _wait_screen, sleepers, wait_for
from tests.reliability.test_hardening_frontends import screen_lines, send_line, tmux_session

nap = test_hardening.nap
"""The fixture: a ``sleep`` only this test runs."""

QUESTION = "[always] this session"


def typed(name: str, text: str) -> None:
    """Keys typed on the pane, without Enter."""
    subprocess.run(["tmux", "send-keys", "-t", name, "-l", text], check=True)


@pytest.mark.parametrize(
    ("before", "after", "kept"),
    [
        ("use this instead", "", ["use this instead"]),
        ("then say ", "yes", ["then say yes"]),
        ("", "", []),
        ("", "why not rg", ["why not rg"]),
    ],
    ids=["enter-ends-a-sentence", "a-sentence-ends-in-yes", "an-empty-line", "y-and-n-in-words"],
)
def test_plain_a_sentence_never_answers_the_question(
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    workdir: Path,
    before: str,
    after: str,
    kept: list[str],
) -> None:
    """``--plain --approve ask`` on a real terminal: the person is typing a sentence (no
    Enter yet) while the model thinks, and finishes it after the question shows (its last
    word, or only its Enter); or types a sentence, or an empty line, at the question. None
    of them answers it: a sentence goes to the agent as a message, and the question is asked
    again; only then does ``n`` deny."""
    thinking = threading.Event()
    openai_server.push(
        {
            "tool_calls": [{"name": "bash", "arguments": {"command": "touch RAN"}}],
            "hold": thinking,
        },
        {"text": "ok"},
    )
    name = f"plainsentence-{os.getpid()}-{len(before)}-{len(after)}"
    tmux_session(name, cli_env, workdir, "--plain", "--approve", "ask", "--base-url",
                 openai_server.base_url, "--model", "m")  # fmt: skip
    try:
        _wait_screen(name, "/quit leaves")
        send_line(name, "go")
        wait_for(lambda: len(openai_server.requests) == 1, what="the model to be asked")
        if before:
            typed(name, before)
            _wait_screen(name, before.strip())  # echoed: it waits in the terminal's queue
        thinking.set()
        _wait_screen(name, QUESTION)
        send_line(name, after)
        wait_for(
            lambda: sum(QUESTION in line for line in screen_lines(name)) == 2,
            what="the question to be asked again",
        )
        assert not (workdir / "RAN").exists()
        assert "declined" not in "\n".join(screen_lines(name))
        send_line(name, "n")
        _wait_screen(name, "declined")
        send_line(name, "/quit")
        _wait_screen(name, "EXITED 0")
    finally:
        thinking.set()
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    assert not (workdir / "RAN").exists()
    events = [json.loads(line) for line in only_session(cli_env).read_text().splitlines()]
    steering = [e["data"]["content"] for e in events if e["type"] == "steering/message"]
    assert steering == kept


def test_plain_a_slash_command_at_the_question_never_reaches_the_model(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """``/context`` typed before the question (while the model thinks) and at it: each is
    refused with a line saying so, the question is asked again, and neither is ever sent
    to the model as a message (no steering, nothing in the next request)."""
    thinking = threading.Event()
    openai_server.push(
        {
            "tool_calls": [{"name": "bash", "arguments": {"command": "touch RAN"}}],
            "hold": thinking,
        },
        {"text": "ok"},
    )
    name = f"plainslash-{os.getpid()}"
    tmux_session(name, cli_env, workdir, "--plain", "--approve", "ask", "--base-url",
                 openai_server.base_url, "--model", "m")  # fmt: skip
    try:
        _wait_screen(name, "/quit leaves")
        send_line(name, "go")
        wait_for(lambda: len(openai_server.requests) == 1, what="the model to be asked")
        send_line(name, "/timeline")  # typed ahead, with its Enter
        thinking.set()
        _wait_screen(name, QUESTION)
        _wait_screen(name, "/timeline is a command, not a message")
        send_line(name, "/context")
        _wait_screen(name, "/context is a command, not a message")
        wait_for(
            lambda: sum(QUESTION in line for line in screen_lines(name)) == 2,
            what="the question to be asked again",
        )
        send_line(name, "n")
        _wait_screen(name, "declined")
        wait_for(lambda: len(openai_server.requests) == 2, what="the model to be asked again")
        send_line(name, "/quit")
        _wait_screen(name, "EXITED 0")
    finally:
        thinking.set()
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    sent = json.dumps(openai_server.requests[-1]["messages"])
    assert "/context" not in sent and "/timeline" not in sent
    events = [json.loads(line) for line in only_session(cli_env).read_text().splitlines()]
    assert not [e for e in events if e["type"] == "steering/message"]


def test_plain_ctrl_c_interrupts_a_command_after_a_question_was_answered(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, nap: str
) -> None:
    """``--plain --approve ask``: one command approved, then a long one approved; Ctrl+C
    (the key, typed on the terminal) stops it at once and the prompt takes lines again."""
    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch RAN1"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": nap}}]},
        {"text": "still here"},
    )
    name = f"plainint-{os.getpid()}"
    tmux_session(name, cli_env, workdir, "--plain", "--approve", "ask", "--base-url",
                 openai_server.base_url, "--model", "m")  # fmt: skip
    try:
        _wait_screen(name, "/quit leaves")
        send_line(name, "go")
        _wait_screen(name, QUESTION)
        send_line(name, "y")
        wait_for(lambda: (workdir / "RAN1").exists(), what="the first command to run")
        wait_for(
            lambda: sum(QUESTION in line for line in screen_lines(name)) == 2,
            what="the second question",
        )
        send_line(name, "y")
        wait_for(lambda: sleepers(nap) != [], what="the long command to start")
        subprocess.run(["tmux", "send-keys", "-t", name, "C-c"], check=True)
        _wait_screen(name, "interrupted; the turn was closed")
        wait_for(lambda: sleepers(nap) == [], what="the command to be stopped")
        send_line(name, "hello again")
        _wait_screen(name, "still here")
        send_line(name, "/quit")
        _wait_screen(name, "EXITED 0")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        for pid in sleepers(nap):
            os.kill(pid, 9)


def test_plain_ctrl_c_stops_compact_after_a_question_was_answered(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """``--plain --approve ask``: a question answered, then ``/compact`` waiting on the
    server (its summary request held open); Ctrl+C stops it, and the REPL takes lines."""
    summarizing = threading.Event()
    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch RAN1"}}]},
        {"text": "done " * 300},
        {"text": "second " * 300},
        {"text": "third " * 300},
        {"text": "a summary", "hold": summarizing},
        {"text": "still here"},
    )
    name = f"plaincompact-{os.getpid()}"
    tmux_session(name, cli_env, workdir, "--plain", "--approve", "ask", "--base-url",
                 openai_server.base_url, "--model", "m", "--context-window", "4000")  # fmt: skip
    try:
        _wait_screen(name, "/quit leaves")
        send_line(name, "go")
        _wait_screen(name, QUESTION)
        send_line(name, "y")
        _wait_screen(name, "done done")
        send_line(name, "and then")
        _wait_screen(name, "second second")
        send_line(name, "and more")
        _wait_screen(name, "third third")
        send_line(name, "/compact")
        wait_for(lambda: len(openai_server.requests) == 5, what="the summary to be asked for")
        subprocess.run(["tmux", "send-keys", "-t", name, "C-c"], check=True)
        _wait_screen(name, "interrupted; /compact stopped")
        send_line(name, "hello again")
        _wait_screen(name, "still here")
        send_line(name, "/quit")
        _wait_screen(name, "EXITED 0")
    finally:
        summarizing.set()
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def test_plain_ctrl_c_at_the_question_interrupts_the_turn(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """Ctrl+C at the question (a key there: the prompt has the terminal raw) interrupts the
    turn, as it does anywhere in a turn; the command never ran, and the log says so. The
    REPL takes lines again."""
    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch RAN"}}]},
        {"text": "still here"},
    )
    name = f"plainq-{os.getpid()}"
    tmux_session(name, cli_env, workdir, "--plain", "--approve", "ask", "--base-url",
                 openai_server.base_url, "--model", "m")  # fmt: skip
    try:
        _wait_screen(name, "/quit leaves")
        send_line(name, "go")
        _wait_screen(name, QUESTION)
        subprocess.run(["tmux", "send-keys", "-t", name, "C-c"], check=True)
        _wait_screen(name, "interrupted; the turn was closed")
        send_line(name, "hello again")
        _wait_screen(name, "still here")
        send_line(name, "/quit")
        _wait_screen(name, "EXITED 0")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    assert not (workdir / "RAN").exists()
    events = [json.loads(line) for line in only_session(cli_env).read_text().splitlines()]
    [result] = [e["data"] for e in events if e["type"] == "tool/result"]
    assert "not run" in result["content"]
    assert any(e["type"] == "turn/end" and e["data"]["reason"] == "cancelled" for e in events)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_plain_on_a_pipe_leaves_on_a_signal_with_nothing_running(
    cli_env: dict[str, str], workdir: Path, sig: int
) -> None:
    """Lines from a pipe that stays open, nothing running: SIGINT (Ctrl+C on the terminal,
    which no prompt reads there) and SIGTERM end the REPL at once, the exit code naming the
    signal (it used to wait for the pipe to give a line or close)."""
    proc = subprocess.Popen(
        [REEFLINE, "--plain", "--demo"], cwd=workdir, env=cli_env, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        while "/quit leaves" not in proc.stdout.readline():
            pass
        proc.send_signal(sig)
        assert proc.wait(timeout=20) == 128 + sig
    finally:
        proc.kill()
        proc.communicate()
