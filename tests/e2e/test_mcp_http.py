"""A streamable-HTTP MCP server (the SDK's own, behind a bearer-token check) through the real
``reefline -p``: the token from ``bearer_token_env`` reaches the server and nothing else (not
the log, the output, the export)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Run
from tests.e2e.test_mcp_headless import ask, call, configure, tool_messages
from tests.mcp.servers import ROOT
from tests.openai_server import OpenAIServer

TOKEN = "tok-5ecret-b3arer-value"


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.mcp.fault_server", "http", str(port_file)],
        cwd=ROOT, env={"EXPECTED_TOKEN": TOKEN, "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def web(url: str) -> str:
    return f'[mcp_servers.web]\nurl = "{url}"\nbearer_token_env = "WEB_TOKEN"\n'


def everything_written(cli_env: dict[str, str]) -> str:
    home = Path(cli_env["REEFLINE_HOME"])
    return "".join(p.read_text(errors="replace") for p in home.rglob("*") if p.is_file())


def test_the_bearer_token_reaches_the_server_and_nothing_else(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], http_server: str
) -> None:
    configure(cli_env, web(http_server))
    openai_server.push(
        {"tool_calls": [call("mcp__web__echo", {"text": "over http"})]}, {"text": "ok"}
    )
    out = ask(run_cli, openai_server, "--approve", "auto", env={"WEB_TOKEN": TOKEN})
    assert out.returncode == 0, out.stderr
    assert tool_messages(openai_server, 1) == ["over http"]
    export = run_cli("export")
    assert export.returncode == 0
    for text in (out.stdout, out.stderr, export.stdout, everything_written(cli_env)):
        assert TOKEN not in text
    assert TOKEN not in str(openai_server.requests)


def test_a_wrong_token_is_a_server_that_failed_and_is_not_shown(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], http_server: str
) -> None:
    configure(cli_env, web(http_server))
    wrong = "tok-wrong-" + TOKEN[::-1]
    openai_server.push({"tool_calls": [call("mcp__web__echo", {"text": "x"})]}, {"text": "ok"})
    out = ask(run_cli, openai_server, "--approve", "auto", env={"WEB_TOKEN": wrong})
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("MCP server `web` failed") == 1, out.stderr
    assert "HTTP 401 (check bearer_token_env and headers)" in out.stderr
    [answer] = tool_messages(openai_server, 1)
    assert "MCP server `web` is not running" in answer
    for text in (out.stdout, out.stderr, answer, everything_written(cli_env)):
        assert wrong not in text
