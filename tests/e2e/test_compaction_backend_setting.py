"""``compaction.backend`` in the config file: a name no backend has stops ``reefline``
before anything starts, saying what was wrong and which names there are."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Run, session_files


def test_reefline_refuses_an_unknown_backend_before_it_starts(
    run_cli: Run, cli_env: dict[str, str]
) -> None:
    Path(cli_env["REEFLINE_CONFIG"]).write_text('[compaction]\nbackend = "fancy"\n')
    done = run_cli("--demo", "-p", "hello")
    assert done.returncode == 2, done.stderr
    assert "compaction.backend: no compaction backend is named 'fancy'" in done.stderr
    assert "set it to one of: basic" in done.stderr
    assert not session_files(cli_env)  # nothing started
