"""The first snapshot of a new session is begun as soon as the command line is read (it
runs while the rest of the session loads), through the real ``reefline -p`` against the
loopback server; where commands are all denied, none is begun."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Run, log_events, session_files
from tests.openai_server import OpenAIServer


def _shadow_repos(cli_env: dict[str, str]) -> list[Path]:
    return sorted((Path(cli_env["REEFLINE_HOME"]) / "snapshots").glob("*"))


def test_the_first_snapshot_begins_before_the_session_opens(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    (workdir / "a.txt").write_text("a\n")
    openai_server.agent_commands = ["echo b >> a.txt"]
    out = run_cli(
        "-p", "go", "--base-url", openai_server.base_url, "--model", "m",
        "--approve", "auto", "--sandbox", "off",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    [log] = session_files(cli_env)
    events = log_events(log)
    opened = next(e["time"] for e in events if e["type"] == "session/start")
    [result] = [e for e in events if e["type"] == "tool/result"]
    assert [c["path"] for c in result["data"]["files"]["changes"]] == ["a.txt"]
    # The shadow repository was made by the first snapshot: before the session's log was.
    [shadow] = _shadow_repos(cli_env)
    made = (shadow / "info" / "exclude").stat().st_mtime
    assert made <= opened, (made, opened)


def test_no_snapshot_is_begun_where_every_command_is_denied(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    (workdir / "a.txt").write_text("a\n")
    openai_server.agent_commands = ["echo b >> a.txt"]
    out = run_cli("-p", "go", "--base-url", openai_server.base_url, "--model", "m")
    assert out.returncode == 0, out.stderr
    [log] = session_files(cli_env)
    [result] = [e for e in log_events(log) if e["type"] == "tool/result"]
    assert result["data"].get("files") is None
    assert (workdir / "a.txt").read_text() == "a\n"
    assert _shadow_repos(cli_env) == []
