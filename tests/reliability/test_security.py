"""Security: the API key stays out of every file and output, private permissions, and no
bash command runs without consent (headless default ``deny``; ``ask`` with nobody to ask).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer
from tests.reliability.conftest import REEFLINE, log_events, only_session
from tools.bash import NOT_RUN, BashTool

KEY = "sk-reefline-SECRET-7c1f0e9a4b"
UMASK_0 = "import os, sys; os.umask(0); os.execv(sys.argv[1], sys.argv[1:])"


def call(command: str, call_id: str) -> dict:
    return {"id": call_id, "name": "bash", "arguments": {"command": command}}


class Runs:
    """Every CLI run of a test, with its output kept for the final grep."""

    def __init__(self, server: OpenAIServer, env: dict[str, str], cwd: Path) -> None:
        self.server = server
        # The conventional pair: the key goes to the server OPENAI_BASE_URL names.
        self.env = {**env, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url}
        self.cwd = cwd
        self.outputs: list[str] = []

    def __call__(self, *args: str, umask0: bool = True) -> subprocess.CompletedProcess[str]:
        command = [REEFLINE, *args]
        if umask0:  # the most permissive umask: only our explicit modes protect the files
            command = [sys.executable, "-c", UMASK_0, *command]
        out = subprocess.run(
            command, cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=60
        )
        self.outputs += [out.stdout, out.stderr]
        return out

    def model(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self("-p", *args, "--base-url", self.server.base_url, "--model", "m")


@pytest.fixture
def runs(openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path) -> Runs:
    return Runs(openai_server, cli_env, workdir)


def test_the_api_key_never_reaches_a_file_or_an_output(
    runs: Runs, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    server = openai_server
    server.summarize = True
    server.push(
        # A provider that echoes the key back in its error (some do, in "invalid key" errors).
        {"status": 429, "message": f"upstream rejected key {KEY}", "retry_after": "0"},
        # A model (or a prompt injection) asking for the environment, and a spilled output.
        {"tool_calls": [call("env; echo key=$OPENAI_API_KEY; printenv | grep -c API_KEY", "e"),
                        call("seq 1 30000", "big")]},
        {"text": "done"},
    )  # fmt: skip
    out = runs.model("look around", "--json", "--approve", "auto", "--context-window", "4000")
    assert out.returncode == 0, out.stderr
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"  # the key was really in use
    events = log_events(only_session(cli_env))
    result = next(e for e in events if e["type"] == "tool/result")["data"]
    assert "key=\n" in result["content"]  # the command ran, without the key in its environment
    # A torn tail, so that a side file exists too.
    log = only_session(cli_env)
    with open(log, "ab") as f:
        f.write(b'{"seq": 999, "type": "turn/st')
    assert runs.model("after a crash", "--continue", "--json").returncode == 0
    # A manual compaction: its summary request carries the whole history.
    assert runs("compact", "--base-url", server.base_url, "--model", "m").returncode == 0
    for sub in (["timeline", "--json"], ["export"], ["sessions"]):
        assert runs(*sub).returncode == 0

    home = Path(cli_env["REEFLINE_HOME"])
    kinds = {e["type"] for e in log_events(log)}
    assert {"llm/retry", "compact/summary"} <= kinds
    files = [p for p in home.rglob("*") if p.is_file()]
    assert any(".spill" in str(p) for p in files) and any(".torn-" in p.name for p in files)
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
    for text in runs.outputs:
        assert KEY not in text
    # Nothing the model was sent carries it either (the provider echo was redacted).
    for body in server.requests:
        assert KEY not in json.dumps(body)


def test_files_are_0600_and_folders_0700_even_with_umask_0(
    runs: Runs, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.push({"tool_calls": [call("seq 1 50000", "big")]}, {"text": "spilled"})
    assert runs.model("spill", "--approve", "auto").returncode == 0
    log = only_session(cli_env)
    with open(log, "ab") as f:
        f.write(b'{"torn')
    assert runs.model("again", "--continue").returncode == 0
    home = Path(cli_env["REEFLINE_HOME"])
    seen = {"file": 0, "dir": 0}
    for path in [home, *home.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if path.is_dir():
            seen["dir"] += 1
            assert mode == 0o700, (path, oct(mode))
        else:
            seen["file"] += 1
            # git keeps the snapshots' objects read-only: private all the same.
            private = (0o600, 0o400) if "snapshots" in path.parts else (0o600,)
            assert mode in private, (path, oct(mode))
    assert seen["dir"] >= 3 and seen["file"] >= 3  # home, sessions, spill; log, spill, torn


def test_headless_default_is_deny_whatever_the_model_sends(
    runs: Runs, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    openai_server.push(
        {"tool_calls": [call("touch made-1", "a"),
                        {"id": "b", "name": "bash",
                         "arguments": {"command": "touch made-2", "approve": "auto"}},
                        call("touch made-3; rm -rf ./*", "c")]},
        {"tool_calls": [call("touch made-4", "d")]},
        {"text": "gave up"},
    )  # fmt: skip
    out = runs.model("make files", "--json")
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in workdir.iterdir()) == ["README.md", "parser.py"]
    results = [e["data"] for e in log_events(only_session(cli_env)) if e["type"] == "tool/result"]
    assert len(results) == 4
    assert all(r["is_error"] and r["content"].startswith(NOT_RUN) for r in results)
    assert "--approve auto" in out.stderr  # the user is told how to allow commands


def test_ask_with_nobody_to_ask_runs_nothing(
    runs: Runs, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    openai_server.push(
        {"tool_calls": [call("touch asked", "a"), call("echo hi > asked2", "b")]},
        {"text": "nothing ran"},
    )
    runs.env["REEFLINE_APPROVE"] = "ask"
    out = runs.model("make a file")
    assert out.returncode == 0, out.stderr
    assert not (workdir / "asked").exists() and not (workdir / "asked2").exists()
    results = [e["data"] for e in log_events(only_session(cli_env)) if e["type"] == "tool/result"]
    assert all(r["content"].startswith(NOT_RUN) and "approval" in r["content"] for r in results)


async def test_bash_tool_in_ask_mode_without_an_approver_runs_nothing(tmp_path: Path) -> None:
    tool = BashTool(cwd=tmp_path, spill_dir=tmp_path / "spill", policy="ask", approver=None)
    for arguments in (
        {"command": "touch created"},
        {"command": "touch created", "timeout": 5},
        {"command": "touch created", "policy": "auto", "approve": "always"},
    ):
        out = await tool.run(arguments)
        assert out.is_error and out.content.startswith(NOT_RUN) and out.exit_code is None
    assert tool.policy == "ask"
    assert not (tmp_path / "created").exists()
    assert not (tmp_path / "spill").exists()  # not even the output folder was made


async def test_bash_children_do_not_inherit_api_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "REEFLINE_API_KEY", "MY_KEY_VAR"):
        monkeypatch.setenv(name, KEY)
    tool = BashTool(
        cwd=tmp_path, spill_dir=tmp_path / "s", policy="auto", hidden_env=["MY_KEY_VAR"]
    )
    out = await tool.run({"command": "env"})
    assert KEY not in out.content
    assert "PATH=" in out.content  # the rest of the environment is there
    assert os.environ["OPENAI_API_KEY"] == KEY  # the agent's own environment is untouched
