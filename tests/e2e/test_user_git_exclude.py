"""The first snapshot reads the user's ``.git/info/exclude`` only as a regular file reached
without a link, within a size limit, through the real ``reefline -p`` (its command makes the
snapshot be taken): a FIFO does not hang it, a link to ``/dev/zero`` does not exhaust its
memory, a link to a private file outside does not copy that file into the shadow
repository."""

from __future__ import annotations

import os
import resource
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.e2e.conftest import REEFLINE, log_events, session_files
from tests.openai_server import OpenAIServer

MEMORY_CAP = 2 << 30
"""The address space reefline runs with here: reading ``/dev/zero`` whole fails in seconds
instead of filling the machine's memory."""


def snapshotting_run(
    server: OpenAIServer, env: dict[str, str], cwd: Path, command: str = "echo recorded > out.txt"
) -> subprocess.CompletedProcess[str]:
    """One ``-p`` turn that runs ``command`` (so a snapshot is taken), ended for sure within
    a generous minute (killed then: a reefline that hangs fails the test, never blocks it)."""
    server.agent_commands = [command]

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    args = ["-p", "run it", "--base-url", server.base_url, "--model", "m"]
    try:
        return subprocess.run(
            [REEFLINE, *args, "--approve", "auto", "--sandbox", "off"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=capped,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("reefline did not end within a minute (it hung reading .git/info/exclude)")


def recorded_files(env: dict[str, str]) -> list[str]:
    [log] = session_files(env)
    results = [e["data"] for e in log_events(log) if e["type"] == "tool/result"]
    return [c["path"] for r in results for c in (r.get("files") or {}).get("changes", [])]


def shadow_text(env: dict[str, str]) -> str:
    """Everything the shadow repository holds as text: its exclude file and every object."""
    [shadow] = (Path(env["REEFLINE_HOME"]) / "snapshots").iterdir()
    objects = subprocess.run(
        ["git", "--git-dir", str(shadow), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout
    return (shadow / "info" / "exclude").read_text() + objects.decode(errors="replace")


def test_exclude_as_a_fifo_neither_hangs_nor_stops_the_snapshots(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    (workdir / ".git" / "info").mkdir(parents=True)
    os.mkfifo(workdir / ".git" / "info" / "exclude")
    out = snapshotting_run(openai_server, cli_env, workdir)
    assert out.returncode == 0, out.stderr
    assert recorded_files(cli_env) == ["out.txt"]


def test_exclude_linked_to_dev_zero_is_not_read(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    (workdir / ".git" / "info").mkdir(parents=True)
    (workdir / ".git" / "info" / "exclude").symlink_to("/dev/zero")
    out = snapshotting_run(openai_server, cli_env, workdir)
    assert out.returncode == 0, out.stderr
    assert "MemoryError" not in out.stderr
    assert recorded_files(cli_env) == ["out.txt"]


@pytest.mark.parametrize("linked", ["exclude", "info", ".git"])
def test_a_private_file_linked_from_the_exclude_path_stays_out_of_the_shadow_repo(
    linked: str,
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    workdir: Path,
    tmp_path: Path,
) -> None:
    """``.git/info/exclude`` a link to the file, or ``.git/info`` or ``.git`` a link to a
    folder holding it: no component is followed."""
    secret = "secret-" + uuid.uuid4().hex
    private = tmp_path / "private" / ".git" / "info"
    private.mkdir(parents=True)
    (private / "exclude").write_text(f"{secret}\n")
    there = {
        "exclude": (workdir / ".git" / "info" / "exclude", private / "exclude"),
        "info": (workdir / ".git" / "info", private),
        ".git": (workdir / ".git", private.parent),
    }
    link, target = there[linked]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    out = snapshotting_run(openai_server, cli_env, workdir)
    assert out.returncode == 0, out.stderr
    assert secret not in shadow_text(cli_env)


def test_a_regular_exclude_file_still_leaves_its_patterns_out(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    (workdir / ".git" / "info").mkdir(parents=True)
    (workdir / ".git" / "info" / "exclude").write_text("*.log\n")
    (workdir / "build.log").write_text("noise\n")
    command = "echo more >> build.log; echo recorded > out.txt"
    out = snapshotting_run(openai_server, cli_env, workdir, command)
    assert out.returncode == 0, out.stderr
    assert recorded_files(cli_env) == ["out.txt"]
