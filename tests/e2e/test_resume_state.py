"""A resumed session goes on where the last one left: the shell's directory after a ``cd``,
and the approval policy the user chose (the real CLI, a loopback server, real bash)."""

from __future__ import annotations

from pathlib import Path

from agent.carryover import carried_over
from agent.log.session import Session
from tests.e2e.conftest import Run, log_events, session_files
from tests.openai_server import OpenAIServer


def call(command: str, call_id: str) -> dict:
    return {"id": call_id, "name": "bash", "arguments": {"command": command}}


def ask(run_cli: Run, server: OpenAIServer, prompt: str, *extra: str):  # type: ignore[no-untyped-def]
    return run_cli(
        "-p", prompt, "--base-url", server.base_url, "--model", "m", "--approve", "auto", *extra
    )


def results(env: dict[str, str]) -> list[dict]:
    return [e["data"] for e in log_events(session_files(env)[-1]) if e["type"] == "tool/result"]


def test_resume_after_a_cd_runs_the_next_command_in_the_same_directory(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    openai_server.push(
        {"tool_calls": [call("mkdir -p sub/deeper && cd sub/deeper", "a")]}, {"text": "in"}
    )
    assert ask(run_cli, openai_server, "go down").returncode == 0
    assert results(cli_env)[-1]["cwd"] == str(workdir / "sub" / "deeper")  # logged

    openai_server.push({"tool_calls": [call("pwd", "b")]}, {"text": "there"})
    out = ask(run_cli, openai_server, "where are you?", "--continue")
    assert out.returncode == 0, out.stderr
    assert results(cli_env)[-1]["content"].splitlines()[0] == str(workdir / "sub" / "deeper")

    # The directory is gone by the next resume: back at the session root, and said so.
    (workdir / "sub" / "deeper").rmdir()
    openai_server.push({"tool_calls": [call("pwd", "c")]}, {"text": "home"})
    out = ask(run_cli, openai_server, "and now?", "--continue")
    assert "no longer exists" in out.stderr and str(workdir / "sub" / "deeper") in out.stderr
    assert results(cli_env)[-1]["content"].splitlines()[0] == str(workdir)


def test_the_approval_policy_chosen_in_a_session_carries_over(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "home", cwd=str(tmp_path))
    assert carried_over(session.events).policy is None
    data = {"turn": 1, "step": 1, "call_id": "x", "name": "bash", "content": "ok"}
    session.append("tool/result", {**data, "approval": "once"})
    assert carried_over(session.events).policy is None  # a one-off approval is not a policy
    session.append("tool/result", {**data, "call_id": "y", "approval": "always"})
    assert carried_over(session.events).policy == "auto"
    session.append("command/run", {"command_id": "k", "name": "approve", "args": "ask"})
    assert carried_over(session.events).policy == "ask"  # a later /approve wins
    session.close()


def test_a_resumed_runtime_keeps_always_and_says_so(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from agent.settings import load_settings
    from tui.runtime.wiring import build_runtime

    (tmp_path / "empty.toml").write_text("")
    monkeypatch.setenv("REEFLINE_CONFIG", str(tmp_path / "empty.toml"))
    home = tmp_path / "home"
    first = build_runtime(load_settings({"home": home, "demo": True}), cwd=tmp_path)
    data = {"turn": 1, "step": 1, "call_id": "x", "name": "bash", "content": "ok"}
    first.session.append("user/message", {"content": "go"})  # kept: a prompt was sent
    first.session.append("tool/result", {**data, "approval": "always"})
    session_id = first.session.id
    first.close()
    again = build_runtime(
        load_settings({"home": home, "demo": True}), resume=session_id, cwd=tmp_path
    )
    assert again.bash.policy == "auto"
    assert (
        "approval auto (chosen in this session: /approve ask to be asked again)"
        in (again.notices[0])
    )
    again.set_approval("ask")
    again.close()
    third = build_runtime(
        load_settings({"home": home, "demo": True}), resume=session_id, cwd=tmp_path
    )
    assert third.bash.policy == "ask"
    third.close()
