"""The sandbox end to end: the real ``reefline`` process, a loopback server, real bash under
real bubblewrap; and a machine without bubblewrap (a PATH that has bash and no ``bwrap``)."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.openai_server import OpenAIServer


@pytest.fixture
def no_bwrap(tmp_path: Path) -> dict[str, str]:
    """A PATH with bash and the few commands the offline demo runs, and no bubblewrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("bash", "ls", "cat", "head", "wc", "grep", "find", "sed", "true"):
        found = subprocess.run(["which", name], capture_output=True, text=True).stdout.strip()
        if found:
            (bin_dir / name).symlink_to(found)
    return {"PATH": str(bin_dir)}


def bash_call(command: str, call_id: str) -> dict:
    return {"id": call_id, "name": "bash", "arguments": {"command": command}}


def tool_results(env: dict[str, str]) -> list[dict]:
    [log] = session_files(env)
    return [e["data"] for e in log_events(log) if e["type"] == "tool/result"]


def test_auto_commands_run_sandboxed_by_default(
    bwrap: str,
    run_cli: Run,
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    workdir: Path,
    tmp_path: Path,
) -> None:
    """``--approve auto`` alone: a command cannot read reefline's environment from /proc,
    cannot write beside the project, cannot reach the model's server; the log says how
    each one ran. ``--sandbox off`` runs the same commands unconfined."""
    canary = "canary-" + uuid.uuid4().hex
    commands = [
        "cat /proc/[0-9]*/environ | tr '\\0' '\\n' | grep -c canary- ; echo looked",
        f"echo made > {tmp_path / 'beside.txt'}; echo made > inside.txt",
        f"echo > /dev/tcp/127.0.0.1/{openai_server.port} && echo connected",
    ]
    flags = ["--base-url", openai_server.base_url, "--model", "m", "--approve", "auto"]
    beside = tmp_path / "beside.txt"
    for extra in ([], ["--sandbox", "off"]):
        openai_server.push(
            {"tool_calls": [bash_call(c, f"c{i}") for i, c in enumerate(commands)]},
            {"text": "done"},
        )
        out = run_cli("-p", "look", *flags, *extra, env={"REEFLINE_E2E_CANARY": canary})
        assert out.returncode == 0, out.stderr
        assert "No sandbox" not in out.stderr
        assert beside.exists() == bool(extra)  # only the unconfined run wrote beside
    runs = [
        [e["data"] for e in log_events(log) if e["type"] == "tool/result"]
        for log in session_files(cli_env)
    ]
    # Listed by name, which is the second they started in and a random part: any order.
    confined, free = sorted(runs, key=lambda results: results[0]["sandbox"] == "off")
    assert [r["sandbox"] for r in confined] == ["workspace-write"] * 3
    assert [r["sandbox"] for r in free] == ["off"] * 3
    assert confined[0]["content"].startswith("0\nlooked")
    assert canary not in confined[0]["content"]
    assert not free[0]["content"].startswith("0\n")  # unconfined, reefline's environ is read
    assert (workdir / "inside.txt").exists()
    assert "connected" not in confined[2]["content"]
    assert "--sandbox-network" in confined[2]["content"]  # the model is told why
    assert "connected" in free[2]["content"]


def test_sandbox_network_lets_a_command_reach_the_network(
    bwrap: str, run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    connect = f"echo > /dev/tcp/127.0.0.1/{openai_server.port} && echo connected"
    openai_server.push({"tool_calls": [bash_call(connect, "c")]}, {"text": "done"})
    out = run_cli(
        "-p", "reach it", "--base-url", openai_server.base_url, "--model", "m",
        "--sandbox", "read-only", "--sandbox-network", "--approve", "auto",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    [result] = tool_results(cli_env)
    assert result["sandbox"] == "read-only"
    assert "connected" in result["content"]
    exported = run_cli("export")
    assert exported.returncode == 0 and "sandbox read-only" in exported.stdout


@pytest.mark.parametrize("how", ["flag", "env", "config"])
def test_asking_for_a_sandbox_where_there_is_none_is_an_error(
    run_cli: Run, no_bwrap: dict[str, str], cli_env: dict[str, str], how: str
) -> None:
    env = dict(no_bwrap)
    args = ["-p", "hi", "--approve", "auto"]
    if how == "flag":
        args += ["--sandbox", "workspace-write"]
    elif how == "env":
        env["REEFLINE_SANDBOX"] = "workspace-write"
    else:
        Path(cli_env["REEFLINE_CONFIG"]).write_text('sandbox = "workspace-write"\n')
    out = run_cli(*args, env=env)
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    said = out.stderr
    assert "`workspace-write`" in said and "no sandbox can be had here" in said
    assert "bubblewrap is not installed (no `bwrap` on PATH)" in said
    assert "install bubblewrap" in said and "--sandbox off" in said
    assert session_files(cli_env) == []  # nothing ran, no session was made


def test_without_a_sandbox_reefline_says_so_once_and_runs_unconfined(
    run_cli: Run, no_bwrap: dict[str, str], cli_env: dict[str, str]
) -> None:
    out = run_cli("-p", "what is here?", "--approve", "auto", env=no_bwrap)
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("No sandbox: bubblewrap is not installed") == 1
    assert {r["sandbox"] for r in tool_results(cli_env)} == {"off"}
    # Chosen off, it is not news.
    out = run_cli("-p", "again", "--sandbox", "off", env=no_bwrap)
    assert out.returncode == 0 and "No sandbox" not in out.stderr


def test_plain_says_it_at_start_and_in_context(
    cli_env: dict[str, str], no_bwrap: dict[str, str], workdir: Path
) -> None:
    out = subprocess.run(
        [REEFLINE, "--plain"],
        input="/context\n/quit\n",
        cwd=workdir,
        env={**cli_env, **no_bwrap},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("! No sandbox: bubblewrap is not installed") == 1
    assert "Commands run unsandboxed; /context says more." in out.stdout
    assert "  sandbox: off: no sandbox here — bubblewrap is not installed" in out.stdout


def test_a_bad_sandbox_value_says_what_is_allowed(run_cli: Run) -> None:
    out = run_cli("-p", "hi", "--sandbox", "full")
    assert out.returncode == 2
    assert "invalid choice: 'full'" in out.stderr and "workspace-write" in out.stderr
    out = run_cli("-p", "hi", env={"REEFLINE_SANDBOX": "full"})
    assert out.returncode == 2
    assert "sandbox" in out.stderr and "'workspace-write'" in out.stderr
