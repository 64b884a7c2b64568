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
