"""The plain REPL as a real subprocess: leaving says how to go on, resuming shows where the
conversation stood, and a fork is listed as a fork of its parent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.tui.test_repl import plain_env

REEFLINE = str(Path(sys.executable).with_name("reefline"))


def repl(env: dict[str, str], cwd: Path, stdin: str, *args: str) -> str:
    done = subprocess.run(
        [REEFLINE, "--plain", "--demo", "--approve", "auto", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_leaving_says_how_to_go_on_and_resuming_shows_the_last_entries(
    tmp_path: Path, workdir: Path
) -> None:
    env = plain_env(tmp_path)
    out = repl(env, workdir, "explore the README.md\n")
    [log] = (tmp_path / "home" / "sessions").glob("*.jsonl")
    assert out.rstrip().endswith(f"reefline --resume {log.stem}"), out[-400:]
    repl(env, workdir, "how many lines has each file?\n", "--resume", log.stem)

    again = repl(env, workdir, "/quit\n", "--resume", log.stem)
    recap = again[again.index("Earlier in this session") :]
    assert recap.startswith("Earlier in this session (the last 6 of "), recap[:200]
    # The newest entries: the second prompt, its commands and its answer, in order.
    assert "› how many lines has each file?" in recap, recap
    assert recap.index("› how many") < recap.index("Here are the sizes"), recap
    assert "end of the earlier entries" in recap
    assert again.rstrip().endswith(f"reefline --resume {log.stem}")


def test_a_fork_is_listed_with_its_parent(tmp_path: Path, workdir: Path) -> None:
    env = plain_env(tmp_path)
    repl(env, workdir, "explore the README.md\n")
    [log] = (tmp_path / "home" / "sessions").glob("*.jsonl")
    repl(env, workdir, "now the parser\n", "--resume", log.stem)
    points = subprocess.run(
        [REEFLINE, "fork", log.stem], capture_output=True, text=True, env=env, timeout=60
    )
    at = points.stdout.splitlines()[1].split()[0]
    forked = subprocess.run(
        [REEFLINE, "fork", log.stem, "--at", at],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    child = forked.stdout.strip()
    listing = subprocess.run(
        [REEFLINE, "sessions"], capture_output=True, text=True, env=env, timeout=60, cwd=workdir
    ).stdout
    rows = listing.splitlines()
    # Each session's block: its line of facts, then what was asked (indented).
    [child_row] = [rows[n + 1] for n, row in enumerate(rows) if row.strip().startswith(child)]
    [parent_row] = [rows[n + 1] for n, row in enumerate(rows) if row.strip().startswith(log.stem)]
    assert f"fork of {log.stem}: explore the README.md" in child_row, listing
    assert "fork of" not in parent_row, listing
    start = json.loads((log.parent / f"{child}.jsonl").read_text().splitlines()[0])
    assert start["data"]["forked_from"] == log.stem
    # The REPL's /sessions lists it the same way.
    out = repl(env, workdir, "/sessions\n/quit\n", "--resume", child)
    assert f"fork of {log.stem}: explore the README.md" in out, out
