"""Bash faults: floods, stubborn and runaway processes, terminals, bad bytes, interrupts.

``tools.bash.BashTool`` is driven directly (real bash, real processes) and, where it is
cheap, through the real CLI. Processes a command starts carry a marker in their environment
so the test can find every survivor in /proc, and kills them all whatever happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.log.session import Session
from compact.contract.registry import build_registry
from tests.openai_server import OpenAIServer
from tests.reliability.conftest import REEFLINE, Run, alive, log_events, only_session
from tools.bash import BashTool

MB = 1024 * 1024


def marked(marker: str) -> list[int]:
    """Live processes whose environment carries ``REEFLINE_TEST_MARK=<marker>``."""
    needle = f"REEFLINE_TEST_MARK={marker}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if needle in env.split(b"\0") and alive(int(entry)):
            found.append(int(entry))
    return found


@pytest.fixture
def marker() -> Iterator[str]:
    mark = uuid.uuid4().hex
    yield mark
    # Whatever the test did: nothing it started may outlive it.
    for _ in range(50):
        pids = marked(mark)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def no_survivors(mark: str, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while marked(mark):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def tool(tmp_path: Path, **kw: object) -> BashTool:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return BashTool(cwd=work, spill_dir=tmp_path / "spill", policy="auto", **kw)  # type: ignore[arg-type]


# --- output floods ----------------------------------------------------------------------------

FLOOD_PROBE = textwrap.dedent(
    """
    import asyncio, json, os, resource, sys
    from tools.bash import BashTool

    def peak_kib():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    async def main():
        tool = BashTool(cwd=sys.argv[1], spill_dir=sys.argv[2], policy="auto")
        await tool.run({"command": "echo warm-up"})
        before = peak_kib()
        out = await tool.run({"command": sys.argv[3]})
        print(json.dumps({
            "before_kib": before, "after_kib": peak_kib(), "content": out.content,
            "truncated": out.truncated, "spill": out.spill_path, "exit": out.exit_code,
        }))

    asyncio.run(main())
    """
)


def probe_flood(tmp_path: Path, command: str) -> dict:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    out = subprocess.run(
        [sys.executable, "-c", FLOOD_PROBE, str(work), str(tmp_path / "spill"), command],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 0, out.stderr
    result: dict = json.loads(out.stdout)
    return result


def test_output_flood_of_150mb_keeps_memory_bounded(tmp_path: Path) -> None:
    size = 150 * MB
    result = probe_flood(tmp_path, f"yes 'flood line 0123456789 abcdefghij' | head -c {size}")
    grew_mib = (result["after_kib"] - result["before_kib"]) / 1024
    assert grew_mib < 40, f"the tool's process grew by {grew_mib:.0f} MiB for a 150 MiB flood"
    assert result["exit"] == 0 and result["truncated"] is True
    assert len(result["content"]) < 20_000
    assert f"full output ({size} bytes) saved to" in result["content"]
    spill = Path(result["spill"])
    assert spill.stat().st_size == size  # nothing lost: the whole flood is on disk
    assert spill.stat().st_mode & 0o777 == 0o600
    assert spill.parent.stat().st_mode & 0o777 == 0o700


def test_a_single_150mb_line_keeps_memory_bounded(tmp_path: Path) -> None:
    size = 150 * MB
    result = probe_flood(tmp_path, f"head -c {size} /dev/zero | tr '\\0' x")
    grew_mib = (result["after_kib"] - result["before_kib"]) / 1024
    assert grew_mib < 40, f"the tool's process grew by {grew_mib:.0f} MiB"
    assert Path(result["spill"]).stat().st_size == size
    assert len(result["content"]) < 20_000


def test_flood_through_the_cli_keeps_its_memory_bounded(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """The whole agent process (session, meter, printer) stays small too: peak RSS of the
    CLI with a 120 MiB flood against the same run with a tiny output."""

    def peak_rss_kib(command: str) -> int:
        openai_server.push(
            {"tool_calls": [{"id": "f", "name": "bash", "arguments": {"command": command}}]},
            {"text": "done"},
        )
        wrapper = (
            "import resource, subprocess, sys; "
            "rc = subprocess.call(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(rc)"
        )
        args = ["-p", "go", "--approve", "auto", "--base-url", openai_server.base_url]
        out = subprocess.run(
            [sys.executable, "-c", wrapper, REEFLINE, *args, "--model", "m"],
            cwd=workdir,
            env=cli_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        return int(out.stdout.strip().splitlines()[-1])

    small = peak_rss_kib("echo small")
    flood = peak_rss_kib(f"yes 'flood line 0123456789 abcdefghij' | head -c {120 * MB}")
    assert (flood - small) / 1024 < 40, (small, flood)
    results = [
        e["data"]
        for path in (Path(cli_env["REEFLINE_HOME"]) / "sessions").glob("*.jsonl")
        for e in log_events(path)
        if e["type"] == "tool/result" and e["data"].get("truncated")
    ]
    [result] = results
    assert len(result["content"]) < 20_000
    assert Path(result["spill_path"]).stat().st_size == 120 * MB


# --- stubborn and runaway processes -----------------------------------------------------------


async def test_a_command_ignoring_sigterm_is_killed_on_cancel(tmp_path: Path, marker: str) -> None:
    bash = tool(tmp_path)
    command = (
        f"export REEFLINE_TEST_MARK={marker}; trap '' TERM; "
        "bash -c \"trap '' TERM; sleep 60\" & sleep 60; wait"
    )
    task = asyncio.create_task(bash.run({"command": command}))
    deadline = time.monotonic() + 10
    # (The outer bash exported the marker itself, so only what it started carries it.)
    while len(marked(marker)) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert len(marked(marker)) >= 2  # the inner bash (or its sleep) and the outer sleep
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 30  # SIGTERM grace, then SIGKILL: not the sleeps' 60 s
    assert no_survivors(marker)
    assert not bash.running


async def test_a_command_ignoring_sigterm_is_killed_on_timeout(tmp_path: Path, marker: str) -> None:
    bash = tool(tmp_path)
    command = f"export REEFLINE_TEST_MARK={marker}; trap '' TERM; echo started; sleep 60"
    started = time.monotonic()
    out = await bash.run({"command": command, "timeout": 1})
    assert time.monotonic() - started < 30  # not the sleep's 60 s
    assert out.is_error and out.exit_code is None
    assert "started" in out.content and "timed out after 1s" in out.content
    assert no_survivors(marker)


def fork_storm_command(marker: str, cap: int) -> str:
    storm = f"ulimit -u {cap}; echo capped at $(ulimit -u); f() {{ f | f & }}; f; sleep 60"
    if os.geteuid() != 0:
        return f"export REEFLINE_TEST_MARK={marker}; {storm}"
    # Root ignores RLIMIT_NPROC: run the storm as nobody, where the cap holds.
    drop = (
        "import os, sys; os.setgroups([]); os.setgid(65534); os.setuid(65534); "
        "os.execv('/bin/bash', ['bash', '-c', sys.argv[1]])"
    )
    return f"export REEFLINE_TEST_MARK={marker}; exec {sys.executable} -c \"{drop}\" '{storm}'"


def count_procs_of(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{entry}").st_uid == uid and alive(int(entry)):
                    count += 1
    return count


async def test_a_fork_storm_is_capped_and_killed_as_a_group(tmp_path: Path, marker: str) -> None:
    storm = 40
    uid = os.geteuid() if os.geteuid() != 0 else 65534
    cap = count_procs_of(uid) + storm  # RLIMIT_NPROC counts every process of the user
    bash = tool(tmp_path)
    task = asyncio.create_task(bash.run({"command": fork_storm_command(marker, cap), "timeout": 3}))
    peak = 0
    while not task.done():
        peak = max(peak, len(marked(marker)))
        await asyncio.sleep(0.05)
    out = task.result()
    assert f"capped at {cap}" in out.content
    assert "fork: " in out.content  # bash hit the cap (fork: retry / Resource unavailable)
    assert out.is_error and "timed out after 3s; process group killed" in out.content
    assert peak >= 10, "the storm never got going"
    assert peak <= storm + 2, f"{peak} processes despite a cap of {storm} more"
    assert no_survivors(marker), f"{len(marked(marker))} storm processes survived"


# --- terminals and bytes ----------------------------------------------------------------------


async def test_a_command_opening_dev_tty_fails_fast_instead_of_hanging(tmp_path: Path) -> None:
    bash = tool(tmp_path)
    started = time.monotonic()
    out = await bash.run(
        {"command": "read -r answer < /dev/tty && echo got $answer", "timeout": 300}
    )
    assert time.monotonic() - started < 60  # failed, not timed out (a bound, not a speed)
    assert out.exit_code not in (0, None)
    assert "/dev/tty" in out.content
    out = await bash.run({"command": "cat > /dev/tty <<< 'to the terminal'", "timeout": 20})
    assert out.exit_code not in (0, None) and "/dev/tty" in out.content
    # Plain stdin is closed, so a prompt gets end-of-file at once as well.
    out = await bash.run({"command": "read -r x; echo rc=$? x=$x", "timeout": 20})
    assert "rc=1 x=" in out.content


RAW = rb"printf 'caf\xc3\xa9 \xff\xfe\xc3\x28 \x1b[31mred\x1b[0m nul[\x00] bell\x07 \x9b2J end\n'"


async def test_non_utf8_and_control_bytes_are_made_safe(tmp_path: Path) -> None:
    bash = tool(tmp_path)
    out = await bash.run({"command": RAW.decode("latin-1")})
    text = out.content
    assert out.exit_code == 0
    assert "café" in text and "\ufffd" in text and "red" in text and "end" in text
    assert not any(ch in text for ch in ("\x1b", "\x00", "\x07", "\x9b"))
    text.encode("utf-8")  # encodable: no lone surrogates


def test_non_utf8_output_through_the_cli_keeps_the_log_valid(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    command = RAW.decode("latin-1") + "; head -c 3000 /dev/urandom"
    openai_server.push(
        {"tool_calls": [{"id": "b", "name": "bash", "arguments": {"command": command}}]},
        {"text": "saw bytes"},
    )
    out = run_cli("-p", "bytes", "--approve", "auto", "--base-url", openai_server.base_url,
                  "--model", "m")  # fmt: skip
    assert out.returncode == 0, out.stderr
    log = only_session(cli_env)
    log.read_bytes().decode("utf-8")  # strict: the log is valid UTF-8
    result = next(e for e in log_events(log) if e["type"] == "tool/result")["data"]
    assert "café" in result["content"] and "\x1b" not in result["content"]
    tool_msg = next(m for m in openai_server.requests[1]["messages"] if m["role"] == "tool")
    assert tool_msg["content"] == result["content"]  # the model saw exactly what was logged
    session = Session.open(Path(cli_env["REEFLINE_HOME"]), log.stem, registry=build_registry())
    assert session.report.repaired == []
    session.close()


# --- interrupts -------------------------------------------------------------------------------


async def test_interrupting_a_long_command_leaves_no_survivors(tmp_path: Path, marker: str) -> None:
    bash = tool(tmp_path)
    command = (
        f"export REEFLINE_TEST_MARK={marker}; "
        "sleep 60 & (sleep 60 &) ; nohup sleep 60 > /dev/null 2>&1 & "
        "bash -c 'sleep 60; echo never' & echo running; sleep 60"
    )
    task = asyncio.create_task(bash.run({"command": command}))
    deadline = time.monotonic() + 10
    while len(marked(marker)) < 5 and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert len(marked(marker)) >= 5
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert no_survivors(marker)
    # The tool is usable right after, in the same directory.
    out = await bash.run({"command": "echo still here"})
    assert out.content.startswith("still here")


def test_ctrl_c_during_bash_in_the_cli_exits_130_with_no_survivors(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, marker: str
) -> None:
    command = f"export REEFLINE_TEST_MARK={marker}; sleep 60 & sleep 60"
    openai_server.push(
        {"tool_calls": [{"id": "long", "name": "bash", "arguments": {"command": command}}]},
        {"text": "unused"},
    )
    proc = subprocess.Popen(
        [REEFLINE, "-p", "wait", "--approve", "auto", "--base-url", openai_server.base_url,
         "--model", "m"],
        cwd=workdir, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while len(marked(marker)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(marked(marker)) >= 2
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert no_survivors(marker)
    events = log_events(only_session(cli_env))
    result = next(e for e in events if e["type"] == "tool/result")["data"]
    assert result["is_error"] and "interrupted" in result["content"]
    assert events[-1]["type"] == "turn/end" and events[-1]["data"]["reason"] == "cancelled"
