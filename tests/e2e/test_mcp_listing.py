"""``reefline mcp`` and ``/mcp`` (through ``--plain``), a config that is wrong, and a server
named in the notices of ``--plain``: the real CLI against the real ``mcp-server-time``."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.e2e.conftest import REEFLINE, Run
from tests.e2e.test_mcp_headless import call, configure
from tests.mcp.servers import GIT, TIME, fault, toml_table
from tests.openai_server import OpenAIServer


def test_reefline_mcp_lists_servers_states_tools_and_costs(
    run_cli: Run, cli_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    configure(
        cli_env,
        toml_table("time", TIME, []),
        toml_table("git", GIT, ["--repository", str(workdir)]),
        toml_table("broken", str(tmp_path / "nothing-here"), []),
        toml_table("off", TIME, [], enabled=False),
    )
    out = run_cli("mcp")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    time_line = next(line for line in lines if line.startswith("time · "))
    assert (
        "ready · stdio" in time_line and "2 tools" in time_line and "tokens of schemas" in time_line
    )
    assert any(line.startswith("  mcp__time__get_current_time  ") for line in lines)
    assert any(line.startswith("  mcp__git__git_status  ") for line in lines)
    assert any(line.startswith("broken · failed") for line in lines)
    assert any(line.startswith("off · disabled") for line in lines)
    assert "Schemas sent whole" in out.stdout or "Schemas deferred" in out.stdout


def test_a_wrong_server_table_names_the_server_and_the_field(
    run_cli: Run, cli_env: dict[str, str]
) -> None:
    configure(
        cli_env,
        '[mcp_servers.time]\ncomand = "mcp-server-time"\n',
        '[mcp_servers.web]\nurl = "http://127.0.0.1:1/mcp"\nargs = ["x"]\n',
        '[mcp_servers.slow]\ncommand = "x"\nstartup_timeout_s = "soon"\n',
    )
    out = run_cli("-p", "hi", "--demo")
    assert out.returncode == 2
    err = out.stderr
    assert (
        "key `mcp_servers.time.comand`: not a field of an MCP server (did you mean `command`?)"
        in err
    )
    assert "key `mcp_servers.web`: `args` is for a server with `command`, not `url`" in err
    assert "key `mcp_servers.slow.startup_timeout_s`" in err
    assert run_cli("mcp").returncode == 2


def test_plain_names_a_dead_server_once_and_lists_the_servers(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    configure(
        cli_env,
        toml_table("time", TIME, []),
        fault("crashy", "crash"),
        toml_table("broken", str(tmp_path / "nothing-here"), []),
    )
    openai_server.push(
        {"tool_calls": [call("mcp__time__get_current_time", {"timezone": "UTC"})]},
        {"tool_calls": [call("mcp__crashy__crash", {}, "c2")]},
        {"text": "the time is known"},
    )
    proc = subprocess.run(
        [REEFLINE, "--plain", "--approve", "auto", "--base-url", openai_server.base_url,
         "--model", "m", "--context-window", "100000"],
        input="what time is it?\n/mcp\n/quit\n", capture_output=True, text=True,
        cwd=workdir, env=cli_env, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "the time is known" in out
    assert out.count("MCP server `crashy` failed") == 1, out
    assert out.count("MCP server `broken` failed") == 1, out
    assert "time · ready · stdio" in out and "mcp__time__convert_time" in out
    assert "crashy · failed" in out and "broken · failed" in out


def test_what_a_server_lists_is_shown_sanitized_and_bad_names_are_left_out(
    run_cli: Run, cli_env: dict[str, str]
) -> None:
    configure(cli_env, fault("esc", "escape"))
    out = run_cli("mcp")
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout
    assert "mcp__esc__escape" in out.stdout and "\\x1b[2J" in out.stdout
    assert "not offered (a name a model API refuses): 'get time\\x1b[31m'" in out.stdout


def test_headless_mcp_command_lists_the_servers_as_they_stand(
    run_cli: Run, cli_env: dict[str, str]
) -> None:
    configure(cli_env, toml_table("time", TIME, []), toml_table("off", TIME, [], enabled=False))
    out = run_cli("--demo", "-p", "/mcp")
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith(("time · starting · stdio", "time · ready · stdio")), out.stdout
    assert "off · disabled · stdio" in out.stdout
