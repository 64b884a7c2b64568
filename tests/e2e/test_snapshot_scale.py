"""The first workspace snapshot of a session, through the real ``reefline -p``: taken in the
background from the session's start and said on stderr while it runs; a command that comes
first waits for it and is recorded right; the shadow repository holds packs, not one loose
object per file.

No timing is assumed: the server holds its first answer until the line is said, and a
``git`` placed first on ``PATH`` holds the snapshot's ``fast-import`` until the test has
seen the command wait (it then runs the real git).
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.e2e.conftest import REEFLINE, log_events, session_files
from tests.git_gate import held_git, opened_at_last
from tests.openai_server import OpenAIServer

LINE_WAIT_S = 60.0  # only how long a failing run takes to fail


def make_tree(root: Path, files: int) -> None:
    for n in range(files):
        folder = root / f"pkg{n // 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{n}.txt").write_text(f"line {n}\n")


@contextmanager
def started(
    args: list[str], cwd: Path, env: dict[str, str], *, plain: bool = False
) -> Iterator[tuple[subprocess.Popen[str], queue.Queue[str | None]]]:
    """``reefline`` running, its stderr lines on a queue (None: it closed); ``plain``: its
    stdout and stderr together, and its stdin a pipe."""
    proc = subprocess.Popen(
        [REEFLINE, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if plain else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if plain else subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        stream = proc.stdout if plain else proc.stderr
        assert stream is not None
        for line in stream:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        yield proc, lines
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def await_line(lines: queue.Queue[str | None], *words: str) -> tuple[str, list[str]]:
    """The first stderr line holding one of ``words``, and every line until it."""
    seen: list[str] = []
    while True:
        try:
            line = lines.get(timeout=LINE_WAIT_S)
        except queue.Empty:
            raise AssertionError(f"no line with {words} in {LINE_WAIT_S}s: {seen}") from None
        assert line is not None, f"stderr closed with no line with {words}: {seen}"
        seen.append(line)
        if any(w in line for w in words):
            return line, seen


def first_result(env: dict[str, str]) -> dict:  # type: ignore[type-arg]
    [log] = session_files(env)
    return next(e for e in log_events(log) if e["type"] == "tool/result")["data"]


def shadow_git(env: dict[str, str], *args: str) -> str:
    [repo] = (Path(env["REEFLINE_HOME"]) / "snapshots").iterdir()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    out = subprocess.run(
        ["git", "--git-dir", str(repo), *args],
        env=clean,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


def prompt_args(server: OpenAIServer) -> list[str]:
    return ["-p", "edit", "--base-url", server.base_url, "--model", "m", "--approve", "auto",
            "--sandbox", "off"]  # fmt: skip


COMMAND = "echo more >> pkg3/f300.txt && echo new > pkg0/new.txt"


def test_headless_says_the_first_snapshot_from_the_start_and_keeps_it_packed(
    openai_server: OpenAIServer, cli_env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "big"
    work.mkdir()
    make_tree(work, 3000)
    answer = threading.Event()
    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": COMMAND}, "id": "a"}],
         "hold": answer},
        {"text": "done"},
    )  # fmt: skip
    with started(prompt_args(openai_server), work, cli_env) as (proc, lines):
        # Said while no command could have run yet: the first answer is still held.
        line, _ = await_line(lines, "recording the workspace", "workspace recorded")
        assert "3,000 files" in line
        answer.set()
        assert proc.wait(timeout=60) == 0
    changes = first_result(cli_env)["files"]["changes"]
    assert {c["path"]: c["kind"] for c in changes} == {
        "pkg3/f300.txt": "modified",
        "pkg0/new.txt": "added",
    }
    counted = dict(
        line.split(": ") for line in shadow_git(cli_env, "count-objects", "-v").splitlines()
    )
    assert int(counted["in-pack"]) >= 3000, counted
    assert int(counted["count"]) < 100, counted  # not one loose object per file


def test_a_command_coming_first_waits_for_the_whole_first_snapshot(
    openai_server: OpenAIServer, cli_env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "big"
    work.mkdir()
    make_tree(work, 1500)
    gate = tmp_path / "gate"
    shim = held_git(tmp_path, gate)
    env = {**cli_env, "PATH": f"{shim}{os.pathsep}{cli_env['PATH']}"}
    openai_server.agent_commands = [COMMAND]
    with opened_at_last(gate), started(prompt_args(openai_server), work, env) as (proc, lines):
        _, seen = await_line(lines, "waits for the workspace record")
        assert any("recording the workspace (1,500 files)" in line for line in seen), seen
        gate.touch()  # the snapshot's fast-import goes on
        assert proc.wait(timeout=60) == 0
    files = first_result(cli_env)["files"]
    assert {c["path"]: c["kind"] for c in files["changes"]} == {
        "pkg3/f300.txt": "modified",
        "pkg0/new.txt": "added",
    }
    before = shadow_git(cli_env, "ls-tree", "-r", "--name-only", files["before"]).split()
    assert len(before) == 1500 and "pkg0/new.txt" not in before


def test_plain_says_the_first_snapshot_while_it_runs(
    openai_server: OpenAIServer, cli_env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "big"
    work.mkdir()
    make_tree(work, 1500)
    gate = tmp_path / "gate"
    env = {**cli_env, "PATH": f"{held_git(tmp_path, gate)}{os.pathsep}{cli_env['PATH']}"}
    args = ["--plain", "--base-url", openai_server.base_url, "--model", "m", "--approve", "auto"]
    with (
        opened_at_last(gate),
        started([*args, "--sandbox", "off"], work, env, plain=True) as (
            proc,
            lines,
        ),
    ):
        await_line(lines, "recording the workspace (1,500 files)")  # held: still running
        gate.touch()
        await_line(lines, "workspace recorded (1,500 files")
        assert proc.stdin is not None
        proc.stdin.write("/quit\n")
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
