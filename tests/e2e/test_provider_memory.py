"""A session remembers its provider: ``--continue``, ``--resume``, ``reefline compact`` and
``reefline fork`` send its requests where the conversation was held, whatever the environment
says; a flag that moves it is honoured and said. The log keeps the name of a key variable
``--api-key-env`` named, never the key.

Two loopback servers stand for the local model the session was held with and for "the cloud"
(``OPENAI_BASE_URL`` with ``OPENAI_API_KEY`` set: what a forgotten flag fell back to).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Run, log_events, session_files
from tests.openai_server import OpenAIServer

SECRET = "sk-test-not-for-the-log-0123456789"


@pytest.fixture
def cloud() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def cloud_env(cloud: OpenAIServer) -> dict[str, str]:
    """A shell where a cloud provider is configured by the environment."""
    return {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": cloud.base_url}


def held_locally(run_cli: Run, local: OpenAIServer, cli_env: dict[str, str]) -> Path:
    """A session held with model ``qwen-local`` on ``local`` (no key needed there)."""
    done = run_cli("-p", "hello local", "--base-url", local.base_url, "--model", "qwen-local")
    assert done.returncode == 0, done.stderr
    [path] = session_files(cli_env)
    return path


def models(server: OpenAIServer) -> list[str]:
    return [request["model"] for request in server.requests]


def test_continue_without_flags_stays_on_the_sessions_server(
    run_cli: Run, openai_server: OpenAIServer, cloud: OpenAIServer, cli_env, cloud_env
) -> None:  # type: ignore[no-untyped-def]
    path = held_locally(run_cli, openai_server, cli_env)
    done = run_cli("-p", "and again", "--continue", env=cloud_env)
    assert done.returncode == 0, done.stderr
    assert cloud.requests == []
    assert models(openai_server) == ["qwen-local", "qwen-local"]
    start = log_events(path)[0]["data"]["provider"]
    assert start["base_url"] == openai_server.base_url and start["model"] == "qwen-local"
    assert SECRET not in path.read_text()


def test_resume_compact_and_fork_use_the_sessions_provider(
    run_cli: Run, openai_server: OpenAIServer, cloud: OpenAIServer, cli_env, cloud_env
) -> None:  # type: ignore[no-untyped-def]
    path = held_locally(run_cli, openai_server, cli_env)
    sid = path.stem
    for n in range(3):
        openai_server.push({"text": f"A long answer {n}.", "words": 300})
        assert run_cli("-p", f"more {n}", "--resume", sid, env=cloud_env).returncode == 0
    compacted = run_cli("compact", sid, env=cloud_env)
    assert compacted.returncode == 0, compacted.stderr + compacted.stdout
    assert "Compacted" in compacted.stdout
    forked = run_cli("fork", sid, "--at", str(_first_turn(path)), env=cloud_env)
    assert forked.returncode == 0, forked.stderr
    new_id = forked.stdout.split()[0]
    again = run_cli("-p", "from the fork", "--resume", new_id, env=cloud_env)
    assert again.returncode == 0, again.stderr
    assert cloud.requests == []
    assert set(models(openai_server)) == {"qwen-local"}
    for log in session_files(cli_env):
        assert SECRET not in log.read_text()


def test_a_flag_moves_the_session_and_says_so(
    run_cli: Run, openai_server: OpenAIServer, cloud: OpenAIServer, cli_env, cloud_env
) -> None:  # type: ignore[no-untyped-def]
    path = held_locally(run_cli, openai_server, cli_env)
    moved = run_cli(
        "-p",
        "now elsewhere",
        "--continue",
        "--model",
        "gpt-4.1",
        "--base-url",
        cloud.base_url,
        env=cloud_env,
    )
    assert moved.returncode == 0, moved.stderr
    host = openai_server.base_url.split("//")[1].split("/")[0]
    cloud_host = cloud.base_url.split("//")[1].split("/")[0]
    assert f"gpt-4.1 at {cloud_host}, was qwen-local at {host} (--base-url, --model given)" in (
        moved.stderr
    )
    assert models(cloud) == ["gpt-4.1"]
    [record] = [e["data"] for e in log_events(path) if e["type"] == "session/provider"]
    # OPENAI_API_KEY went with OPENAI_BASE_URL's server by the rule, not by a choice to keep.
    assert record["model"] == "gpt-4.1" and "api_key_env" not in record
    assert SECRET not in path.read_text()
    # and the next --continue goes on where the flag moved it
    assert run_cli("-p", "still there?", "--continue", env=cloud_env).returncode == 0
    assert models(cloud) == ["gpt-4.1", "gpt-4.1"]


def test_a_log_older_than_the_record_loads_and_learns_its_provider(
    run_cli: Run, openai_server: OpenAIServer, cli_env
) -> None:  # type: ignore[no-untyped-def]
    path = held_locally(run_cli, openai_server, cli_env)
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    del first["data"]["provider"]
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    done = run_cli(
        "-p", "old log", "--continue", "--base-url", openai_server.base_url, "--model", "q2"
    )
    assert done.returncode == 0, done.stderr
    assert "Continuing on" not in done.stderr  # nothing was recorded to move from
    again = run_cli("-p", "and on", "--continue")
    assert again.returncode == 0, again.stderr
    assert models(openai_server)[-2:] == ["q2", "q2"]


def _first_turn(path: Path) -> int:
    return next(e["seq"] for e in log_events(path) if e["type"] == "turn/start")
