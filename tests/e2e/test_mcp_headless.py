"""MCP servers through the real ``reefline -p`` against a loopback model: the real
``mcp-server-time`` and ``mcp-server-git`` from PyPI, and the SDK-made fault servers."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.conftest import Run, log_events, session_files
from tests.mcp.servers import GIT, TIME, fault, toml_table
from tests.openai_server import OpenAIServer


def configure(env: dict[str, str], *tables: str) -> None:
    Path(env["REEFLINE_CONFIG"]).write_text("".join(tables))


def call(name: str, arguments: dict, call_id: str = "c1") -> dict:
    return {"id": call_id, "name": name, "arguments": arguments}


def ask(
    run_cli: Run, server: OpenAIServer, *more: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    common = ("--base-url", server.base_url, "--model", "m", "--context-window", "100000")
    return run_cli("-p", "go", *common, *more, env=env)


def tool_messages(server: OpenAIServer, n: int) -> list[str]:
    return [m["content"] for m in server.requests[n]["messages"] if m["role"] == "tool"]


def offered(server: OpenAIServer, n: int) -> list[str]:
    return [t["function"]["name"] for t in server.requests[n].get("tools", [])]


def test_time_server_answers_a_call(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    configure(cli_env, toml_table("time", TIME, []))
    openai_server.push(
        {"tool_calls": [call("mcp__time__get_current_time", {"timezone": "Europe/Paris"})]},
        {"text": "It is late."},
    )
    out = ask(run_cli, openai_server, "--approve", "auto")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "It is late.\n"
    [answer] = tool_messages(openai_server, 1)
    assert json.loads(answer)["timezone"] == "Europe/Paris"
    assert "datetime" in json.loads(answer)
    # By the second request the server is up: its tools are offered by their full names.
    assert {"bash", "mcp__time__get_current_time", "mcp__time__convert_time"} <= set(
        offered(openai_server, 1)
    )
    [log] = session_files(cli_env)
    result = next(e for e in log_events(log) if e["type"] == "tool/result")
    assert result["data"]["is_error"] is False


def test_git_server_reads_the_repository(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    configure(cli_env, toml_table("git", GIT, ["--repository", str(workdir)]))
    openai_server.push(
        {"tool_calls": [call("mcp__git__git_status", {"repo_path": str(workdir)})]},
        {"text": "done"},
    )
    out = ask(run_cli, openai_server, "--approve", "auto")
    assert out.returncode == 0, out.stderr
    [answer] = tool_messages(openai_server, 1)
    assert "Untracked files" in answer or "branch" in answer.lower(), answer


def test_a_server_that_cannot_start_is_named_once_and_the_session_goes_on(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], tmp_path: Path
) -> None:
    configure(cli_env, toml_table("broken", str(tmp_path / "no-such-server"), []))
    openai_server.push(
        {"tool_calls": [call("mcp__broken__anything", {})]},
        {"text": "went on"},
    )
    out = ask(run_cli, openai_server, "--approve", "auto")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "went on\n"
    assert out.stderr.count("MCP server `broken` failed") == 1, out.stderr
    [answer] = tool_messages(openai_server, 1)
    assert "MCP server `broken` is not running" in answer


def test_ask_without_anyone_to_ask_refuses_the_call(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    configure(cli_env, toml_table("time", TIME, []))
    openai_server.push(
        {"tool_calls": [call("mcp__time__get_current_time", {"timezone": "UTC"})]},
        {"text": "ok"},
    )
    out = ask(run_cli, openai_server)  # -p: deny unless --approve auto
    assert out.returncode == 0, out.stderr
    [answer] = tool_messages(openai_server, 1)
    assert answer.startswith("MCP tool not called"), answer


def test_a_server_still_starting_holds_up_neither_the_prompt_nor_the_exit(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    """A server that would take ten minutes to start: the request goes out without its
    tools, the answer comes, and reefline leaves (ending the server) without waiting."""
    configure(cli_env, fault("slow", "slow"))
    openai_server.push({"text": "answered"})
    out = ask(run_cli, openai_server, env={"SLOW_START_S": "600"})
    assert out.returncode == 0, out.stderr
    assert out.stdout == "answered\n"
    assert offered(openai_server, 0) == ["bash", "edit"]


def test_a_stdio_server_gets_the_env_it_is_given_not_the_api_key(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    configure(cli_env, fault("probe", "crash", env={"GIVEN_TO_IT": "1"}))
    openai_server.push({"tool_calls": [call("mcp__probe__environ", {})]}, {"text": "ok"})
    secret = {"OPENAI_API_KEY": "sk-not-for-servers", "MY_KEY": "k", "DEEPSEEK_API_KEY": "d"}
    out = ask(run_cli, openai_server, "--approve", "auto", "--api-key-env", "MY_KEY", env=secret)
    assert out.returncode == 0, out.stderr
    [names] = tool_messages(openai_server, 1)
    assert "GIVEN_TO_IT" in names.split() and "PATH" in names.split()
    assert not {"OPENAI_API_KEY", "MY_KEY", "DEEPSEEK_API_KEY"} & set(names.split())
