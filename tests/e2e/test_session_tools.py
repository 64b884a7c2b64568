"""``reefline sessions | timeline | compact | export`` on sessions made by the real CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.conftest import REEFLINE, Run, log_events, session_files


def make_compacted_session(run_cli: Run) -> None:
    """Offline demo turns in a small window until automatic compaction has fired."""
    for n in range(8):
        out = run_cli(
            "-p",
            f"what is in this project? round {n}",
            "--demo",
            "--continue",
            "--approve",
            "auto",
            "--context-window",
            "4000",
        )
        assert out.returncode == 0, out.stderr
    # One more round in a window it does not come near, so /compact has something new.
    out = run_cli("-p", "and now?", "--demo", "--continue", "--approve", "auto")
    assert out.returncode == 0, out.stderr


def test_timeline_compact_and_export(run_cli: Run, cli_env: dict[str, str]) -> None:
    make_compacted_session(run_cli)
    [log] = session_files(cli_env)
    kinds = [e["type"] for e in log_events(log)]
    assert "compact/prune" in kinds or "compact/start" in kinds, (
        "nothing compacted: fixture too small"
    )

    table = run_cli("timeline")
    assert table.returncode == 0
    assert "trigger" in table.stdout and "done" in table.stdout

    records = json.loads(run_cli("timeline", "--json").stdout)
    assert records and all(r["status"] == "done" for r in records)
    before = len(records)

    out = run_cli("compact", "--focus", "the parser", "--demo", "--context-window", "4000")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Compacted ") and "tokens" in out.stdout
    # Right after a checkpoint there is nothing new: said so, exit 0, no timeline record.
    again = run_cli("compact", "--demo", "--context-window", "4000")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "Nothing new to compact since the last checkpoint."

    records = json.loads(run_cli("timeline", log.stem, "--json").stdout)
    assert len(records) == before + 1
    assert records[-1]["trigger"] == "manual" and records[-1]["focus"] == "the parser"
    assert records[-1]["calls"] >= 1 and records[-1]["chunks"] >= 1

    export = run_cli("export")
    assert export.returncode == 0
    assert "context compacted" in export.stdout
    # Rendered from the log: the first request shows once as the user's message even though
    # it was compacted away from the model's view (checkpoint summaries may quote it).
    assert export.stdout.count("**You**\n\nwhat is in this project? round 0\n") == 1

    listing = run_cli("sessions")
    assert log.stem in listing.stdout and "what is in this project? round 0" in listing.stdout


def test_session_tools_with_no_or_bad_sessions(run_cli: Run) -> None:
    out = run_cli("timeline")
    assert out.returncode == 2 and "no sessions" in out.stderr
    out = run_cli("timeline", "../../etc")
    assert out.returncode == 2 and "invalid session id" in out.stderr
    out = run_cli("export", "20990101-000000-aaaaaa")
    assert out.returncode == 2 and "no session" in out.stderr
    out = run_cli("sessions")
    assert out.returncode == 0 and "No sessions" in out.stdout


def test_nothing_to_compact_yet(run_cli: Run) -> None:
    assert run_cli("-p", "hi", "--demo").returncode == 0
    out = run_cli("compact", "--demo")
    assert out.returncode == 0
    assert out.stdout.strip() == "Nothing to compact yet."


def _imported(stderr: str) -> set[str]:
    """Top-level packages a process imported, from its ``PYTHONPROFILEIMPORTTIME`` lines."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def test_the_session_tools_start_without_the_heavy_libraries(
    run_cli: Run, cli_env: dict[str, str]
) -> None:
    """``--version`` and ``sessions`` load neither the model SDK, the terminal library, the
    tokenizer nor the settings' validation; ``timeline`` and ``export`` read the log (which
    needs pydantic) but load no SDK and no terminal library."""
    assert run_cli("-p", "hi", "--demo").returncode == 0
    model_and_screen = {"openai", "httpx", "textual", "tiktoken"}
    for args, forbidden in (
        (["--version"], model_and_screen | {"pydantic", "pydantic_settings"}),
        (["sessions"], model_and_screen | {"pydantic", "pydantic_settings"}),
        (["timeline"], model_and_screen),
        (["export"], model_and_screen),
    ):
        out = run_cli(*args, env={"PYTHONPROFILEIMPORTTIME": "1"})
        assert out.returncode == 0, (args, out.stderr[-2000:])
        imported = _imported(out.stderr)
        assert "tui" in imported, "no import trace: the check would pass vacuously"
        assert not imported & forbidden, (args, sorted(imported & forbidden))


def test_the_offline_demo_starts_without_the_model_sdk(run_cli: Run) -> None:
    """``--demo`` talks to no server: neither the SDK nor the HTTP client is loaded."""
    out = run_cli("-p", "hi", "--demo", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    imported = _imported(out.stderr)
    assert {"tui", "agent", "tiktoken"} <= imported  # the trace is there, the run was real
    assert not imported & {"openai", "httpx2", "httpcore2", "textual"}, sorted(imported)


def test_sessions_finds_the_home_the_config_file_names(
    run_cli: Run, cli_env: dict[str, str], tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    Path(cli_env["REEFLINE_CONFIG"]).write_text(f"home = {str(elsewhere)!r}\n")
    without_home = {k: v for k, v in cli_env.items() if k != "REEFLINE_HOME"}
    made = subprocess.run(
        [REEFLINE, "-p", "from the configured home", "--demo"],
        env=without_home, capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    listing = subprocess.run(
        [REEFLINE, "sessions"],
        env=without_home, capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert "from the configured home" in listing.stdout, listing.stdout
    Path(cli_env["REEFLINE_CONFIG"]).write_text("home = 3\n")
    bad = subprocess.run(
        [REEFLINE, "sessions"], env=without_home, capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2 and "`home`" in bad.stderr and "Traceback" not in bad.stderr
