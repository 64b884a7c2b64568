"""A usage figure no server could have meant (``prompt_tokens: 10**400``, ``1e400``, ``NaN``,
a negative number, a string) is "not reported", and a log that already holds one (written by
earlier versions, which logged such a figure as it came) opens everywhere: ``-p --resume``,
``/context`` (``-p`` and ``--plain``), ``reefline sessions`` (every session of the home),
and the app (tests/tui/test_app_usage_figures.py). The real CLI against the loopback server.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.openai_server import OpenAIServer

HUGE = "1" + "0" * 400
"""A JSON integer of 401 digits: Python reads it whole, and no float holds it."""
MODEL = ("--model", "m", "--context-window", "8000")


def usage_chunk(prompt_tokens: str) -> dict[str, object]:
    """A reply whose usage chunk is sent as written: ``prompt_tokens`` is JSON text."""
    line = (
        '{"id": "chatcmpl-x", "object": "chat.completion.chunk", "model": "m", "choices": [], '
        f'"usage": {{"prompt_tokens": {prompt_tokens}, "completion_tokens": 3, '
        '"total_tokens": 3}}'
    )
    # Before the chunk that ends the reply (the third event of a one-delta reply).
    return {"text": "hello there", "chunk_size": 64, "usage": False, "raw_after": 2, "raw": line}


def held_with_usage(run_cli: Run, server: OpenAIServer, cli_env: dict[str, str]) -> Path:
    """A real session with one reply that carried a usage, and its log."""
    before = set(session_files(cli_env))
    out = run_cli("-p", "count them", "--base-url", server.base_url, *MODEL)
    assert out.returncode == 0, out.stderr
    [log] = set(session_files(cli_env)) - before
    return log


def as_old_versions_logged(log: Path, prompt_tokens: str) -> None:
    """Put ``prompt_tokens`` (JSON text) into the log's reply usage, as versions before the
    check wrote what the server sent: the event line itself, in the log's compact JSON."""
    lines = log.read_text().splitlines()
    for n, line in enumerate(lines):
        event = json.loads(line)
        if event["type"] == "assistant/message":
            assert event["data"]["usage"]["prompt_tokens"] > 0
            event["data"]["usage"]["prompt_tokens"] = 0
            text = json.dumps(event, separators=(",", ":"))
            lines[n] = text.replace('"prompt_tokens":0', f'"prompt_tokens":{prompt_tokens}')
    log.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("figure", [HUGE, "1e400", "NaN", "-5", '"lots"', "12.5", "[7]"])
def test_a_reply_with_an_impossible_usage_figure_is_taken_as_not_reported(
    figure: str, run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.push(usage_chunk(figure))
    out = run_cli("-p", "count them", "--base-url", openai_server.base_url, *MODEL)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hello there"
    [log] = session_files(cli_env)
    [reply] = [e["data"] for e in log_events(log) if e["type"] == "assistant/message"]
    assert "usage" not in reply
    context = run_cli("-p", "/context", "--continue")
    assert context.returncode == 0, context.stderr
    assert "usage not reported" in context.stdout
    assert "Traceback" not in context.stderr + out.stderr


def test_a_log_holding_a_huge_figure_opens_in_every_view(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    sane = held_with_usage(run_cli, openai_server, cli_env)
    bricked = held_with_usage(run_cli, openai_server, cli_env)
    as_old_versions_logged(bricked, HUGE)
    assert HUGE in bricked.read_text()

    listing = run_cli("sessions")
    assert listing.returncode == 0, listing.stderr
    assert sane.stem in listing.stdout and bricked.stem in listing.stdout
    assert "usage not reported" in listing.stdout  # the bricked one's line
    assert "in " in listing.stdout  # the sane one's usage is still said

    sid = bricked.stem
    context = run_cli("-p", "/context", "--resume", sid)
    assert context.returncode == 0, context.stderr
    assert "usage not reported" in context.stdout

    plain = subprocess.run(
        [REEFLINE, "--plain", "--resume", sid],
        input="/context\n/quit\n",
        cwd=workdir,
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "not reported" in plain.stdout

    more = run_cli("-p", "and more", "--resume", sid)
    assert more.returncode == 0, more.stderr
    assert more.stdout.strip() == "Hello from the scripted server."
    again = run_cli("sessions")
    assert again.returncode == 0 and sid in again.stdout, again.stderr
