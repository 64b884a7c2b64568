"""The offline demo model through the real ``reefline -p --demo``: its answers follow the
question, never quote it back like a message of the user's, and its summaries name real file
types."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Run


def test_demo_answers_follow_the_question_without_quoting_it(run_cli: Run, workdir: Path) -> None:
    (workdir / "pkg").mkdir()
    (workdir / "pkg" / "main.py").write_text("import agent.chat\nfrom agent.hooks import x\n")
    (workdir / "reefline.egg-info").mkdir()
    asks = ["give me an overview", "how many lines has each file?", "any errors here?"]
    answers = []
    for i, ask in enumerate(asks):
        more = ("--continue",) if i else ()
        out = run_cli("-p", ask, "--demo", "--approve", "auto", *more)
        assert out.returncode == 0, out.stderr
        answers.append(out.stdout)
        assert ask not in out.stdout, out.stdout
        assert not any(line.startswith(">") for line in out.stdout.splitlines()), out.stdout
    overview, counts, problems = answers
    assert overview.startswith("Here is an overview of"), overview
    assert counts.startswith("Here are the sizes"), counts
    assert problems.startswith("I looked for problems"), problems
    assert "No command failed" in problems
    assert len(set(answers)) == 3

    out = run_cli("compact", "--demo")
    assert out.returncode == 0, out.stderr
    export = run_cli("export")
    [types] = [line for line in export.stdout.splitlines() if "File types seen" in line]
    assert types.endswith("File types seen: .md, .py"), types  # not .chat, .hooks, .egg-info


def test_a_merged_demo_summary_says_the_file_types_once(run_cli: Run, workdir: Path) -> None:
    """Two compactions: the second summary merges the first and lists ``File types seen``
    once, the types of both spans together."""
    for i, ask in enumerate(["give me an overview", "how many lines has each file?"]):
        out = run_cli("-p", ask, "--demo", "--approve", "auto", *(("--continue",) if i else ()))
        assert out.returncode == 0, out.stderr
    assert run_cli("compact", "--demo").returncode == 0
    (workdir / "setup.toml").write_text("[tool]\nname = 'x'\n")
    for ask in ["give me an overview", "how many lines has each file?"]:
        out = run_cli("-p", ask, "--demo", "--approve", "auto", "--continue")
        assert out.returncode == 0, out.stderr
    second = run_cli("compact", "--demo")
    assert second.returncode == 0, second.stderr
    export = run_cli("export").stdout
    summaries = export.split("<summary>Summary</summary>")[1:]
    assert len(summaries) == 2, export
    types = [line for line in summaries[1].splitlines() if "File types seen" in line]
    assert types == ["- File types seen: .md, .py, .toml"], summaries[1]


def test_the_demo_in_an_empty_folder_says_there_are_no_files(run_cli: Run, workdir: Path) -> None:
    for path in workdir.iterdir():
        path.unlink()
    counts = run_cli("-p", "how many lines has each file?", "--demo", "--approve", "auto")
    assert counts.returncode == 0, counts.stderr
    assert counts.stdout.startswith("There are no files here: the folder is empty"), counts.stdout
    assert "sizes of the main text files" not in counts.stdout
    (workdir / "docs").mkdir()
    only_dir = run_cli("-p", "how many lines has each file?", "--demo", "--approve", "auto")
    assert only_dir.stdout.startswith("I found no text files to count lines in."), only_dir.stdout
