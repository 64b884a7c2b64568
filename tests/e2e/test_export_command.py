"""``/export [PATH]`` through the command layer (the real ``reefline -p``): the transcript
``reefline export`` writes, in a new file, never over one that exists, and where it went."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.e2e.conftest import Run, session_files


def _session(run_cli: Run) -> None:
    first = run_cli("--demo", "--approve", "auto", "-p", "explore the README.md")
    assert first.returncode == 0, first.stderr


def test_export_writes_what_reefline_export_writes_and_says_where(
    run_cli: Run, cli_env: dict[str, str], workdir: Path
) -> None:
    _session(run_cli)
    [log] = session_files(cli_env)
    out = run_cli("--demo", "--continue", "-p", "/export")
    assert out.returncode == 0, out.stderr
    written = workdir / f"reefline-{log.stem}.md"
    assert f"to {written}" in out.stdout
    shell = run_cli("export", log.stem)
    assert written.read_text() == shell.stdout
    assert "explore the README.md" in shell.stdout
    assert stat.S_IMODE(written.stat().st_mode) == 0o600

    again = run_cli("--demo", "--continue", "-p", "/export")
    assert again.returncode == 0, again.stderr
    fresh = workdir / f"reefline-{log.stem}-2.md"
    assert f"to {fresh}" in again.stdout and fresh.exists()


def test_export_never_overwrites_a_named_file_and_says_so(run_cli: Run, workdir: Path) -> None:
    _session(run_cli)
    mine = workdir / "notes.md"
    mine.write_text("my notes\n")
    out = run_cli("--demo", "--continue", "-p", "/export notes.md")
    assert out.returncode == 1
    assert "notes.md already exists and is not overwritten" in out.stderr
    assert mine.read_text() == "my notes\n"
    (workdir / "out").mkdir()
    into = run_cli("--demo", "--continue", "-p", "/export out/talk.md")
    assert into.returncode == 0, into.stderr
    assert f"to {workdir / 'out' / 'talk.md'}" in into.stdout
    assert "explore the README.md" in (workdir / "out" / "talk.md").read_text()
    missing = run_cli("--demo", "--continue", "-p", "/export nowhere/talk.md")
    assert missing.returncode == 1
    assert "cannot create" in missing.stderr and "No such file or directory" in missing.stderr
