"""The ``edit`` tool through the real CLI against the loopback server: ``-p --approve auto``
writes the edit and records it like a command (its result's files, ``reefline diff``,
export, ``fork --restore-files`` puts the file back); the sandbox's ``read-only`` and the
``deny`` policy refuse it; ``--plain`` on a real terminal (tmux) asks with the coloured diff
of exactly what will be written; the request's fixed cost stays within its budget."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from agent.tokens import Estimator
from tests.e2e.conftest import Run, log_events, session_files
from tests.openai_server import OpenAIServer
from tests.reliability.test_hardening import _wait_screen
from tests.reliability.test_hardening_frontends import send_line, tmux_session

EDIT = {"path": "app.py", "old_string": "y = 2", "new_string": "y = 3"}
FIXED_COST_BUDGET = 800
"""Tokens of a request's system prompt and tool schemas with no MCP server (issue target)."""


def ask_for_edit(server: OpenAIServer, arguments: dict[str, Any] = EDIT) -> None:
    server.push({"tool_calls": [{"name": "edit", "arguments": arguments}]}, {"text": "done"})


def headless(run_cli: Run, server: OpenAIServer, *more: str) -> subprocess.CompletedProcess[str]:
    args = ["-p", "bump y", "--base-url", server.base_url, "--model", "m", "--json", *more]
    out = run_cli(*args)
    assert out.returncode == 0, out.stderr
    return out


def tool_results(out: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return [e["data"] for e in events if e.get("type") == "tool/result"]


def test_headless_auto_edits_and_records_it_like_a_command(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    (workdir / "app.py").write_text("x = 1\ny = 2\n")
    ask_for_edit(openai_server)
    out = headless(run_cli, openai_server, "--approve", "auto")
    assert (workdir / "app.py").read_text() == "x = 1\ny = 3\n"
    [result] = tool_results(out)
    assert not result["is_error"] and result["name"] == "edit"
    assert result["content"] == "Edited app.py: line 2 (+1 −1).\n1 x = 1\n2 y = 3"
    assert result["files"]["changes"] == [
        {"path": "app.py", "kind": "modified", "added": 1, "removed": 1}
    ]
    told = openai_server.requests[-1]["messages"][-1]
    assert told["role"] == "tool" and told["content"].startswith("Edited app.py: line 2")
    [log] = session_files(cli_env)
    diff = run_cli("diff", log.stem)
    assert diff.returncode == 0, diff.stderr
    assert "-y = 2\n+y = 3\n" in diff.stdout and "# seq" in diff.stdout
    assert diff.stdout.splitlines()[0].endswith(" · turn 1 · edit app.py")
    exported = run_cli("export", log.stem)
    assert "1 file changed +1 −1" in exported.stdout and "`M app.py +1 −1`" in exported.stdout
    # Rewind: a fork from before the prompt puts the file back as it was.
    start = next(e["seq"] for e in log_events(log) if e["type"] == "turn/start")
    fork = run_cli("fork", log.stem, "--at", str(start), "--restore-files")
    assert fork.returncode == 0, fork.stderr
    assert (workdir / "app.py").read_text() == "x = 1\ny = 2\n"


def test_headless_creates_a_file_and_refuses_one_outside(
    run_cli: Run, openai_server: OpenAIServer, workdir: Path, tmp_path: Path
) -> None:
    openai_server.push(
        {"tool_calls": [{"name": "edit", "arguments": {
            "path": "docs/new.md", "old_string": "", "new_string": "# New\n"}}]},
        {"tool_calls": [{"name": "edit", "arguments": {
            "path": "../escape.txt", "old_string": "", "new_string": "out\n"}}]},
        {"text": "done"},
    )  # fmt: skip
    out = headless(run_cli, openai_server, "--approve", "auto")
    created, outside = tool_results(out)
    assert not created["is_error"] and (workdir / "docs" / "new.md").read_text() == "# New\n"
    assert created["files"]["changes"][0]["kind"] == "added"
    assert outside["is_error"] and "outside the workspace" in outside["content"]
    assert not (tmp_path / "escape.txt").exists()


def test_read_only_sandbox_and_deny_policy_refuse_the_edit(
    run_cli: Run, openai_server: OpenAIServer, workdir: Path
) -> None:
    (workdir / "app.py").write_text("x = 1\ny = 2\n")
    ask_for_edit(openai_server)
    denied = headless(run_cli, openai_server)  # -p asks no one: deny unless told
    [result] = tool_results(denied)
    assert result["is_error"] and "denies all commands and edits" in result["content"]
    assert "an edit was not made because headless mode denies" in denied.stderr
    ask_for_edit(openai_server)
    sandbox = subprocess.run(["bwrap", "--version"], capture_output=True).returncode == 0
    if sandbox:
        ro = headless(run_cli, openai_server, "--approve", "auto", "--sandbox", "read-only")
        [result] = tool_results(ro)
        assert result["is_error"] and "read-only" in result["content"]
    assert (workdir / "app.py").read_text() == "x = 1\ny = 2\n"


def test_the_fixed_cost_of_a_request_stays_in_budget(
    run_cli: Run, openai_server: OpenAIServer, workdir: Path
) -> None:
    headless(run_cli, openai_server)
    body = openai_server.requests[0]
    names = [t["function"]["name"] for t in body["tools"]]
    assert names == ["bash", "edit"]
    system = next(m["content"] for m in body["messages"] if m["role"] == "system")
    estimator = Estimator("gpt-4.1")
    cost = estimator.system_tokens(system) + estimator.tools_tokens(body["tools"])
    assert cost <= FIXED_COST_BUDGET, cost


def test_plain_asks_with_the_coloured_diff_on_a_terminal(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    (workdir / "app.py").write_text("x = 1\ny = 2\n")
    ask_for_edit(openai_server)
    name = f"plainedit-{os.getpid()}"
    tmux_session(name, cli_env, workdir, "--plain", "--approve", "ask", "--base-url",
                 openai_server.base_url, "--model", "m")  # fmt: skip
    try:
        _wait_screen(name, "/quit leaves")
        send_line(name, "bump y")
        _wait_screen(name, "[always] this session")
        coloured = subprocess.run(
            ["tmux", "capture-pane", "-t", name, "-p", "-e"], capture_output=True, text=True
        ).stdout
        assert "Apply this edit? edit app.py (+1 −1)" in coloured
        assert "\x1b[31m-y = 2" in coloured and "\x1b[32m+y = 3" in coloured
        assert "\x1b[36m@@ -1,2 +1,2 @@" in coloured
        assert (workdir / "app.py").read_text() == "x = 1\ny = 2\n"
        send_line(name, "y")
        _wait_screen(name, "Edited app.py: line 2 (+1 −1).")
        _wait_screen(name, "M app.py +1 −1")
        send_line(name, "/quit")
        _wait_screen(name, "EXITED 0")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    assert (workdir / "app.py").read_text() == "x = 1\ny = 3\n"


def test_the_checkpoint_names_the_edited_file(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """An edit is compacted like any tool result: with the summarizer failing, the
    model-free checkpoint's files section names the edited file (one with no extension its
    text would show), and its work section the call."""
    (workdir / "Makefile").write_text("all:\n\techo old\n")
    openai_server.push(
        {"tool_calls": [{"name": "edit", "arguments": {
            "path": "Makefile", "old_string": "echo old", "new_string": "echo new"}}]},
        {"text": "done"},
    )  # fmt: skip
    openai_server.summarize = True
    openai_server.summary_status = 400  # every summary fails: the model-free one lands
    window = ("--context-window", "3000")
    headless(run_cli, openai_server, "--approve", "auto", *window)
    for n in range(3):  # later turns fill the window: the edit's turn is compacted
        openai_server.push({"text": f"Answer {n}.", "words": 600})
        headless(run_cli, openai_server, "--continue", *window)
    [log] = session_files(cli_env)
    checkpoint = [
        e["data"]["content"]
        for e in log_events(log)
        if e["type"] == "user/message" and e["data"].get("source") == "compact"
    ][-1]
    files = checkpoint.split("## Files and code", 1)[1].split("##", 1)[0]
    assert "Makefile" in files, checkpoint
    assert "`edit Makefile`" in checkpoint


def test_the_status_line_says_an_edit_runs_not_bash(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    from agent.log.session import Session
    from compact.contract.registry import build_registry
    from tui.view.status import StatusFold

    (workdir / "app.py").write_text("x = 1\ny = 2\n")
    ask_for_edit(openai_server)
    headless(run_cli, openai_server, "--approve", "auto")
    [log] = session_files(cli_env)
    home = Path(cli_env["REEFLINE_HOME"])
    session = Session.open(home, log.stem, registry=build_registry(), readonly=True)
    fold, seen = StatusFold(), []
    for event in session.events:  # the status line is a fold of the session's log
        fold.feed(event)
        seen.append((fold.reading.activity, fold.reading.detail))
    session.close()
    assert ("tool", "edit app.py") in seen
    assert not any(activity == "bash" for activity, _ in seen)
