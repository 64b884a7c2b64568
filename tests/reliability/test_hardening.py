"""Hardening: attacks by a hostile repository, model or server, each through the real CLI
against the loopback server, each failing without its fix."""

from __future__ import annotations

import os
import random
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer
from tests.reliability.conftest import REEFLINE, only_session, session_files

SECRET = "ssh-ed25519-PRIVATE-9f3b2c"


def run(
    env: dict[str, str], cwd: Path, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [REEFLINE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def sent(server: OpenAIServer) -> str:
    return "\n".join(str(m.get("content")) for r in server.requests for m in r["messages"])


# --- a hostile repository's AGENTS.md ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["symlink to a key file", "symlink to environ", "fifo", "zero"])
def test_agents_md_that_is_not_a_regular_file_of_the_project_is_not_read(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, tmp_path: Path, kind: str
) -> None:
    agents = workdir / "AGENTS.md"
    if kind == "symlink to a key file":
        key = tmp_path / "id_ed25519"
        key.write_text(SECRET)
        agents.symlink_to(key)
    elif kind == "symlink to environ":
        agents.symlink_to("/proc/self/environ")
    elif kind == "fifo":
        os.mkfifo(agents)
    else:
        agents.symlink_to("/dev/zero")
    env = {**cli_env, "REEFLINE_PROBE": SECRET}
    started = time.monotonic()
    out = run(env, workdir, "-p", "hi", "--base-url", openai_server.base_url, "--model", "m")
    assert out.returncode == 0, out.stderr
    assert time.monotonic() - started < 30  # a FIFO did not hang the turn
    text = sent(openai_server)
    assert "Working directory" in text and "Project instructions" not in text
    assert SECRET not in text and "REEFLINE_PROBE" not in text
    assert SECRET not in only_session(cli_env).read_text()


def test_a_huge_agents_md_is_read_capped(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    with open(workdir / "AGENTS.md", "w") as f:
        f.write("Run the linter before committing.\n")
        f.write("x" * 50_000_000)
    out = run(cli_env, workdir, "-p", "hi", "--base-url", openai_server.base_url, "--model", "m")
    assert out.returncode == 0, out.stderr
    text = sent(openai_server)
    assert "Run the linter before committing." in text and "AGENTS.md truncated" in text
    assert len(text) < 20_000


# --- a session left with an unanswered call mid-surface (damage from an older version) ----


def test_a_call_left_unanswered_mid_surface_is_repaired_on_load(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    from agent.log.session import Session
    from agent.turns import unanswered_tool_calls
    from compact.contract.registry import build_registry

    home = Path(cli_env["REEFLINE_HOME"])
    session = Session.create(home, cwd=str(workdir), registry=build_registry())
    session.append("turn/start", {"turn": 1})
    session.append("user/message", {"content": "look"})
    session.append(
        "assistant/message",
        {"turn": 1, "step": 1, "text": "Looking.", "finish_reason": "tool_calls", "model": "m",
         "tool_calls": [{"id": "gone", "name": "bash", "arguments": '{"command": "ls"}'}]},
    )  # fmt: skip
    session.append("turn/end", {"turn": 1, "reason": "error", "error": "disk full"})
    session.append("turn/start", {"turn": 2})
    session.append("user/message", {"content": "and now?"})
    session.append(
        "turn/end", {"turn": 2, "reason": "error", "error": "tool calls without results"}
    )
    session.close()
    out = run(cli_env, workdir, "-p", "hello", "--continue", "--base-url",
              openai_server.base_url, "--model", "m")  # fmt: skip
    assert out.returncode == 0, out.stderr
    messages = openai_server.requests[-1]["messages"]
    assert unanswered_tool_calls(messages[1:]) == []
    fixed = next(m for m in messages if m["role"] == "assistant")
    assert "tool_calls" not in fixed and "results were never recorded" in fixed["content"]
    assert "(s)" not in fixed["content"]  # worded for one call or many
    assert fixed["content"].startswith("Looking.")
    reopened = Session.open(home, session.id, registry=build_registry(), readonly=True)
    assert [e.type for e in reopened.events[:7]] == [e.type for e in session.events[:7]]


# --- nothing a model or server sends reaches the terminal raw --------------------------------

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
HOSTILE = f"done {OSC52}\x1b]0;title\x07\x1b[2J\u202etxt.exe\x9b31m end"
RAW = ("\x1b", "\x07", "\x9b", "\x85", "\u202e", "\u2028")
C1 = "\x9b\u202e\x85\u2028"
"""The 8-bit CSI, a bidi override, NEL and the line separator: ``json.dumps`` leaves them raw."""
SECOND = f"second {C1}2J end"


def assert_inert(text: str) -> None:
    for char in RAW:
        assert char not in text, repr(text)


def test_what_reaches_a_terminal_is_written_out_never_obeyed(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    openai_server.push(
        {"text": HOSTILE, "words": 800},  # enough history for a compaction
        {"status": 500, "message": f"overloaded {OSC52} {C1}", "type": "server_error"},
        {"text": SECOND},
    )
    args = ["--base-url", openai_server.base_url, "--model", "m"]
    first = run(cli_env, workdir, "-p", f"hi {OSC52}", *args)
    assert first.returncode == 0, first.stderr
    assert_inert(first.stdout)
    assert "\\x1b]52;c;ZWNobyBwd25lZA==\\x07" in first.stdout  # shown, not obeyed
    assert "\\u202etxt.exe" in first.stdout
    second = run(cli_env, workdir, "-p", "again", "--continue", "--json", *args)
    assert second.returncode == 0, second.stderr
    assert_inert(second.stderr)
    assert "overloaded" in second.stderr  # the retry line, written out
    assert_inert(second.stdout)
    import json

    lines = [json.loads(line) for line in second.stdout.splitlines()]
    # Still valid JSON, and it parses back to the very characters the server sent.
    [reply] = [e["data"]["text"] for e in lines if e["type"] == "assistant/message"]
    assert reply == SECOND
    [retry] = [e["data"]["error"] for e in lines if e["type"] == "llm/retry"]
    assert f"overloaded {OSC52} \x9b\u202e" in retry  # (whitespace runs made one space)
    # A compaction whose focus and summary carry the same: the timeline shows both.
    openai_server.push({"text": f"## Primary request and intent\nSummed up {HOSTILE}"})
    compacted = run(cli_env, workdir, "compact", "--focus", f"the {OSC52}{C1} part", *args)
    assert compacted.returncode == 0, (compacted.stdout, compacted.stderr)
    assert_inert(compacted.stdout + compacted.stderr)
    table = run(cli_env, workdir, "timeline").stdout
    assert_inert(table)
    assert "[focus: the" in table and "Summed up done" in table, table
    for command in (["export"], ["sessions"], ["timeline"], ["timeline", "--json"]):
        out = run(cli_env, workdir, *command)
        assert out.returncode == 0, out.stderr
        assert_inert(out.stdout + out.stderr)
    exported = run(cli_env, workdir, "export").stdout
    assert "\\x1b]52;c;" in exported
    listing = run(cli_env, workdir, "sessions").stdout
    assert "hi \\x1b]52;c;" in listing


UMASK_0 = "import os, sys; os.umask(0); os.execv(sys.argv[1], sys.argv[1:])"
"""Run argv[1:] under umask 0, where only an explicit mode keeps a file private."""


@pytest.mark.parametrize("existing", [False, True])
def test_export_to_a_file_is_private(
    cli_env: dict[str, str], workdir: Path, existing: bool
) -> None:
    assert run(cli_env, workdir, "-p", "hi", "--demo").returncode == 0
    target = workdir / "out.md"
    if existing:  # a file left world-readable by an earlier export or by hand
        target.write_text("old")
        target.chmod(0o644)
    out = subprocess.run(
        [sys.executable, "-c", UMASK_0, REEFLINE, "export", "-o", str(target)],
        cwd=workdir, env=cli_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    assert "hi" in target.read_text() and "old" not in target.read_text()


@pytest.mark.parametrize("how", ["--plain, new file", "--plain, 0644 file", "app, 0644 file"])
def test_the_prompt_history_is_private_whatever_the_umask(
    cli_env: dict[str, str], workdir: Path, how: str
) -> None:
    """The real ``--plain`` and app on a terminal (tmux) under umask 0: the history file of
    what was typed ends up 0600, also when an older one was world-readable."""
    import shutil

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    history = Path(cli_env["REEFLINE_HOME"]) / "prompt-history"
    if "0644" in how:
        history.parent.mkdir(parents=True)
        history.write_text("\n# 2020-01-01 00:00:00\n+an old prompt\n")
        history.chmod(0o644)
    plain = how.startswith("--plain")
    name = f"history-{os.getpid()}-{how[:3]}{len(how)}"
    command = shlex.join([sys.executable, "-c", UMASK_0, REEFLINE, "--demo",
                          *(["--plain"] if plain else [])])  # fmt: skip
    env_args = [
        a for k, v in {**cli_env, "TERM": "xterm-256color"}.items() for a in ("-e", f"{k}={v}")
    ]
    subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "40", "-c",
                    str(workdir), *env_args, f"{command}; sleep 30"], check=True)  # fmt: skip
    try:
        _wait_screen(name, "/quit leaves" if plain else "Message reefline", timeout=40)
        subprocess.run(["tmux", "send-keys", "-t", name, "-l", "/help"], check=True)
        subprocess.run(["tmux", "send-keys", "-t", name, "Enter"], check=True)
        _wait_screen(name, "/timeline", timeout=40)
        wait_for(lambda: "+/help" in history.read_text(), what="the history to be written")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    assert oct(history.stat().st_mode & 0o777) == "0o600"


# --- the API key stays out of every command's reach ------------------------------------------

KEY = "sk-reefline-HANDOVER-51d0c9e2"


def test_commands_the_model_runs_cannot_read_the_key(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    probe = (
        "tr '\\0' '\\n' </proc/$PPID/environ; env; tr '\\0' '\\n' </proc/self/environ; "
        "cat /proc/$PPID/environ; cat /proc/$PPID/cmdline"
    )
    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": probe}}]}, {"text": "done"}
    )
    config = Path(cli_env["REEFLINE_CONFIG"])
    config.write_text('api_key_env = "MY_KEY"\n')  # named by the config file, not a flag
    env = {**cli_env, "OPENAI_API_KEY": KEY, "MY_KEY": KEY + "-2"}
    out = run(env, workdir, "-p", "look", "--approve", "auto", "--base-url",
              openai_server.base_url, "--model", "m")  # fmt: skip
    assert out.returncode == 0, out.stderr
    result = openai_server.requests[-1]["messages"][-1]
    assert result["role"] == "tool" and "PATH=" in result["content"]  # the probe ran
    for seen in (sent(openai_server), out.stdout, out.stderr, only_session(cli_env).read_text()):
        assert KEY not in seen
    # The key still reaches the provider, where it belongs.
    assert openai_server.headers[-1]["authorization"] == f"Bearer {KEY}-2"


def test_a_retry_after_no_calendar_holds_is_no_crash(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    """A server's Retry-After no calendar holds crashed the real app (an OverflowError), and
    the crash report printed the key; now it is no advice, and the retry happens. (A crash
    report itself: tests/reliability/test_key_secrecy.py.)"""
    import shutil

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    openai_server.push(
        {"status": 429, "message": "slow down", "type": "rate_limit",
         "retry_after": "01 Jan 99999999999999 99:99:99"},
        {"text": "still here"},
    )  # fmt: skip
    env = {**cli_env, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": openai_server.base_url,
           "TERM": "xterm-256color"}  # fmt: skip
    name = f"crash-{os.getpid()}"
    command = " ".join([REEFLINE, "--base-url", openai_server.base_url, "--model", "m"])
    subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "40", "-c", str(workdir),
         *(a for k, v in env.items() for a in ("-e", f"{k}={v}")), command + "; sleep 30"],
        check=True,
    )  # fmt: skip
    try:
        screen = _wait_screen(name, "Message reefline")
        subprocess.run(["tmux", "send-keys", "-t", name, "-l", "hello"], check=True)
        subprocess.run(["tmux", "send-keys", "-t", name, "Enter"], check=True)
        screen = _wait_screen(name, "still here", timeout=40)
        history = subprocess.run(
            ["tmux", "capture-pane", "-t", name, "-p", "-S", "-2000"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert KEY not in screen + history
        assert "Traceback" not in history
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def _wait_screen(name: str, text: str, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = subprocess.run(
            ["tmux", "capture-pane", "-t", name, "-p"], capture_output=True, text=True
        ).stdout
        if text in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never showed:\n{screen}")


# --- termination: SIGTERM, SIGHUP (the terminal closed), SIGKILL --------------------------------


@pytest.fixture
def nap() -> str:
    """A ``sleep`` only this test runs: tests run in parallel, and one's cleanup (kill every
    sleeper left) must not find another's command."""
    return f"sleep 313.{random.randrange(10**6):06d}"


def sleepers(command: str) -> list[int]:
    pattern = "^" + command.replace(".", "[.]") + "$"
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def wait_for(predicate, timeout: float = 20, what: str = "") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out: {what}")
        time.sleep(0.1)


def reefline_pid(name: str) -> int:
    pane = subprocess.run(
        ["tmux", "display", "-p", "-t", name, "#{pane_pid}"], capture_output=True, text=True
    ).stdout.strip()
    children = subprocess.run(["pgrep", "-P", pane], capture_output=True, text=True).stdout
    return int(children.split()[0])


@pytest.mark.parametrize(
    "how", ["SIGTERM", "SIGHUP (terminal closed)", "SIGTERM --plain", "SIGHUP --plain"]
)
def test_the_app_closes_the_turn_and_kills_bash_on_termination(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, how: str, nap: str
) -> None:
    import shutil

    if shutil.which("tmux") is None or shutil.which("pgrep") is None:
        pytest.skip("tmux and pgrep are needed")
    openai_server.push(
        {
            "text": "Working on it. ",
            "tool_calls": [{"name": "bash", "arguments": {"command": nap}}],
        }
    )
    name = f"term-{os.getpid()}-{how[:6]}-{'plain' in how}"
    plain = "--plain" in how
    command = f"{REEFLINE} --approve auto --base-url {openai_server.base_url} --model m"
    if plain:
        command += " --plain"
    subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    env_args = [
        a for k, v in {**cli_env, "TERM": "xterm-256color"}.items() for a in ("-e", f"{k}={v}")
    ]
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "100", "-y", "30", "-c",
                    str(workdir), *env_args, f"{command}; sleep 30"], check=True)  # fmt: skip
    try:
        _wait_screen(name, "/quit leaves" if plain else "Message reefline")
        subprocess.run(["tmux", "send-keys", "-t", name, "-l", "nap"], check=True)
        subprocess.run(["tmux", "send-keys", "-t", name, "Enter"], check=True)
        wait_for(lambda: sleepers(nap) != [], what="the command to start")
        pid = reefline_pid(name)
        if how.startswith("SIGTERM"):
            os.kill(pid, 15)
        else:
            subprocess.run(["tmux", "kill-session", "-t", name], check=True)
        try:
            wait_for(lambda: not _alive(pid), what="reefline to exit")
        except AssertionError:
            tasks = Path(f"/proc/{pid}/task")
            info = [(t.name, (t / "wchan").read_text(), (t / "comm").read_text().strip(),
                     (t / "stat").read_text().split()[2]) for t in tasks.iterdir()]  # fmt: skip
            raise AssertionError(f"still alive: {info}") from None
        wait_for(lambda: sleepers(nap) == [], what="the bash group to be killed")
        if how == "SIGTERM":
            flags = subprocess.run(
                ["tmux", "display", "-p", "-t", name,
                 "#{alternate_on} #{cursor_flag} #{mouse_any_flag}"],
                capture_output=True, text=True,
            ).stdout.split()  # fmt: skip
            assert flags == ["0", "1", "0"]  # normal screen, cursor shown, no mouse tracking
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        for p in sleepers(nap):
            os.kill(p, 9)
    events = [e for e in only_session(cli_env).read_text().splitlines() if e]
    import json

    last = [json.loads(e) for e in events][-3:]
    assert any(e["type"] == "turn/end" and e["data"]["reason"] == "cancelled" for e in last), [
        (e["type"], e["data"]) for e in last
    ]


@pytest.mark.parametrize("plain", [False, True], ids=["app", "--plain"])
def test_what_streamed_before_sigterm_is_kept(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, plain: bool
) -> None:
    """SIGTERM while a reply is still streaming: the turn is closed like Esc, with the text
    shown so far logged as the (cancelled) reply."""
    import json
    import shutil

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    story = "Once upon a time the parser read a header. " * 40
    if plain:  # the first 64 characters at once, then silence until SIGTERM
        openai_server.push({"text": story, "chunk_size": 8, "stall_after": 8, "stall_s": 120})
    else:
        openai_server.push({"text": story, "chunk_size": 8, "delay_s": 0.1})  # ~22 s in all
    name = f"stream-{os.getpid()}-{plain}"
    command = f"{REEFLINE} --base-url {openai_server.base_url} --model m"
    command += " --plain" if plain else ""
    env_args = [
        a for k, v in {**cli_env, "TERM": "xterm-256color"}.items() for a in ("-e", f"{k}={v}")
    ]
    subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "100", "-y", "30", "-c",
                    str(workdir), *env_args, f"{command}; sleep 30"], check=True)  # fmt: skip
    try:
        _wait_screen(name, "/quit leaves" if plain else "Message reefline")
        subprocess.run(["tmux", "send-keys", "-t", name, "-l", "tell me"], check=True)
        subprocess.run(["tmux", "send-keys", "-t", name, "Enter"], check=True)
        if not plain:  # --plain prints the reply when it is complete
            _wait_screen(name, "the parser read", timeout=30)
        else:  # --plain prints nothing while a reply streams: wait until it has read
            # what the server sent before going silent (then it has handled it too: a read
            # is parsed before the loop runs anything else, the SIGTERM handler included)
            assert openai_server.stalled.wait(30), "the reply never started"
            wait_for(lambda: _unread_bytes(openai_server.port) == 0, what="the reply read")
        pid = reefline_pid(name)
        os.kill(pid, 15)
        wait_for(lambda: not _alive(pid), what="reefline to exit")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    events = [json.loads(e) for e in only_session(cli_env).read_text().splitlines()]
    [reply] = [e["data"] for e in events if e["type"] == "assistant/message"]
    assert reply["finish_reason"] == "cancelled"
    assert reply["text"].startswith("Once upon a time the parser read") and reply["text"] != story
    assert events[-1]["type"] == "turn/end" and events[-1]["data"]["reason"] == "cancelled"


def test_bash_dies_with_reefline_even_by_sigkill(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, nap: str
) -> None:
    openai_server.push({"tool_calls": [{"name": "bash", "arguments": {"command": nap}}]})
    proc = subprocess.Popen(
        [REEFLINE, "-p", "nap", "--approve", "auto", "--base-url", openai_server.base_url,
         "--model", "m"], cwd=workdir, env=cli_env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(lambda: sleepers(nap) != [], what="the command to start")
        proc.kill()
        proc.wait(10)
        wait_for(lambda: sleepers(nap) == [], what="the bash group to die with reefline")
    finally:
        for p in sleepers(nap):
            os.kill(p, 9)


def _unread_bytes(port: int) -> int:
    """Bytes waiting in the receive queues of the connections to 127.0.0.1:``port``."""
    remote = f"0100007F:{port:04X}"
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    return sum(int(r[4].split(":")[1], 16) for r in rows if r[2] == remote)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


# --- a server that trickles ---------------------------------------------------------------------


def test_a_trickling_server_cannot_hold_a_turn_forever(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """Every piece arrives well within the read timeout, the whole reply never does."""
    openai_server.push({"text": "x" * 400, "chunk_size": 1, "delay_s": 0.3})  # ~2 minutes
    env = {**cli_env, "REEFLINE_REQUEST_DEADLINE": "2", "REEFLINE_REQUEST_TIMEOUT": "5"}
    started = time.monotonic()
    out = run(env, workdir, "-p", "hi", "--base-url", openai_server.base_url, "--model", "m")
    assert time.monotonic() - started < 60  # a bound, not a speed: the reply would take 120 s
    assert out.returncode == 1
    assert "took too long" in out.stderr and "within 2 s" in out.stderr
    assert len(openai_server.requests) == 1  # not retried: it would take as long again


# --- what a model can send in one reply ---------------------------------------------------------


def test_bounds_on_tool_calls_arguments_and_nesting(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    import json

    from agent.llm.call_bounds import MAX_ARGUMENT_CHARS, MAX_CALLS

    deep = "[" * 5000 + "]" * 5000
    many = [{"name": "bash", "arguments": {"command": f"echo {i}"}, "id": f"m{i}"}
            for i in range(MAX_CALLS + 500)]  # fmt: skip
    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": deep, "id": "deep"}]},
        {"tool_calls": [{"name": "bash", "id": "big",
                         "arguments": json.dumps({"command": "x" * (MAX_ARGUMENT_CHARS + 10)})}],
         "chunk_size": 65536},
        {"tool_calls": many, "chunk_size": 4096},
        {"text": "done"},
    )  # fmt: skip
    out = run(cli_env, workdir, "-p", "go", "--approve", "auto", "--base-url",
              openai_server.base_url, "--model", "m", timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    messages = openai_server.requests[-1]["messages"]
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert "nested 5000 levels deep" in results["deep"]
    assert "were 1,000,0" in results["big"] and "not run" in results["big"]
    assert sum(1 for k in results if k.startswith("m")) == MAX_CALLS
    assert results["m0"].startswith("0")
    assert any("only the first 64 were kept" in str(m["content"]) for m in messages)
    log = only_session(cli_env)
    assert log.stat().st_size < 3 * MAX_ARGUMENT_CHARS  # the big arguments were not kept
    # The session stays readable by every tool that parses calls.
    for command in (["export"], ["timeline"], ["sessions"]):
        assert run(cli_env, workdir, *command).returncode == 0
    again = run(cli_env, workdir, "-p", "more", "--continue", "--base-url",
                openai_server.base_url, "--model", "m")  # fmt: skip
    assert again.returncode == 0, again.stderr


# --- bad input gets a message, never a traceback --------------------------------------------


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("REEFLINE_COMPACTION", "{bad", "REEFLINE_COMPACTION: not a valid value"),
        ("REEFLINE_CONTEXT_WINDOWS", "notjson", "REEFLINE_CONTEXT_WINDOWS: not a valid value"),
        ("OPENAI_BASE_URL", "http://[::1", "OPENAI_BASE_URL 'http://[::1' is not a valid URL"),
        ("REEFLINE_CONFIG", "deep.toml", "invalid TOML: nested too deeply"),
        ("REEFLINE_CONFIG", "/dev/zero", "the config file is not a regular file"),
        ("REEFLINE_CONFIG", "fifo.toml", "the config file is not a regular file"),
    ],
)
def test_bad_settings_get_a_message_not_a_traceback(
    cli_env: dict[str, str], workdir: Path, variable: str, value: str, says: str
) -> None:
    (workdir / "deep.toml").write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    if not (workdir / "fifo.toml").exists():
        os.mkfifo(workdir / "fifo.toml")
    out = run({**cli_env, variable: value}, workdir, "-p", "hi", "--model", "m", timeout=20)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert says in out.stderr and "Traceback" not in out.stderr


def test_a_session_log_that_is_a_symlink_is_not_followed(
    cli_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    assert run(cli_env, workdir, "-p", "hi", "--demo").returncode == 0
    log = only_session(cli_env)
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(log.read_bytes())
    before = outside.read_bytes()
    log.unlink()
    log.symlink_to(outside)
    for args in (["-p", "again", "--continue", "--demo"], ["export", log.stem],
                 ["compact", log.stem, "--demo"]):  # fmt: skip
        out = run(cli_env, workdir, *args)
        assert out.returncode in (1, 2), (args, out.stdout, out.stderr)
        assert "symbolic link" in out.stderr and "Traceback" not in out.stderr
    assert outside.read_bytes() == before  # not cut, appended to or chmod'ed


def test_a_session_log_that_cannot_be_read_gets_a_message(
    cli_env: dict[str, str], workdir: Path
) -> None:
    """(As root, permissions do not stop reads: a directory where the log should be does.)"""
    assert run(cli_env, workdir, "-p", "hi", "--demo").returncode == 0
    log = only_session(cli_env)
    data = log.read_bytes()
    log.unlink()
    log.mkdir()
    (log / "x").write_bytes(data)
    for args in (["timeline", log.stem], ["export", log.stem], ["compact", log.stem, "--demo"],
                 ["-p", "again", "--resume", log.stem, "--demo"],
                 ["--plain", "--resume", log.stem, "--demo"]):  # fmt: skip
        out = run(cli_env, workdir, *args)
        assert out.returncode in (1, 2), (args, out.stdout, out.stderr)
        assert_a_message(out.stderr)
    screen = app_in_tmux(cli_env, workdir, "--resume", log.stem, "--demo")
    assert_a_message(screen)
    assert "cannot resume" in screen and f"'{log.stem}'" in screen


def assert_a_message(said: str) -> None:
    """One line of ours, not a traceback nor the launcher's last-resort "internal error"."""
    assert "reefline: " in said and "Traceback" not in said, said
    assert "internal error" not in said, said


def app_in_tmux(env: dict[str, str], cwd: Path, *args: str) -> str:
    """Start the real app on a terminal (tmux) with ``args``; the screen once it exited."""
    import shutil

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    name = f"app-{os.getpid()}-{time.monotonic_ns()}"
    env_args = [a for k, v in {**env, "TERM": "xterm-256color"}.items() for a in ("-e", f"{k}={v}")]
    command = f"{shlex.join([REEFLINE, *args])}; echo EXITED $?; sleep 30"
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "40", "-c",
                    str(cwd), *env_args, command], check=True)  # fmt: skip
    try:
        return _wait_screen(name, "EXITED", timeout=40)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def test_a_log_whose_head_cannot_be_parsed_is_listed_as_unreadable(
    cli_env: dict[str, str], workdir: Path
) -> None:
    """A line nested deeper than the JSON parser goes, early in one log: ``reefline
    sessions`` lists that session as unreadable and the others as ever (it used to stop
    with "internal error: RecursionError"); every tool that opens it says why."""
    assert run(cli_env, workdir, "-p", "the broken one", "--demo").returncode == 0
    [bad] = session_files(cli_env)
    lines = bad.read_bytes().splitlines(keepends=True)
    deep = "[" * 5000 + "]" * 5000
    lines.insert(
        1, b'{"seq": 1, "type": "user/message", "data": {"content": %s}}\n' % deep.encode()
    )
    bad.write_bytes(b"".join(lines))
    time.sleep(0.01)
    assert run(cli_env, workdir, "-p", "the good one", "--demo").returncode == 0
    out = run(cli_env, workdir, "sessions")
    assert out.returncode == 0, out.stderr
    # Under the folder's line, each session's first line starts with its id (the lines
    # indented under it say its prompts, what it used and cost).
    heads = [line for line in out.stdout.splitlines() if re.match(r"  \d{8}-\d{6}-", line)]
    listed = {line.split()[0]: line for line in heads}
    assert len(listed) == 2, out.stdout
    under_bad = out.stdout.split(listed[bad.stem], 1)[1].split("\n  2", 1)[0]  # to the next
    assert "(unreadable log: line 2 is nested too deeply)" in under_bad
    assert "the good one" in out.stdout.split(listed[bad.stem], 1)[0]  # the newest first
    for args in (["export", bad.stem], ["timeline", bad.stem], ["fork", bad.stem],
                 ["-p", "again", "--resume", bad.stem, "--demo"],
                 ["--plain", "--resume", bad.stem, "--demo"]):  # fmt: skip
        out = run(cli_env, workdir, *args)
        assert out.returncode in (1, 2), (args, out.stdout, out.stderr)
        assert_a_message(out.stderr)
        assert f"{bad.name}:2" in out.stderr


@pytest.mark.parametrize("prompt", ["", "   \n\t "])
def test_an_empty_prompt_runs_no_turn(cli_env: dict[str, str], workdir: Path, prompt: str) -> None:
    out = run(cli_env, workdir, "-p", prompt, "--demo")
    assert out.returncode == 2 and "the prompt is empty" in out.stderr
    assert not list((Path(cli_env["REEFLINE_HOME"]) / "sessions").glob("*.jsonl"))


def test_sessions_reads_only_the_head_of_each_log(cli_env: dict[str, str], workdir: Path) -> None:
    """Listing shows the first prompt from the first lines: a long log is not parsed whole
    (a bad line far down does not even matter to the listing)."""
    assert run(cli_env, workdir, "-p", "the very first request", "--demo").returncode == 0
    log = only_session(cli_env)
    with open(log, "ab") as f:
        f.write(b'{"seq": 999999, "type": "bogus"}\n' * 5000)
    out = run(cli_env, workdir, "sessions")
    assert out.returncode == 0, out.stderr
    assert "the very first request" in out.stdout


@pytest.mark.parametrize(
    "args", [["--plain", "--demo"], ["compact", "--demo"], ["-p", "hi", "--demo"]]
)
def test_a_home_that_cannot_be_written_gets_a_message(
    cli_env: dict[str, str], workdir: Path, tmp_path: Path, args: list[str]
) -> None:
    """(As root, permissions do not stop writes: a file where the home folder should be does.)"""
    home = tmp_path / "not-a-folder"
    home.write_text("")
    out = subprocess.run(
        [REEFLINE, *args], cwd=workdir, env={**cli_env, "REEFLINE_HOME": str(home)},
        input="hi\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode in (1, 2), (out.returncode, out.stdout, out.stderr)
    assert_a_message(out.stderr)


def test_the_app_says_so_when_the_home_cannot_be_written(
    cli_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    home = tmp_path / "not-a-folder"
    home.write_text("")
    screen = app_in_tmux({**cli_env, "REEFLINE_HOME": str(home)}, workdir, "--demo")
    assert_a_message(screen)
    assert "cannot open the session log" in screen and "EXITED 1" in screen


PAUSE_AFTER_READING = """
import os, time
from agent.log.session import Session

_replay = Session._replay


def _replay_then_wait(self, lines):
    done = _replay(self, lines)
    open(os.environ["RACE_READ"], "w").close()
    deadline = time.monotonic() + 30
    while not os.path.exists(os.environ["RACE_GO"]) and time.monotonic() < deadline:
        time.sleep(0.01)
    return done


Session._replay = _replay_then_wait
"""


@pytest.mark.parametrize("writer", ["holds the log as the resume starts", "opens it mid-read"])
def test_a_writer_finishing_while_a_resume_reads_cannot_duplicate_seqs(
    cli_env: dict[str, str], workdir: Path, tmp_path: Path, writer: str
) -> None:
    """A resume and another process writing the same log: one of them is refused, never a
    log with a seq twice. A resume used to read the log first and take the writer's lock
    after; the window in between is microseconds, too short to hit from outside.

    Fault injection, the one place a test changes our code: a ``sitecustomize`` on the
    resuming process's PYTHONPATH wraps ``Session._replay`` (the read of the log) so that
    after reading it touches RACE_READ and waits for RACE_GO. This test's writer acts in
    that window. With the lock taken before the read, the resume is refused at once (the
    writer holds the log) or the writer is (the resume holds it); with the old order both
    append, and the resume's first seq repeats the writer's last."""
    import json

    from agent.log.load_report import SessionLoadError
    from agent.log.session import Session
    from agent.log.store import SessionBusy
    from compact.contract.registry import build_registry

    home = Path(cli_env["REEFLINE_HOME"])
    session = Session.create(home, cwd=str(workdir), registry=build_registry())
    sid = session.id
    session.append("llm/retry", {"attempt": 1, "error": "an earlier line", "delay_s": 0})
    session.close()
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(PAUSE_AFTER_READING)
    read, go = tmp_path / "read", tmp_path / "go"
    env = {**cli_env, "PYTHONPATH": str(hook), "RACE_READ": str(read), "RACE_GO": str(go)}
    holder = (
        Session.open(home, sid, registry=build_registry()) if writer.startswith("holds") else None
    )
    resumer = subprocess.Popen(
        [REEFLINE, "-p", "hi", "--resume", sid, "--demo"], cwd=workdir, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_for(lambda: read.exists() or resumer.poll() is not None, 30, "the resume to read")
    mid_read = read.exists()
    try:
        if holder is None:
            holder = Session.open(home, sid, registry=build_registry())
        holder.append("llm/retry", {"attempt": 2, "error": "the writer's line", "delay_s": 0})
        holder.close()
        wrote = True
    except SessionBusy:
        wrote = False
    go.touch()
    _out, err = resumer.communicate(timeout=60)
    try:
        reopened = Session.open(home, sid, registry=build_registry(), readonly=True)
    except SessionLoadError as exc:
        raise AssertionError(f"the log was left unloadable: {exc}") from None
    seqs = [e.seq for e in reopened.events]
    assert seqs == list(range(len(seqs)))
    types = [e.type for e in reopened.events]
    if writer.startswith("holds"):
        assert wrote and not mid_read and resumer.returncode == 2, err
        assert "open in another reefline process" in err
    else:
        assert mid_read and not wrote and resumer.returncode == 0, err
        assert "turn/end" in types
    lines = [json.loads(line) for line in reopened.path.read_text().splitlines()]
    assert [line["seq"] for line in lines] == seqs


def test_plain_approval_shows_what_runs_and_keeps_typed_ahead_text(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """``--plain`` on a real terminal (tmux): the question shows every line written out; a
    line that is no answer is kept for the agent; "a" is not "always"."""
    import json
    import shutil

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    hidden = "ls -la\x1b]0;\ntouch X\x07"
    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": hidden}}]}, {"text": "ok"}
    )
    name = f"plain-{os.getpid()}"
    command = f"{REEFLINE} --plain --approve ask --base-url {openai_server.base_url} --model m"
    env_args = [
        a for k, v in {**cli_env, "TERM": "xterm-256color"}.items() for a in ("-e", f"{k}={v}")
    ]
    subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "150", "-y", "40", "-c",
                    str(workdir), *env_args, f"{command}; sleep 30"], check=True)  # fmt: skip

    def send(text: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", name, "-l", text], check=True)
        subprocess.run(["tmux", "send-keys", "-t", name, "Enter"], check=True)

    try:
        _wait_screen(name, "/quit leaves")
        send("go")
        screen = _wait_screen(name, "[always] this session")
        assert "1 │ ls -la\\x1b]0;" in screen and "2 │ touch X\\x07" in screen
        assert "2 lines" in screen
        send("also check the docs")
        _wait_screen(name, "kept as a message for the agent")
        send("a")
        send("n")
        _wait_screen(name, "declined")
        send("/quit")
        time.sleep(1)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    assert not (workdir / "X").exists()  # "a" is not "always"; "n" denied
    events = [json.loads(line) for line in only_session(cli_env).read_text().splitlines()]
    steering = [e["data"]["content"] for e in events if e["type"] == "steering/message"]
    assert "also check the docs" in steering


def test_text_with_no_utf8_form_is_logged_not_a_crash(
    openai_server: OpenAIServer, cli_env: dict[str, str], tmp_path: Path
) -> None:
    """A lone surrogate has no UTF-8 form: a server's reply with ``"\\ud800"`` in its JSON,
    and a working directory whose name is not UTF-8 (Python reads its bytes as surrogates),
    made the log write fail ("internal error"), the second leaving an empty log behind that
    no resume could load. Each is logged with U+FFFD in its place."""
    import json

    odd = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9"))
    odd.mkdir()
    openai_server.push({"text": "half \ud800 a pair"}, {"text": "fine"})
    args = ["--base-url", openai_server.base_url, "--model", "m"]
    first = run(cli_env, odd, "-p", "hi", *args)
    assert first.returncode == 0, first.stderr
    assert "\\ud800" in first.stdout  # written out, like any unprintable character
    events = [json.loads(line) for line in only_session(cli_env).read_text().splitlines()]
    assert events[0]["data"]["cwd"].endswith("/caf\ufffd")
    [reply] = [e["data"]["text"] for e in events if e["type"] == "assistant/message"]
    assert reply == "half \ufffd a pair"
    again = run(cli_env, odd, "-p", "more", "--continue", *args)
    assert again.returncode == 0, again.stderr
    assert run(cli_env, odd, "export").returncode == 0


def test_a_failed_write_cuts_the_log_it_holds_not_the_path(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    """A write that fails half way is cut back: in the file reefline holds open and locked.
    Here the log is moved away while a command runs and another file put at its path; then
    the file size limit (RLIMIT_FSIZE, set on the running process as a full disk would)
    makes the result's write fail. Cutting by path cut the stranger's file."""
    import json
    import resource

    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 2; seq 20000"}}]},
        {"text": "never reached"},
    )
    proc = subprocess.Popen(
        [REEFLINE, "-p", "count", "--approve", "auto", "--base-url", openai_server.base_url,
         "--model", "m"], cwd=workdir, env=cli_env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    sessions = Path(cli_env["REEFLINE_HOME"]) / "sessions"
    wait_for(lambda: any("tool/start" in p.read_text() for p in sessions.glob("*.jsonl")),
             30, "the command to start")  # fmt: skip
    log = only_session(cli_env)
    size = log.stat().st_size
    moved = tmp_path / "moved.jsonl"
    os.rename(log, moved)
    stranger = b"not a session log, and not reefline's to cut\n" * 1000
    log.write_bytes(stranger)
    resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "cannot write the session log" in err, err
    assert log.read_bytes() == stranger
    kept = moved.read_bytes()
    assert kept.endswith(b"\n") and len(kept) <= size
    assert [json.loads(line)["seq"] for line in kept.splitlines()][-1] >= 1
