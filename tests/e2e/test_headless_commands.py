"""``reefline -p /command``: headless runs a slash command through the same command layer as
the app and the REPL, and prints what it shows (the real CLI as a subprocess)."""

from __future__ import annotations

from tests.e2e.conftest import Run, session_files


def test_context_prints_the_rows(run_cli: Run) -> None:
    out = run_cli("--demo", "-p", "/context")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("ctx [")
    for row in ("system prompt", "tool schemas", "window 6,000", "free: ", "sandbox: "):
        assert any(row in line for line in lines), (row, out.stdout)
    assert "session totals (provider-reported)" in out.stdout


def test_an_unknown_command_is_a_usage_error_with_the_closest_one(run_cli: Run) -> None:
    out = run_cli("--demo", "-p", "/compcat")
    assert out.returncode == 2
    assert out.stdout == ""
    assert "Unknown command /compcat — did you mean /compact?" in out.stderr


def test_rewind_leaves_the_fork_saved_and_says_its_id(
    run_cli: Run, cli_env: dict[str, str]
) -> None:
    first = run_cli("--demo", "--approve", "auto", "-p", "explore the README.md")
    assert first.returncode == 0, first.stderr
    [parent] = session_files(cli_env)
    out = run_cli("--demo", "--continue", "-p", "/rewind 1")
    assert out.returncode == 0, out.stderr
    assert "Back before turn 1" in out.stdout and "explore the README.md" in out.stdout
    fork = next(path for path in session_files(cli_env) if path != parent)
    assert (
        f"reefline --resume {fork.stem}" in out.stdout
    )  # the path that runs: see test_sessions_named
    late = run_cli("--demo", "--resume", parent.stem, "-p", "/rewind 9")
    assert late.returncode == 1
    assert "Usage: /rewind N, with N from 1 to 1" in late.stderr


def test_new_names_no_session_it_did_not_keep(run_cli: Run, cli_env: dict[str, str]) -> None:
    """``-p /new`` opens a session nothing happens in: it is discarded, and not offered."""
    out = run_cli("--demo", "-p", "/new")
    assert out.returncode == 0, out.stderr
    assert "--resume" not in out.stdout
    assert session_files(cli_env) == []
