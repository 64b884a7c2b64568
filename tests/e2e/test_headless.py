"""``reefline -p`` end to end: the real CLI process, a loopback server, real bash."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from pathlib import Path

from agent.log.session import Session
from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.openai_server import OpenAIServer


def bash_call(command: str, call_id: str = "c1") -> dict:
    return {"id": call_id, "name": "bash", "arguments": {"command": command}}


def test_prompt_runs_bash_and_prints_the_answer(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.push(
        {"tool_calls": [bash_call("wc -l parser.py")]}, {"text": "parser.py has 2 lines."}
    )
    out = run_cli(
        "-p",
        "how long is parser.py?",
        "--base-url",
        openai_server.base_url,
        "--model",
        "local-model",
        "--approve",
        "auto",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "parser.py has 2 lines.\n"
    [log] = session_files(cli_env)
    events = log_events(log)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "session/start" and kinds[-1] == "turn/end"
    assert events[-1]["data"]["reason"] == "completed"
    result = next(e for e in events if e["type"] == "tool/result")
    assert result["data"]["content"].startswith("2 parser.py") and result["data"]["exit_code"] == 0
    # The tool output really reached the model.
    tool_msg = [m for m in openai_server.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_msg[0]["content"].startswith("2 parser.py")


def test_continue_adds_a_turn_to_the_same_file(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    common = ("--base-url", openai_server.base_url, "--model", "m")
    openai_server.push({"text": "first"}, {"text": "second"})
    assert run_cli("-p", "one", *common).returncode == 0
    out = run_cli("-p", "two", "--continue", *common)
    assert out.returncode == 0 and out.stdout == "second\n"
    [log] = session_files(cli_env)
    events = log_events(log)
    assert [e["data"]["turn"] for e in events if e["type"] == "turn/start"] == [1, 2]
    assert "session/resume" in [e["type"] for e in events]
    # The second request carried the first turn's history.
    contents = [m.get("content") for m in openai_server.requests[1]["messages"]]
    assert "one" in contents and "first" in contents and contents[-1] == "two"


def test_continue_takes_this_folders_session_not_a_newer_one_elsewhere(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], tmp_path: Path
) -> None:
    common = ("--base-url", openai_server.base_url, "--model", "m")
    other = tmp_path / "other-project"
    other.mkdir()
    openai_server.push({"text": "here"}, {"text": "elsewhere"}, {"text": "again"}, {"text": "new"})
    assert run_cli("-p", "in this folder", *common).returncode == 0
    elsewhere = subprocess.run(
        [REEFLINE, "-p", "in another folder", *common],
        cwd=other,
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert elsewhere.returncode == 0  # the newest session is now the other folder's
    out = run_cli("-p", "go on", "--continue", *common)
    assert out.returncode == 0 and out.stdout == "again\n"
    contents = [m.get("content") for m in openai_server.requests[2]["messages"]]
    assert "in this folder" in contents and "in another folder" not in contents
    # A folder where no session was started gets a new one, and is told so.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    begun = subprocess.run(
        [REEFLINE, "-p", "hello", "--continue", *common],
        cwd=fresh,
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert begun.returncode == 0, begun.stderr
    assert "no session was started in this folder yet" in begun.stderr
    sent = [m.get("content") for m in openai_server.requests[3]["messages"]]
    assert "hello" in sent and "in this folder" not in sent and "in another folder" not in sent


def test_json_streams_every_event(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    openai_server.push({"text": "hello"})
    out = run_cli("-p", "hi", "--json", "--base-url", openai_server.base_url, "--model", "m")
    assert out.returncode == 0
    printed = [json.loads(line) for line in out.stdout.splitlines()]
    [log] = session_files(cli_env)
    logged = log_events(log)
    assert printed == logged  # session/start first: its id is what --resume takes
    assert printed[0]["type"] == "session/start" and printed[-1]["type"] == "turn/end"
    session_id = printed[0]["data"]["id"]
    assert log.stem == session_id
    # A script can go on with the run it just made; that run's stream starts the same way.
    openai_server.push({"text": "again"})
    again = run_cli(
        "-p", "more", "--json", "--resume", session_id,
        "--base-url", openai_server.base_url, "--model", "m",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    resumed = [json.loads(line) for line in again.stdout.splitlines()]
    assert resumed[0] == printed[0]
    assert resumed[1]["type"] == "session/resume" and resumed[1]["seq"] == len(logged)
    assert [e["seq"] for e in resumed[1:]] == list(
        range(len(logged), len(logged) + len(resumed) - 1)
    )


def test_headless_denies_bash_by_default(
    run_cli: Run, openai_server: OpenAIServer, workdir: Path
) -> None:
    openai_server.push({"tool_calls": [bash_call("touch created")]}, {"text": "could not"})
    out = run_cli("-p", "make a file", "--base-url", openai_server.base_url, "--model", "m")
    assert out.returncode == 0
    assert not (workdir / "created").exists()
    assert "--approve auto" in out.stderr
    tool_msg = next(m for m in openai_server.requests[1]["messages"] if m["role"] == "tool")
    assert "not run" in tool_msg["content"]


def test_demo_model_finishes_offline(run_cli: Run) -> None:
    out = run_cli("-p", "what is in this project?", "--approve", "auto")
    assert out.returncode == 0, out.stderr
    assert "offline demo model" in out.stderr
    assert "parser.py" in out.stdout and "README.md" in out.stdout


def test_api_key_never_reaches_log_or_output(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    secret = "sk-test-DO-NOT-LEAK-4242"
    openai_server.push({"tool_calls": [bash_call("echo listing")]}, {"text": "ok"})
    out = run_cli(
        "-p",
        "hi",
        "--json",
        "--approve",
        "auto",
        "--base-url",
        openai_server.base_url,
        "--model",
        "m",
        # The conventional pair: OPENAI_API_KEY goes to the server OPENAI_BASE_URL names.
        env={"OPENAI_API_KEY": secret, "OPENAI_BASE_URL": openai_server.base_url},
    )
    assert out.returncode == 0
    assert openai_server.headers[0].get("authorization") == f"Bearer {secret}"
    assert secret not in out.stdout and secret not in out.stderr
    home = Path(cli_env["REEFLINE_HOME"])
    for path in home.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


def test_base_url_without_key_is_fine_and_unknown_window_is_reported(
    run_cli: Run, openai_server: OpenAIServer
) -> None:
    out = run_cli("-p", "hi", "--base-url", openai_server.base_url, "--model", "mystery-model-7b")
    assert out.returncode == 0
    assert "did not say the context window of mystery-model-7b" in out.stderr
    assert "--context-window" in out.stderr


def test_a_server_that_is_not_there_is_reported_as_such_not_as_a_silent_one(
    run_cli: Run,
) -> None:
    """Nothing listening: the error says so and names the URL; no word about a window the
    server "did not say" (it was never asked, and will be once it is up)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    out = run_cli(
        "-p", "hi", "--base-url", url, "--model", "mystery-model-7b",
        env={"REEFLINE_MAX_RETRIES": "0"},
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    assert f"Could not reach the model server: {url}" in out.stderr
    assert "--base-url" in out.stderr  # what to check
    assert "context window" not in out.stderr, out.stderr


def test_malformed_config_is_rejected_with_path_and_key(
    run_cli: Run, cli_env: dict[str, str]
) -> None:
    config = Path(cli_env["REEFLINE_CONFIG"])
    config.write_text('max_steps = "many"\n')
    out = run_cli("-p", "hi")
    assert out.returncode == 2
    assert str(config) in out.stderr and "max_steps" in out.stderr
    config.write_text("this is = = not toml\n")
    out = run_cli("-p", "hi")
    assert out.returncode == 2 and "invalid TOML" in out.stderr


def test_a_config_variable_naming_no_file_is_a_mistake(run_cli: Run, tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "config.toml"
    for args in (("-p", "hi", "--demo"), ("sessions",), ("timeline",)):
        out = run_cli(*args, env={"REEFLINE_CONFIG": str(missing)})
        assert out.returncode == 2, (args, out.stderr)
        assert str(missing) in out.stderr and "does not exist" in out.stderr
        assert "Traceback" not in out.stderr


def test_help_names_the_session_tools_and_a_near_miss_is_suggested(run_cli: Run) -> None:
    out = run_cli("--help")
    assert out.returncode == 0
    for name in ("sessions", "timeline", "compact", "export"):
        assert f"reefline {name}" in out.stdout
    out = run_cli("session")
    assert out.returncode == 2
    assert "did you mean 'reefline sessions'?" in out.stderr


def test_resume_with_unknown_or_invalid_id(run_cli: Run) -> None:
    out = run_cli("-p", "hi", "--resume", "20990101-000000-abcdef", "--demo")
    assert out.returncode == 2 and "no session" in out.stderr
    out = run_cli("-p", "hi", "--resume", "../../etc/passwd", "--demo")
    # Not an id: looked up as a name (a name opens no path), and none has it.
    assert out.returncode == 2 and "no session is named '../../etc/passwd'" in out.stderr


def test_usage_errors_exit_2(run_cli: Run) -> None:
    out = run_cli("--json")
    assert out.returncode == 2 and "--json needs -p" in out.stderr
    out = run_cli("--approve", "sometimes")
    assert out.returncode == 2


def test_unreachable_base_url_is_readable_and_the_log_stays_intact(
    run_cli: Run, cli_env: dict[str, str]
) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    out = run_cli("-p", "hi", "--base-url", url, "--model", "m")
    assert out.returncode == 1
    assert url in out.stderr and "Traceback" not in out.stderr
    [log] = session_files(cli_env)
    events = log_events(log)
    assert events[-1]["type"] == "turn/end" and events[-1]["data"]["reason"] == "error"
    session = Session.open(Path(cli_env["REEFLINE_HOME"]), log.stem)
    assert session.report.repaired == [] and session.report.torn_bytes == 0
    session.close()


def test_sigint_exits_130_with_the_turn_closed(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    openai_server.push({"text": "slow answer", "chunk_size": 2, "stall_after": 2, "stall_s": 30})
    proc = subprocess.Popen(
        [REEFLINE, "-p", "hi", "--base-url", openai_server.base_url, "--model", "m"],
        cwd=workdir,
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while not openai_server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    [log] = session_files(cli_env)
    events = log_events(log)
    assert events[-1]["type"] == "turn/end" and events[-1]["data"]["reason"] == "cancelled"


def test_json_streams_a_commands_output_as_it_runs(
    run_cli: Run, openai_server: OpenAIServer
) -> None:
    command = "echo first; sleep 0.4; echo second"
    openai_server.push({"tool_calls": [bash_call(command)]}, {"text": "done"})
    out = run_cli(
        "-p", "go", "--json", "--approve", "auto",
        "--base-url", openai_server.base_url, "--model", "m",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = [line["type"] for line in lines]
    live = [line for line in lines if line["type"] == "tool/output"]
    assert "".join(x["text"] for x in live) == "first\nsecond\n" and len(live) >= 2
    assert all("seq" not in x for x in live)  # transient, not log events
    assert kinds.index("tool/start") < kinds.index("tool/output") < kinds.index("tool/result")
