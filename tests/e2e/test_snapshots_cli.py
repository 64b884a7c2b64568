"""Snapshots through the real CLI against the loopback server: a command's changed files
are on its logged result and in ``--json``, ``reefline diff`` prints the patch, export
names the files, a resumed session goes on recording, and ``reefline fork --restore-files``
puts the files back as they were before the chosen prompt."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.openai_server import OpenAIServer


def turn(run_cli: Run, server: OpenAIServer, prompt: str, command: str, *more: str):  # type: ignore[no-untyped-def]
    server.agent_commands = [command]
    args = ["-p", prompt, "--base-url", server.base_url, "--model", "m", "--approve", "auto"]
    out = run_cli(*args, "--sandbox", "off", *more)
    assert out.returncode == 0, out.stderr
    return out


def test_diff_export_and_fork_with_files(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    (workdir / "app.py").write_text("x = 1\ny = 2\n")
    first = turn(
        run_cli,
        openai_server,
        "edit",
        "sed -i 's/y = 2/y = 3/' app.py && echo new > new.txt",
        "--json",
    )
    streamed = [json.loads(line) for line in first.stdout.splitlines() if line.startswith("{")]
    results = [e for e in streamed if e.get("type") == "tool/result"]
    assert results, first.stdout
    changes = results[0]["data"]["files"]["changes"]
    assert {c["path"]: (c["added"], c["removed"]) for c in changes} == {
        "app.py": (1, 1),
        "new.txt": (1, 0),
    }
    # A second prompt in the resumed session: its command is recorded too.
    turn(run_cli, openai_server, "more", "echo z = 9 >> app.py && rm new.txt", "--continue")
    [log] = session_files(cli_env)
    events = log_events(log)
    recorded = [e["data"]["files"] for e in events if e["type"] == "tool/result"]
    assert [sorted(c["path"] for c in f["changes"]) for f in recorded] == [
        ["app.py", "new.txt"],
        ["app.py", "new.txt"],
    ]
    session_id = log.stem
    diff = run_cli("diff", session_id)
    assert diff.returncode == 0, diff.stderr
    assert "-y = 2\n+y = 3\n" in diff.stdout and "+z = 9" in diff.stdout
    headers = [line for line in diff.stdout.splitlines() if line.startswith("# seq")]
    assert [h.split(" · ", 2)[2] for h in headers] == [  # the commands, not their JSON
        "sed -i 's/y = 2/y = 3/' app.py && echo new > new.txt",
        "echo z = 9 >> app.py && rm new.txt",
    ]
    second_turn = run_cli("diff", session_id, "--turn", "2")
    assert "+z = 9" in second_turn.stdout and "+y = 3" not in second_turn.stdout
    exported = run_cli("export", session_id)
    assert "2 files changed +2 −1" in exported.stdout and "`M app.py +1 −1`" in exported.stdout
    # The user edits a file the second command did not touch; fork before prompt 2.
    (workdir / "mine.txt").write_text("the user's\n")
    start = next(e["seq"] for e in events if e["type"] == "turn/start" and e["data"]["turn"] == 2)
    fork = run_cli("fork", session_id, "--at", str(start), "--restore-files")
    assert fork.returncode == 0, fork.stderr
    assert (workdir / "app.py").read_text() == "x = 1\ny = 3\n"
    assert (workdir / "new.txt").read_text() == "new\n"
    assert (workdir / "mine.txt").read_text() == "the user's\n"
    assert "Put back 2 file(s)" in fork.stderr
    new_log = next(p for p in session_files(cli_env) if p.stem == fork.stdout.strip())
    restores = [e for e in log_events(new_log) if e["type"] == "files/restore"]
    assert sorted(restores[0]["data"]["restored"]) == ["app.py", "new.txt"]


def test_plain_prints_the_changed_files_and_diff_shows_the_patch(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    (workdir / "notes.txt").write_text("one\n")
    openai_server.agent_commands = ["printf 'two\\n\\033[31mred\\n' >> notes.txt"]
    args = ["--plain", "--base-url", openai_server.base_url, "--model", "m"]
    out = subprocess.run(
        [REEFLINE, *args, "--approve", "auto", "--sandbox", "off"],
        cwd=workdir,
        env=cli_env,
        input="add a line\n/diff\n/quit\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "1 file changed +2 −0 (/diff shows it)" in out.stdout
    assert "M notes.txt +2 −0" in out.stdout
    assert "+two" in out.stdout
    assert "\033[31m" not in out.stdout  # the file's escape is shown, never obeyed
