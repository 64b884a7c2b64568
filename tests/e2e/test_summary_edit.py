"""Correcting the summary end to end: ``--plain``'s ``/summary edit`` opens ``$EDITOR`` (a
small script each test writes), the corrected text reaches the model's next request, the
timeline shows the edit, ``/uncompact`` takes it back, the recall transcript stays as it was;
a text that does not fit, a missing or failing editor, and a crash mid-write lose nothing.
Also: an undone compaction is marked undone in ``reefline timeline``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.e2e.test_recall_undo import (
    bash_call,
    checkpoint_text,
    flags,
    named_transcript,
    two_turns_of_history,
)
from tests.openai_server import SUMMARY_MARK, OpenAIServer

CORRECTED = "## Primary request and intent\n- CORRECTED-FACT-4242: the port is 8443, not 8080\n"


def editor(tmp_path: Path, body: str, name: str = "editor.py") -> str:
    """An ``EDITOR`` value: a script that runs ``body`` with ``path`` the file to edit."""
    script = tmp_path / name
    script.write_text(f"import sys\npath = sys.argv[1]\n{body}\n")
    return f"{sys.executable} {script}"


def writes(text: str) -> str:
    return f"open(path, 'w').write({text!r})"


def plain(
    cli_env: dict[str, str],
    workdir: Path,
    server: OpenAIServer,
    stdin: str,
    *extra: str,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    clean_env = {k: v for k, v in cli_env.items() if k not in ("EDITOR", "VISUAL")}
    return subprocess.run(
        [REEFLINE, "--plain", "--continue", *flags(server), *extra],
        input=stdin,
        cwd=workdir,
        env={**clean_env, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def compacted(run_cli: Run, server: OpenAIServer) -> None:
    server.summarize = True
    two_turns_of_history(run_cli, server)
    done = run_cli("compact", *flags(server)[:4])
    assert done.returncode == 0, done.stderr


def checkpoint_sent(server: OpenAIServer) -> str:
    [text] = [
        str(m.get("content"))
        for m in server.requests[-1]["messages"]
        if "<compacted-summary>" in str(m.get("content"))
    ]
    return text


def test_plain_summary_edit_reaches_the_next_request_shows_in_the_timeline_and_undoes(
    run_cli: Run,
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    workdir: Path,
    tmp_path: Path,
) -> None:
    compacted(run_cli, openai_server)
    before = checkpoint_text(cli_env)
    transcript = Path(named_transcript(before))
    recalled = transcript.read_text()
    seen = tmp_path / "seen.md"
    body = f"open({str(seen)!r}, 'w').write(open(path).read())\n{writes(CORRECTED)}"
    done = plain(cli_env, workdir, openai_server, "/summary edit\n", EDITOR=editor(tmp_path, body))
    assert done.returncode == 0, done.stderr + done.stdout
    assert "Corrected the summary of compaction #1" in done.stdout, done.stdout
    # The editor was given the summary the model read (the raw one, without its frame).
    original = seen.read_text()
    assert "## Primary request and intent" in original and "<compacted-summary>" not in original
    [log] = session_files(cli_env)
    [edit] = [e for e in log_events(log) if e["type"] == "compact/edit"]
    assert edit["surface_op"]["op"] == "revise" and edit["data"]["summary"] == CORRECTED
    # The next request carries the corrected text in the checkpoint's place, framed as before.
    openai_server.push({"text": "ok"})
    assert run_cli("-p", "next", "--continue", *flags(openai_server)).returncode == 0
    sent = checkpoint_sent(openai_server)
    assert "CORRECTED-FACT-4242" in sent
    assert original.strip() not in sent
    assert str(transcript) in sent  # the recall line stays
    assert transcript.read_text() == recalled  # the transcript is untouched
    # The timeline says it was an edit, as a table and as JSON.
    table = run_cli("timeline")
    assert table.returncode == 0, table.stderr
    [row] = [line for line in table.stdout.splitlines() if line.lstrip().startswith("2 ")]
    assert "edit" in row and "CORRECTED-FACT-4242" in row, table.stdout
    records = json.loads(run_cli("timeline", "--json").stdout)
    assert [r["kind"] for r in records] == ["compaction", "edit"]
    # /uncompact takes the edit back: the summary as it was before the edit returns.
    undone = run_cli("uncompact", *flags(openai_server)[:4])
    assert undone.returncode == 0, undone.stderr
    assert "Undid edit #2" in undone.stdout, undone.stdout
    openai_server.push({"text": "ok again"})
    assert run_cli("-p", "again", "--continue", *flags(openai_server)).returncode == 0
    sent = checkpoint_sent(openai_server)
    assert "CORRECTED-FACT-4242" not in sent and original.strip() in sent
    table = run_cli("timeline").stdout
    assert "undone by #3" in table, table


def assert_refused_and_kept(stdout: str, why: str, text: str, cli_env: dict[str, str]) -> None:
    """The edit was refused saying ``why``; ``text`` is in the draft file the message names,
    and nothing was logged as an edit."""
    out = " ".join(stdout.split())
    assert "Not saved:" in out and why in out, out
    kept = out.split("Your text is kept in ")[1].split()[0].rstrip(".")
    assert Path(kept).read_text() == text
    [log] = session_files(cli_env)
    assert "compact/edit" not in [e["type"] for e in log_events(log)]


def test_an_edit_over_the_budget_is_refused_and_the_text_kept(
    run_cli: Run,
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    workdir: Path,
    tmp_path: Path,
) -> None:
    compacted(run_cli, openai_server)
    huge = "## Primary request and intent\n" + "- a very long bullet about the port\n" * 4000
    done = plain(
        cli_env, workdir, openai_server, "/summary edit\n", EDITOR=editor(tmp_path, writes(huge))
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert_refused_and_kept(done.stdout, "the checkpoint's summary may take", huge, cli_env)


def test_an_edit_past_the_window_is_refused_and_the_text_kept(
    run_cli: Run,
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    workdir: Path,
    tmp_path: Path,
) -> None:
    compacted(run_cli, openai_server)
    longer = "## Primary request and intent\n" + "- the port is 8443\n" * 40
    done = plain(
        cli_env,
        workdir,
        openai_server,
        "/summary edit\n",
        "--context-window",
        "800",
        EDITOR=editor(tmp_path, writes(longer)),
    )
    assert_refused_and_kept(done.stdout, "-token window: shorten it", longer, cli_env)


def test_a_missing_or_failing_editor_says_so_and_changes_nothing(
    run_cli: Run,
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    workdir: Path,
    tmp_path: Path,
) -> None:
    compacted(run_cli, openai_server)
    none = plain(cli_env, workdir, openai_server, "/summary edit\n")
    assert "No editor to open: set EDITOR" in none.stdout, none.stdout
    missing = plain(cli_env, workdir, openai_server, "/summary edit\n", EDITOR="no-such-editor-xyz")
    assert "'no-such-editor-xyz' could not start" in missing.stdout, missing.stdout
    failing = editor(tmp_path, writes(CORRECTED) + "\nsys.exit(3)")
    failed = plain(cli_env, workdir, openai_server, "/summary edit\n", EDITOR=failing)
    out = " ".join(failed.stdout.split())
    assert "The editor exited with code 3: nothing saved." in out, out
    kept = out.split("kept in ")[1].split()[0].rstrip(".")
    assert Path(kept).read_text() == CORRECTED
    [log] = session_files(cli_env)
    assert "compact/edit" not in [e["type"] for e in log_events(log)]
    # Headless has no editor to open, and says where to edit.
    headless = run_cli("-p", "/summary edit", "--continue", *flags(openai_server))
    assert headless.returncode == 1 and "--plain" in headless.stderr, headless.stderr


def test_a_crash_while_the_edit_is_written_leaves_the_summary_as_it_was(
    run_cli: Run,
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    workdir: Path,
    tmp_path: Path,
) -> None:
    compacted(run_cli, openai_server)
    done = plain(
        cli_env,
        workdir,
        openai_server,
        "/summary edit\n",
        EDITOR=editor(tmp_path, writes(CORRECTED)),
    )
    assert "Corrected the summary" in done.stdout, done.stdout
    [log] = session_files(cli_env)
    lines = log.read_bytes().splitlines(keepends=True)
    [at] = [i for i, line in enumerate(lines) if b'"compact/edit"' in line]
    log.write_bytes(b"".join(lines[:at]) + lines[at][:60])  # torn mid-write
    openai_server.push({"text": "after the crash"})
    assert run_cli("-p", "hi", "--continue", *flags(openai_server)).returncode == 0
    assert "CORRECTED-FACT-4242" not in checkpoint_sent(openai_server)
    assert "compact/edit" not in [e["type"] for e in log_events(log)]


def test_reefline_timeline_marks_an_undone_compaction(
    run_cli: Run, openai_server: OpenAIServer
) -> None:
    compacted(run_cli, openai_server)
    assert run_cli("uncompact", *flags(openai_server)[:4]).returncode == 0
    table = run_cli("timeline").stdout
    [first] = [line for line in table.splitlines() if line.lstrip().startswith("1 ")]
    assert "undone by #2" in first, table
    assert "done " not in first.replace("undone by", ""), table


def test_the_next_compaction_merges_the_corrected_summary(
    run_cli: Run,
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    workdir: Path,
    tmp_path: Path,
) -> None:
    compacted(run_cli, openai_server)
    fix = editor(tmp_path, writes(CORRECTED))
    done = plain(cli_env, workdir, openai_server, "/summary edit\n", EDITOR=fix)
    assert "Corrected the summary" in done.stdout, done.stdout
    openai_server.push({"tool_calls": [bash_call("seq 1 400", "c3")]}, {"text": "More."})
    more = run_cli(
        "-p", "and more " + "words " * 300, "--continue", *flags(openai_server, "--approve", "auto")
    )
    assert more.returncode == 0, more.stderr
    again = run_cli("compact", *flags(openai_server)[:4])
    assert again.returncode == 0 and "Compacted" in again.stdout, again.stdout
    [summary_request] = [
        r for r in openai_server.requests if SUMMARY_MARK in str(r["messages"][-1].get("content"))
    ][-1:]
    read = " ".join(str(m.get("content")) for m in summary_request["messages"])
    assert "CORRECTED-FACT-4242" in read  # the summarizer read what the model read
