"""Config mistakes through the real ``reefline``: every error in one round, each with the
nearest right name, and settings that contradict each other refused before anything starts."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Run, session_files


def test_every_config_error_comes_at_once_with_suggestions(
    run_cli: Run, cli_env: dict[str, str]
) -> None:
    config = Path(cli_env["REEFLINE_CONFIG"])
    config.write_text(
        'max_step = 3\napprove = "sometimes"\n'
        "[compaction]\nthreshold_ratio = 0.5\nretain_ratio = 0.6\nthresold_tokens = 9000\n"
    )
    out = run_cli("-p", "hello", "--demo", "--context-window", "-3")
    assert out.returncode == 2, out.stderr
    lines = out.stderr.splitlines()
    said = "\n".join(lines)
    # One round: the top-level keys, the flag and the [compaction] table, each on its line.
    assert any(str(config) in line and "`max_step`" in line for line in lines), said
    assert "did you mean `max_steps`?" in said, said
    assert any("`approve`" in line and "'ask'" in line for line in lines), said
    assert any(line.startswith("--context-window -3") for line in lines), said
    assert "compaction.thresold_tokens" in said and "did you mean `threshold_tokens`?" in said
    # The rule between keys is checked although another key of the table is wrong.
    assert "retain_ratio (0.6) must be below threshold_ratio (0.5)" in said, said
    assert not session_files(cli_env)  # nothing started


def test_a_mistyped_flag_gets_the_flag_it_meant(run_cli: Run, cli_env: dict[str, str]) -> None:
    out = run_cli("-p", "hello", "--demo", "--modle", "gpt-4.1")
    assert out.returncode == 2
    assert "--modle: did you mean --model?" in out.stderr, out.stderr
    assert not session_files(cli_env)


def test_an_output_cap_that_fills_the_window_is_refused(
    run_cli: Run, cli_env: dict[str, str]
) -> None:
    config = Path(cli_env["REEFLINE_CONFIG"])
    config.write_text("max_output_tokens = 8192\n[context_windows]\nqwen = 0\n")
    out = run_cli("-p", "hello", "--demo", "--context-window", "4096")
    assert out.returncode == 2, out.stderr
    assert "max_output_tokens (8192) must be below context_window (4096)" in out.stderr
    assert "context_windows.qwen" in out.stderr, out.stderr
    assert not session_files(cli_env)
