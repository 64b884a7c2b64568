"""Sessions a person can name and find, through the real CLI against the loopback server:
``--name``, ``--resume NAME`` (a unique start of a name, or an id; an ambiguous or unknown
one said with the matches), ``reefline sessions`` (this folder first, ``--all``), a session
with no prompt neither listed nor kept, the one line a resume says, and the exit hint that
runs as printed."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.openai_server import OpenAIServer
from tui.text import short_path


def server_flags(server: OpenAIServer) -> tuple[str, ...]:
    return ("--base-url", server.base_url, "--model", "loop-model", "--context-window", "8000")


def block(listing: str, session_id: str) -> list[str]:
    """A session's lines in a listing: its line of facts and the indented ones under it."""
    lines = listing.splitlines()
    for n, line in enumerate(lines):
        if line.strip().startswith(session_id):
            rest = [after for after in lines[n + 1 :] if after.startswith("      ")]
            out = [line]
            for after in lines[n + 1 :]:
                if not after.startswith("      "):
                    break
                out.append(after)
            assert rest or out
            return out
    raise AssertionError(f"{session_id} not listed:\n{listing}")


def test_named_sessions_are_found_by_name_and_listed_with_what_was_asked(
    run_cli: Run,
    cli_env: dict[str, str],
    openai_server: OpenAIServer,
    tmp_path: Path,
    workdir: Path,
) -> None:
    flags = server_flags(openai_server)
    made = run_cli("-p", "plan the api refactor", "--name", "api-refactor", *flags)
    assert made.returncode == 0, made.stderr
    [refactor] = session_files(cli_env)
    assert [e["data"] for e in log_events(refactor) if e["type"] == "session/name"] == [
        {"name": "api-refactor"}
    ]
    assert run_cli("-p", "version two", "--name", "api-v2", *flags).returncode == 0
    [v2] = [path for path in session_files(cli_env) if path != refactor]

    # Ambiguous: both are said, with their ids and folders, and nothing is opened.
    both = run_cli("-p", "which?", "--resume", "api", *flags)
    assert both.returncode == 2
    assert "'api' matches 2 sessions" in both.stderr
    assert refactor.stem in both.stderr and v2.stem in both.stderr
    assert "Give more of the name, or the id" in both.stderr
    # Unknown: said, with where the list is.
    unknown = run_cli("-p", "which?", "--resume", "nope", *flags)
    assert unknown.returncode == 2
    assert "no session is named 'nope' or has that id" in unknown.stderr
    assert "reefline sessions" in unknown.stderr
    # A unique start of the name, any case.
    long_prompt = "explain " + "the parser's header handling " * 8
    again = run_cli("-p", long_prompt, "--resume", "API-R", *flags)
    assert again.returncode == 0, again.stderr
    assert f"Resumed 'api-refactor' ({refactor.stem}): 1 turn" in again.stderr
    # The id still works, and a taken name is refused before anything is written.
    assert run_cli("-p", "by id", "--resume", v2.stem, *flags).returncode == 0
    taken = run_cli("-p", "a third", "--name", "Api-V2", *flags)
    assert taken.returncode == 2
    assert f"another session is named 'api-v2' already ({v2.stem}" in taken.stderr
    assert len(session_files(cli_env)) == 2

    # The session tools take a name too.
    export = run_cli("export", "api-r")
    assert export.returncode == 0 and "plan the api refactor" in export.stdout
    assert "'api' matches 2 sessions" in run_cli("timeline", "api").stderr

    # A session started in another folder.
    other = tmp_path / "elsewhere"
    other.mkdir()
    elsewhere = subprocess.run(
        [REEFLINE, "-p", "somewhere else", *flags],
        cwd=other, env=cli_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert elsewhere.returncode == 0, elsewhere.stderr

    listing = run_cli("sessions")
    assert listing.returncode == 0, listing.stderr
    out = listing.stdout
    assert "somewhere else" not in out
    assert "1 session in 1 other folder: reefline sessions --all lists them." in out
    head, *asked = block(out, refactor.stem)
    assert "api-refactor · just now · 2 turns · " in head and "KiB" in head
    assert asked[0].strip() == "plan the api refactor"
    last = asked[1].strip()
    assert last.startswith("last: explain the parser's header handling")
    assert last.endswith("…") and len(last) == 70  # cut, and said to be cut
    # Most recent first: v2 was resumed last.
    assert out.index(v2.stem) < out.index(refactor.stem)

    # --plain's /sessions: the same lines, this session marked, this folder first.
    picked = subprocess.run(
        [REEFLINE, "--plain", "--resume", "api-v", *flags], input="/sessions\n",
        cwd=workdir, env=cli_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert picked.returncode == 0, picked.stderr
    lines = picked.stdout.splitlines()
    start = lines.index(f"{short_path(str(workdir))} (this folder):")
    assert lines[start + 1].startswith(f"  {v2.stem}  api-v2 · ")
    assert lines[start + 1].endswith("(this session)")
    assert "somewhere else" in picked.stdout
    assert picked.stdout.index(refactor.stem) < picked.stdout.index("somewhere else")
    assert "/resume NAME (or id) continues one." in picked.stdout

    every = run_cli("sessions", "--all").stdout
    assert " (this folder):" in every.splitlines()[0]
    assert "somewhere else" in every
    assert every.index(refactor.stem) < every.index("somewhere else")


def test_a_session_with_no_prompt_is_neither_listed_nor_kept(
    run_cli: Run, cli_env: dict[str, str], openai_server: OpenAIServer, workdir: Path
) -> None:
    flags = server_flags(openai_server)
    # --plain, named with /rename, left without a prompt: nothing stays, and it says so.
    plain = subprocess.run(
        [REEFLINE, "--plain", *flags], input="/rename scratch\n/sessions\n",
        cwd=workdir, env=cli_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert "Session named 'scratch' (kept once a prompt is sent): " in plain.stdout
    assert "No stored session has a prompt yet." in plain.stdout
    assert plain.stdout.rstrip().endswith(
        "Session 'scratch' is not kept: no prompt was sent in it."
    )
    assert session_files(cli_env) == []

    # While a session with no prompt is open, listings do not show it.
    repl = subprocess.Popen(
        [REEFLINE, "--plain", *flags],
        cwd=workdir, env=cli_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert repl.stdin is not None and repl.stdout is not None
        repl.stdin.write("/rename open-but-empty\n")
        repl.stdin.flush()
        for line in repl.stdout:  # the REPL has the session open once it answers
            if "Session named 'open-but-empty'" in line:
                break
        [held] = session_files(cli_env)
        listing = run_cli("sessions")
        assert "No sessions under" in listing.stdout, listing.stdout
        assert "open-but-empty" not in listing.stdout
        again = run_cli("-p", "hi", "--resume", "open-but", *flags)
        assert again.returncode == 2 and "no session is named 'open-but'" in again.stderr
        repl.stdin.close()
        assert repl.wait(timeout=60) == 0
    finally:
        if repl.poll() is None:
            repl.kill()
        repl.wait()
    assert not held.exists()
    assert session_files(cli_env) == []


def test_a_resume_says_what_it_restored_and_why_the_approval_policy_differs(
    run_cli: Run, cli_env: dict[str, str], openai_server: OpenAIServer
) -> None:
    flags = server_flags(openai_server)
    host = openai_server.base_url.split("//")[1].split("/")[0]
    openai_server.push({"text": "a long answer", "words": 600}, {"text": "more", "words": 600})
    first = run_cli("-p", "start", "--approve", "auto", "--name", "flaggy", *flags)
    assert first.returncode == 0, first.stderr
    [log] = session_files(cli_env)
    resumed = run_cli("-p", "go on", "--resume", "flaggy", *flags)
    assert resumed.returncode == 0, resumed.stderr
    [said] = [line for line in resumed.stderr.splitlines() if "Resumed" in line]
    assert said == (
        f"reefline: Resumed 'flaggy' ({log.stem}): 1 turn · no checkpoint · loop-model at "
        f"{host} · approval deny, was auto: --approve holds only for the run it is given to "
        "(give it again, or /approve auto)."
    )
    # A checkpoint, then a resume that gives the flag again: said as given now.
    openai_server.push({"text": "## Primary request and intent\n- start, then go on"})
    compacted = run_cli("compact", "flaggy", *flags[:4])
    assert compacted.stdout.startswith("Compacted"), (compacted.stdout, compacted.stderr)
    third = run_cli("-p", "more", "--continue", "--approve", "auto", *flags)
    assert third.returncode == 0, third.stderr
    [said] = [line for line in third.stderr.splitlines() if "Resumed" in line]
    assert "2 turns · last checkpoint #1 (/compact) · " in said
    assert said.endswith("approval auto (--approve given now; was deny).")


def test_the_exit_hint_runs_as_printed_where_reefline_is_not_on_path(
    cli_env: dict[str, str], tmp_path: Path, openai_server: OpenAIServer
) -> None:
    """After ``make run`` the program is ``.venv/bin/reefline`` of the checkout, not on
    PATH: the hint names that path, and the line printed runs as it is."""
    checkout = tmp_path / "checkout"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "reefline").symlink_to(REEFLINE)
    env = {**cli_env, "PATH": "/usr/bin:/bin"}
    left = subprocess.run(
        [".venv/bin/reefline", "--plain", *server_flags(openai_server), "--name", "hinted"],
        cwd=checkout, env=env, input="hello\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert left.returncode == 0, left.stderr
    [hint] = [line for line in left.stdout.splitlines() if "To go on" in line]
    assert hint == "To go on with this session: .venv/bin/reefline --resume hinted"
    command = hint.partition(": ")[2]
    ran = subprocess.run(
        ["bash", "-c", f"{command} -p {shlex.quote('and again')} --approve deny"],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "Resumed 'hinted'" in ran.stderr
    # Where it is on PATH, the hint says just reefline.
    on_path = {**env, "PATH": f"{checkout / '.venv' / 'bin'}{os.pathsep}/usr/bin:/bin"}
    left = subprocess.run(
        [str(checkout / ".venv" / "bin" / "reefline"), "--plain", *server_flags(openai_server)],
        cwd=tmp_path, env=on_path, input="hi\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "To go on with this session: reefline --resume 2" in left.stdout, left.stdout
