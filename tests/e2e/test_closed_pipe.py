"""Every command ends quietly when its reader goes away (``reefline timeline --json | head``):
no ``internal error``, nothing on stderr, exit 141 as for a tool SIGPIPE ended."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import REEFLINE, Run, session_files

CLOSED_PIPE = 141


def run_into_closed_pipe(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """Run ``reefline args`` with a stdout whose reader is already gone: the first write
    fails, whatever the timing (a real ``| head`` closes it at some point)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [REEFLINE, *args],
            cwd=cwd,
            env=env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


@pytest.fixture
def session_id(run_cli: Run, cli_env: dict[str, str]) -> str:
    done = run_cli("-p", "explore the README.md", "--demo", "--approve", "auto")
    assert done.returncode == 0, done.stderr
    return session_files(cli_env)[0].stem


@pytest.mark.parametrize(
    "args",
    [
        ["sessions"],
        ["timeline"],
        ["timeline", "--json"],
        ["export"],
        ["fork", "{id}"],
        ["compact", "--demo"],
        ["-p", "explore the README.md", "--demo", "--continue"],
        ["-p", "explore the README.md", "--demo", "--json", "--continue"],
    ],
)
def test_a_closed_stdout_ends_every_command_quietly(
    args: list[str], session_id: str, cli_env: dict[str, str], workdir: Path
) -> None:
    args = [a.replace("{id}", session_id) for a in args]
    code, stderr = run_into_closed_pipe(args, cli_env, workdir)
    assert "internal error" not in stderr
    assert "BrokenPipe" not in stderr and "Exception ignored" not in stderr, stderr
    assert "cannot write the session log" not in stderr, stderr
    assert code == CLOSED_PIPE, (code, stderr)


def test_a_closed_stdout_leaves_the_session_loadable(
    session_id: str, run_cli: Run, cli_env: dict[str, str], workdir: Path
) -> None:
    """The headless run that lost its reader closed its turn: the log goes on."""
    args = ["-p", "explore the README.md", "--demo", "--json", "--continue"]
    assert run_into_closed_pipe(args, cli_env, workdir)[0] == CLOSED_PIPE
    again = run_cli("-p", "now parser.py", "--demo", "--continue")
    assert again.returncode == 0, again.stderr
    assert "repaired" not in again.stderr
