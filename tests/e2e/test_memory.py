"""Memory: the instruction files the real CLI finds and sends, ``/memory``, ``/remember`` in
``-p`` and ``--plain``, against the loopback server."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.e2e.conftest import REEFLINE
from tests.openai_server import OpenAIServer


def reefline(
    env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [REEFLINE, *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


def server_args(server: OpenAIServer) -> list[str]:
    return ["--base-url", server.base_url, "--model", "m"]


def user_file() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "reefline" / "AGENTS.md"


def project(tmp_path: Path) -> Path:
    """A repository (``repo``, with ``.git``) with instructions at every level, a file above
    it, and the user's own file; returns the deepest folder, ``repo/pkg/mod``."""
    repo = tmp_path / "repo"
    deep = repo / "pkg" / "mod"
    deep.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (tmp_path / "AGENTS.md").write_text("ABOVE-THE-ROOT: not this project's\n")
    (repo / "AGENTS.md").write_text("ROOT-RULE: run make test\n")
    (repo / "pkg" / "CLAUDE.md").write_text("PKG-CLAUDE-RULE: the pkg folder has only CLAUDE.md\n")
    (deep / "AGENTS.md").write_text("MOD-RULE: keep functions short\n" + "y" * 9_000)
    (deep / "CLAUDE.md").write_text("MOD-CLAUDE: not read, the folder has an AGENTS.md\n")
    user_file().parent.mkdir(parents=True)
    user_file().write_text("USER-RULE: answer in English\n")
    return deep


def workspace_message(server: OpenAIServer, n: int = 0) -> str:
    return next(
        m["content"]
        for m in server.requests[n]["messages"]
        if m["role"] == "user" and m["content"].startswith("Working directory:")
    )


def test_instruction_files_are_read_from_the_root_down_the_nearest_last(
    openai_server: OpenAIServer, cli_env: dict[str, str], tmp_path: Path
) -> None:
    deep = project(tmp_path)
    out = reefline(cli_env, deep, "-p", "hi", *server_args(openai_server))
    assert out.returncode == 0, out.stderr
    text = workspace_message(openai_server)
    order = ["USER-RULE", "ROOT-RULE", "PKG-CLAUDE-RULE", "MOD-RULE"]
    assert [text.index(rule) for rule in order] == sorted(text.index(rule) for rule in order)
    assert "ABOVE-THE-ROOT" not in text and "MOD-CLAUDE" not in text
    assert f"Project instructions from {tmp_path / 'repo' / 'pkg' / 'CLAUDE.md'}" in text
    assert "[… AGENTS.md truncated at 8,000 characters …]" in text  # the 9,000 y's, capped
    assert text.count("y" * 100) == 79


def test_memory_lists_what_is_loaded_and_context_counts_it(
    openai_server: OpenAIServer, cli_env: dict[str, str], tmp_path: Path
) -> None:
    deep = project(tmp_path)
    (deep.parent / "AGENTS.md").symlink_to(tmp_path / "AGENTS.md")  # pkg: a link, not read
    out = reefline(cli_env, deep, "-p", "/memory", *server_args(openai_server))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "Instruction files the model is given (nearest last):"
    listed = [line.split()[:2] for line in lines[1:5]]
    assert listed == [
        ["user", str(user_file())],
        ["project", str(tmp_path / "repo" / "AGENTS.md")],
        ["project", str(tmp_path / "repo" / "pkg" / "CLAUDE.md")],
        ["project", str(deep / "AGENTS.md")],
    ]
    assert all(" tokens" in line for line in lines[1:5])
    assert "(cut at 8,000 characters)" in lines[4]
    assert f"not read: {deep.parent / 'AGENTS.md'} — a symlink: not followed" in out.stdout
    assert f"/remember TEXT adds a line to {tmp_path / 'repo' / 'AGENTS.md'}" in out.stdout
    context = reefline(cli_env, deep, "-p", "/context", *server_args(openai_server))
    assert "instruction files (in the workspace context" in context.stdout
    assert f"project  {deep / 'AGENTS.md'}" in context.stdout


def test_remember_in_headless_writes_and_the_next_request_only_appends(
    openai_server: OpenAIServer, cli_env: dict[str, str], tmp_path: Path
) -> None:
    """``-p "/remember …"``: the command line is the consent, said on stderr; the model sees
    the line from the next request, as a new message after the bytes it was already sent."""
    deep = project(tmp_path)
    first = reefline(cli_env, deep, "-p", "hello", *server_args(openai_server))
    assert first.returncode == 0, first.stderr
    said = reefline(
        cli_env, deep, "-p", "/remember never touch vendor/", "--continue",
        *server_args(openai_server),
    )  # fmt: skip
    assert said.returncode == 0, said.stderr
    root_file = tmp_path / "repo" / "AGENTS.md"
    assert said.stdout == ""
    assert "reefline: - never touch vendor/" in said.stderr
    assert f"to the end of {root_file}" in said.stderr
    assert "Added to " in said.stderr and "from the next request" in said.stderr
    assert root_file.read_text() == "ROOT-RULE: run make test\n- never touch vendor/\n"
    second = reefline(cli_env, deep, "-p", "next", "--continue", *server_args(openai_server))
    assert second.returncode == 0, second.stderr
    before, after = (r["messages"] for r in openai_server.requests)
    assert after[: len(before)] == before  # nothing already sent was rewritten
    added = after[len(before) :]
    assert [m["role"] for m in added] == ["assistant", "user", "user"]
    assert "- never touch vendor/" in added[1]["content"] and str(root_file) in added[1]["content"]
    assert added[2]["content"] == "next"
    user = reefline(
        cli_env, deep, "-p", "/remember --user prefer small diffs", *server_args(openai_server)
    )
    assert user.returncode == 0, user.stderr
    assert user_file().read_text().endswith("USER-RULE: answer in English\n- prefer small diffs\n")


def test_remember_refuses_a_symlink_and_says_what_to_do(
    openai_server: OpenAIServer, cli_env: dict[str, str], tmp_path: Path, workdir: Path
) -> None:
    target = tmp_path / "elsewhere.md"
    target.write_text("kept\n")
    (workdir / "AGENTS.md").symlink_to(target)
    out = reefline(cli_env, workdir, "-p", "/remember x", *server_args(openai_server))
    assert out.returncode == 1
    assert f"Nothing was written: {workdir / 'AGENTS.md'} is a symlink: " in out.stderr
    assert "- x" not in out.stderr  # refused before asking
    assert target.read_text() == "kept\n"
    empty = reefline(cli_env, workdir, "-p", "/remember", *server_args(openai_server))
    assert "Usage: /remember [--user] TEXT" in empty.stderr


def test_plain_remember_asks_yes_or_no_and_no_is_the_default(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    stdin = "hello\n/remember use ruff\n\n/remember use ruff\nn\n/remember run mypy\ny\nthen\n"
    out = reefline(cli_env, workdir, "--plain", *server_args(openai_server), stdin=stdin)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count(f"to the end of {workdir / 'AGENTS.md'} (a new file)") == 3
    assert out.stdout.count("Not written.") == 2
    assert "Added to " in out.stdout
    assert (workdir / "AGENTS.md").read_text() == "- run mypy\n"
    last = openai_server.requests[-1]["messages"]
    assert "- run mypy" in last[-2]["content"] and last[-1]["content"] == "then"
    assert not any("use ruff" in str(m["content"]) for m in last[:-1])
