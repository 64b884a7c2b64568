"""A key goes only where it was meant to go: the real CLI against a loopback server that
records the ``Authorization`` header of every request it gets, the model's and the window
checks' (``/v1/models``, ``/props``, ``/api/show``...).

``OPENAI_API_KEY`` goes to OpenAI or to the server ``OPENAI_BASE_URL`` names,
``DEEPSEEK_API_KEY`` to DeepSeek; any other server gets only the key ``--api-key-env`` names,
else none; a server that wanted a key and got none is answered with the flag to use. A
session held with a local server resumes in a shell without any key variable.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.openai_server import OpenAIServer

OPENAI_KEY = "sk-openai-test-key-0123456789abcdef"
DEEPSEEK_KEY = "sk-deepseek-test-key-0123456789abcdef"
MY_KEY = "sk-mine-test-key-0123456789abcdef"
EXPORTED = {"OPENAI_API_KEY": OPENAI_KEY, "DEEPSEEK_API_KEY": DEEPSEEK_KEY}


def authorizations(server: OpenAIServer) -> list[str | None]:
    """The ``Authorization`` header of every request the server got (None: none sent)."""
    chats = [headers.get("authorization") for headers in server.headers]
    checks = [headers.get("authorization") for _, _, headers in server.other_requests]
    return chats + checks


def window_checks(server: OpenAIServer) -> list[str]:
    return [path for _, path, _ in server.other_requests]


def provider_record(log: Path) -> dict[str, object]:
    """The provider the log says the session's requests go to (the last record)."""
    records = [e["data"]["provider"] for e in log_events(log) if e["type"] == "session/start"]
    records += [e["data"] for e in log_events(log) if e["type"] == "session/provider"]
    return dict(records[-1])


def test_exported_keys_are_not_sent_to_another_base_url(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    out = run_cli("-p", "hi", "--base-url", openai_server.base_url, "--model", "m", env=EXPORTED)
    assert out.returncode == 0, out.stderr
    assert openai_server.requests and "/v1/models" in window_checks(openai_server)
    assert authorizations(openai_server) == [None] * len(authorizations(openai_server))
    [log] = session_files(cli_env)
    assert provider_record(log).get("api_key_env") is None
    assert OPENAI_KEY not in log.read_text()


def test_a_url_that_names_a_provider_in_its_path_gets_no_key(
    run_cli: Run, openai_server: OpenAIServer
) -> None:
    """Servers are compared by scheme, host and port, not by a piece of the URL's text."""
    for path in ("api.deepseek.com/v1", "https://api.openai.com/v1"):
        url = f"http://127.0.0.1:{openai_server.port}/{path}"
        out = run_cli("-p", "hi", "--base-url", url, "--model", "deepseek-chat", env=EXPORTED)
        assert out.returncode == 0, out.stderr
    assert len(openai_server.requests) == 2
    assert set(authorizations(openai_server)) == {None}


def test_openai_base_url_pairs_with_openai_api_key(
    run_cli: Run, openai_server: OpenAIServer
) -> None:
    """The conventional pair keeps working, window checks included."""
    paired = {**EXPORTED, "OPENAI_BASE_URL": openai_server.base_url}
    out = run_cli("-p", "hi", "--model", "m", env=paired)
    assert out.returncode == 0, out.stderr
    # A --base-url naming the same server is that server too.
    out = run_cli("-p", "hi", "--model", "m", "--base-url", openai_server.base_url, env=paired)
    assert out.returncode == 0, out.stderr
    assert len(openai_server.requests) == 2 and window_checks(openai_server)
    assert set(authorizations(openai_server)) == {f"Bearer {OPENAI_KEY}"}


def test_api_key_env_names_the_key_for_any_server_and_the_session_remembers_it(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    env = {**EXPORTED, "MY_KEY": MY_KEY}
    args = ("--base-url", openai_server.base_url, "--model", "m")
    out = run_cli("-p", "hi", *args, "--api-key-env", "MY_KEY", env=env)
    assert out.returncode == 0, out.stderr
    [log] = session_files(cli_env)
    assert provider_record(log)["api_key_env"] == "MY_KEY"
    again = run_cli("-p", "more", "--continue", env=env)  # no flag: the session's choice
    assert again.returncode == 0, again.stderr
    assert len(openai_server.requests) == 2 and window_checks(openai_server)
    assert set(authorizations(openai_server)) == {f"Bearer {MY_KEY}"}
    assert MY_KEY not in log.read_text()


def test_a_401_from_a_server_given_no_key_names_the_flag(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    refused = {"status": 401, "message": "Missing bearer token", "type": "unauthorized"}
    args = ("--base-url", openai_server.base_url, "--model", "m", "--context-window", "8000")
    openai_server.push(refused)
    out = run_cli("-p", "hi", *args, env=EXPORTED)
    assert out.returncode == 1
    assert "No API key was sent to this server" in out.stderr
    assert "--api-key-env NAME" in out.stderr
    openai_server.push(refused)
    plain = subprocess.run(
        [REEFLINE, "--plain", *args],
        input="hi\n/quit\n",
        cwd=workdir,
        env={**cli_env, **EXPORTED},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "--api-key-env NAME" in plain.stdout + plain.stderr, plain.stdout + plain.stderr
    assert set(authorizations(openai_server)) == {None}


def test_a_local_session_resumes_in_a_shell_without_any_key_variable(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    out = run_cli("-p", "hi", "--base-url", openai_server.base_url, "--model", "m", env=EXPORTED)
    assert out.returncode == 0, out.stderr
    again = run_cli("-p", "and on", "--continue")  # cli_env holds no key variable
    assert again.returncode == 0, again.stderr
    assert [r["model"] for r in openai_server.requests] == ["m", "m"]


def test_a_log_that_recorded_a_conventional_key_for_a_local_server_resumes_without_it(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    """Earlier versions recorded the variable of every key they sent, also OPENAI_API_KEY
    sent to a local server: such a log resumes without the variable, and sends no key."""
    out = run_cli("-p", "hi", "--base-url", openai_server.base_url, "--model", "m")
    assert out.returncode == 0, out.stderr
    [log] = session_files(cli_env)
    lines = log.read_text().splitlines()
    start = json.loads(lines[0])
    start["data"]["provider"]["api_key_env"] = "OPENAI_API_KEY"
    log.write_text("\n".join([json.dumps(start, separators=(",", ":")), *lines[1:]]) + "\n")
    again = run_cli("-p", "and on", "--continue")
    assert again.returncode == 0, again.stderr
    once_more = run_cli("-p", "still local", "--continue", env=EXPORTED)
    assert once_more.returncode == 0, once_more.stderr
    assert len(openai_server.requests) == 3
    assert set(authorizations(openai_server)) == {None}


def test_a_key_named_on_resume_goes_to_the_sessions_own_server(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    """What the 401 advises: ``--continue --api-key-env NAME`` sends that key to the server
    the session is held with, never moves the session to OpenAI or OPENAI_BASE_URL's."""
    with OpenAIServer() as cloud:
        env = {**EXPORTED, "MY_KEY": MY_KEY, "OPENAI_BASE_URL": cloud.base_url}
        args = ("--base-url", openai_server.base_url, "--model", "m")
        openai_server.push({"status": 401, "message": "Missing bearer token"})
        refused = run_cli("-p", "hi", *args, env=env)
        assert refused.returncode == 1 and "--api-key-env NAME" in refused.stderr
        again = run_cli("-p", "hi again", "--continue", "--api-key-env", "MY_KEY", env=env)
        assert again.returncode == 0, again.stderr
        assert ", was " not in again.stderr  # it stayed where it was
        assert cloud.requests == [] and cloud.other_requests == []
    assert [h.get("authorization") for h in openai_server.headers] == [None, f"Bearer {MY_KEY}"]
    [log] = session_files(cli_env)
    assert provider_record(log)["api_key_env"] == "MY_KEY"
