"""The bash tool against real bash processes: no mocks, everything in tmp_path."""

from __future__ import annotations

import asyncio
import os
import random
import re
import stat
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.held import Held, hold, kill_all
from tools.base import ApprovalDecision, Tool, ToolInterrupted
from tools.bash import BashTool

UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def tool(work: Path, tmp_path: Path) -> BashTool:
    return BashTool(cwd=work, spill_dir=tmp_path / "spill", policy="auto")


@pytest.fixture
def reaper() -> Iterator[list[Held]]:
    """Processes a test started, held from when their PIDs were read (a PID read later may
    be someone else's by then); any still alive at teardown are killed so nothing leaks."""
    held: list[Held] = []
    yield held
    kill_all(held)


async def survivors(held: list[Held], within: float = 20.0) -> list[int]:
    """PIDs of ``held`` still alive once SIGKILLed processes had time to finish dying
    (``within`` only bounds a failure: it is long for a loaded machine)."""
    deadline = time.monotonic() + within
    while (left := [h.pid for h in held if h.alive()]) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return left


async def read_pids(path: Path, count: int, reaper: list[Held]) -> list[Held]:
    """Wait until the command has written ``count`` PIDs to ``path``; hold them."""
    for _ in range(250):
        if path.exists():
            pids = [int(x) for x in path.read_text().split()]
            if len(pids) >= count:
                held = hold(pids)
                reaper.extend(held)
                return held
        await asyncio.sleep(0.02)
    raise AssertionError(f"command never wrote {count} pids to {path}")


async def until_running(tool: BashTool) -> None:
    """Wait until ``tool.run`` holds the command it started. A command can write its PIDs
    before the event loop hands the started process back to the tool; a cancel in between
    is a cancel during start-up (killed at once, no SIGTERM grace), not the case tested."""
    for _ in range(250):
        if tool.running:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the tool never reported the command as running")


def body(content: str) -> str:
    """The content without its footer line."""
    text, _, footer = content.rpartition("\n")
    assert footer.startswith("[") and footer.endswith("]"), content
    return text


def test_tool_satisfies_protocol_and_schema(tool: BashTool) -> None:
    as_tool: Tool = tool
    entry = as_tool.schema()
    assert entry["type"] == "function"
    fn = entry["function"]
    assert fn["name"] == tool.name == "bash"
    assert fn["parameters"]["required"] == ["command"]
    assert set(fn["parameters"]["properties"]) == {"command", "timeout"}
    for phrase in ("working directory persists", "Stdin is closed", "full output is saved"):
        assert phrase in fn["description"]


@pytest.mark.parametrize(
    ("command", "expected"),
    [("true", 0), ("exit 3", 3), ("false; (exit 4)", 4), ("kill -9 $$", 137), ("kill $$", 143)],
)
async def test_exit_code_is_data(tool: BashTool, command: str, expected: int) -> None:
    out = await tool.run({"command": command})
    assert out.exit_code == expected
    assert not out.is_error
    assert out.content.endswith(f"[exit {expected} · {out.duration_s:.2f}s]")
    assert out.duration_s is not None and 0 < out.duration_s < 60


async def test_stderr_is_merged_in_order(tool: BashTool) -> None:
    out = await tool.run({"command": "echo one; echo two >&2; echo three; echo four >&2"})
    assert body(out.content) == "one\ntwo\nthree\nfour"


@pytest.mark.parametrize(
    "command",
    [
        # `sleep 100 & sleep 100`, each sleep writing its own PID first.
        "echo started; echo $$ > pids; sleep 100 & echo $! >> pids; "
        "(echo $BASHPID >> pids; exec sleep 100)",
        # The same with output redirected: no child holds the pipe, only the group kill
        # can reach them.
        "echo started; echo $$ > pids; sleep 100 > /dev/null 2>&1 & echo $! >> pids; "
        "(echo $BASHPID >> pids; exec sleep 100 > /dev/null 2>&1)",
    ],
    ids=["plain", "redirected"],
)
async def test_timeout_kills_the_whole_group(
    tool: BashTool, work: Path, reaper: list[Held], command: str
) -> None:
    started = time.monotonic()
    out = await tool.run({"command": command, "timeout": 0.5})
    assert time.monotonic() - started < 30  # not the commands' 100 s (a bound, not a speed)
    assert out.is_error
    assert out.exit_code is None
    assert "started" in out.content
    assert "timed out after 0.5s" in out.content
    pids = hold([int(x) for x in (work / "pids").read_text().split()])
    reaper.extend(pids)
    assert len(pids) == 3
    assert await survivors(pids) == []
    assert not tool.running


async def test_timeout_is_capped_by_max_timeout(work: Path, tmp_path: Path) -> None:
    tool = BashTool(cwd=work, spill_dir=tmp_path / "s", policy="auto", max_timeout=0.3)
    started = time.monotonic()
    out = await tool.run({"command": "sleep 100", "timeout": 100})
    assert time.monotonic() - started < 30  # capped, not the 100 s asked for
    assert out.is_error and "timed out after 0.3s" in out.content


async def test_large_output_is_capped_and_spilled_byte_for_byte(tool: BashTool, work: Path) -> None:
    rng = random.Random(7)
    lines = [
        f"{i:06d} " + "".join(rng.choices("abcdefghij ", k=rng.randint(0, 120)))
        for i in range(80_000)
    ]
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > 5_000_000
    (work / "data.txt").write_bytes(data)
    out = await tool.run({"command": "cat data.txt"})
    assert out.truncated and not out.is_error and out.exit_code == 0
    assert out.spill_path is not None
    assert Path(out.spill_path).read_bytes() == data
    assert out.spill_path in out.content
    assert len(out.content) < tool.max_output_chars + 300
    head, marker, tail = re.split(r"(\[… .* …\])\n", body(out.content))
    found = re.search(r"(\d+) lines omitted", marker)
    assert found is not None, marker
    omitted = int(found.group(1))
    assert f"({len(data)} bytes)" in marker
    head_lines, tail_lines = head.splitlines(), tail.splitlines()
    assert head_lines == lines[: len(head_lines)]
    assert tail_lines == lines[len(lines) - len(tail_lines) :]
    assert len(head_lines) + omitted + len(tail_lines) == len(lines)


async def test_memory_stays_bounded_for_huge_output(tool: BashTool) -> None:
    tracemalloc.start()
    try:
        out = await tool.run({"command": "yes 0123456789abcdef | head -c 60000000"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.truncated and out.spill_path is not None
    assert os.path.getsize(out.spill_path) == 60_000_000
    assert peak < 4_000_000


async def test_small_output_is_not_spilled(tool: BashTool, tmp_path: Path) -> None:
    out = await tool.run({"command": "seq 1 1000"})
    assert body(out.content) == "\n".join(str(i) for i in range(1, 1001))
    assert not out.truncated and out.spill_path is None
    assert not list((tmp_path / "spill").glob("*.out"))


async def test_binary_output_is_made_safe(tool: BashTool) -> None:
    out = await tool.run({"command": "head -c 65536 /dev/urandom"})
    assert out.exit_code == 0 and not out.is_error
    assert "\x1b" not in out.content and not UNSAFE.search(out.content)
    out.content.encode("utf-8")  # no lone surrogates: safe to serialize
    assert len(out.content) < tool.max_output_chars + 300


async def test_invalid_utf8_escapes_and_control_chars(tool: BashTool) -> None:
    command = (
        r"printf 'bad:\xff\xfe!\n'; printf '\033[1;31mred\033[0m\n';"
        r"printf '\033]0;title\007tit\033]8;;http://x\033\\link\033]8;;\033\\\n';"
        r"printf 'nul:\000 bell:\007 tab:\t end\r\n';"
        r"printf 'progress 10%%\rprogress 50%%\rprogress 100%%\n';"
        r"printf 'erase\033[2K\rdone\r\n'; printf 'b\bbold\n'; printf 'no newline'"
    )
    out = await tool.run({"command": command})
    assert body(out.content) == (
        "bad:\ufffd\ufffd!\nred\ntitlink\nnul: bell: tab:\t end\nprogress 100%\ndone\nbold\n"
        "no newline"
    )


async def test_cd_persists_across_calls(tool: BashTool, work: Path) -> None:
    (work / "sub" / "deeper").mkdir(parents=True)
    out = await tool.run({"command": "cd sub && echo moved"})
    assert body(out.content) == "moved"
    assert tool.cwd == work / "sub"
    out = await tool.run({"command": "cd deeper; pwd"})
    assert body(out.content) == str(work / "sub" / "deeper")
    out = await tool.run({"command": "pwd; cd nowhere"})
    assert out.exit_code == 1
    assert tool.cwd == work / "sub" / "deeper"


async def test_vanished_cwd_falls_back_to_the_original(tool: BashTool, work: Path) -> None:
    (work / "doomed").mkdir()
    await tool.run({"command": "cd doomed"})
    assert tool.cwd == work / "doomed"
    (work / "doomed").rmdir()
    out = await tool.run({"command": "pwd"})
    assert out.exit_code == 0
    assert f"working directory {work / 'doomed'} no longer exists" in out.content
    assert body(out.content).endswith(f"\n{work}")
    assert tool.cwd == work


async def test_stdin_is_closed(tool: BashTool) -> None:
    started = time.monotonic()
    out = await tool.run({"command": "cat; read x; echo read=$?; readlink /proc/$$/fd/0"})
    assert time.monotonic() - started < 30  # an open stdin would have held it until timeout
    assert body(out.content) == "read=1\n/dev/null"


async def test_dev_tty_fails_without_hanging(tool: BashTool) -> None:
    out = await tool.run({"command": "echo hi > /dev/tty; echo rc=$?", "timeout": 10})
    assert not out.is_error
    assert body(out.content).endswith("rc=1")
    assert "/dev/tty" in out.content


async def test_environment_disables_pagers(tool: BashTool) -> None:
    out = await tool.run({"command": 'echo "$PAGER $GIT_PAGER $TERM"'})
    assert body(out.content) == "cat cat dumb"


async def test_cancel_kills_the_group_and_propagates(
    tool: BashTool, work: Path, reaper: list[Held]
) -> None:
    command = "sleep 100 & echo $! > pids; echo $$ >> pids; sleep 100"
    task = asyncio.create_task(tool.run({"command": command}))
    pids = await read_pids(work / "pids", 2, reaper)
    await until_running(tool)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await survivors(pids) == []
    assert not tool.running


async def test_cancel_kills_commands_that_ignore_sigterm(
    tool: BashTool, work: Path, reaper: list[Held]
) -> None:
    command = "trap '' TERM; sleep 100 & echo $! > pids; echo $$ >> pids; wait; wait; sleep 100"
    task = asyncio.create_task(tool.run({"command": command}))
    pids = await read_pids(work / "pids", 2, reaper)
    await until_running(tool)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    elapsed = time.monotonic() - cancelled_at
    # SIGTERM was ignored, so the SIGKILL after the grace did it (and not the sleeps' end).
    assert 0.4 <= elapsed < 30
    assert await survivors(pids) == []


async def test_background_job_holding_the_pipe_is_stopped(
    tool: BashTool, work: Path, reaper: list[Held]
) -> None:
    started = time.monotonic()
    out = await tool.run({"command": "sleep 100 & echo $! > pid; echo started"})
    assert time.monotonic() - started < 30  # not the job's 100 s
    pid = Held(int((work / "pid").read_text()))
    reaper.append(pid)
    assert out.exit_code == 0
    assert "started" in out.content and "redirect their output" in out.content
    assert await survivors([pid]) == []


async def test_background_job_with_redirected_output_keeps_running(
    tool: BashTool, work: Path, reaper: list[Held]
) -> None:
    out = await tool.run({"command": "sleep 100 > /dev/null 2>&1 & echo $! > pid"})
    pid = Held(int((work / "pid").read_text()))
    reaper.append(pid)
    assert out.exit_code == 0 and "redirect" not in out.content
    assert pid.alive()


async def test_spill_permissions(tool: BashTool, tmp_path: Path) -> None:
    out = await tool.run({"command": "seq 1 100000"})
    assert out.truncated and out.spill_path is not None
    assert Path(out.spill_path).parent == tmp_path / "spill"
    assert stat.S_IMODE((tmp_path / "spill").stat().st_mode) == 0o700
    assert stat.S_IMODE(os.stat(out.spill_path).st_mode) == 0o600
    assert re.fullmatch(r"\d{8}-\d{6}-\d+\.out", Path(out.spill_path).name)
    assert [p.name for p in (tmp_path / "spill").iterdir()] == [Path(out.spill_path).name]


class RecordingApprover:
    def __init__(self, answer: ApprovalDecision) -> None:
        self.answer = answer
        self.seen: list[str] = []

    async def __call__(self, command: str) -> ApprovalDecision:
        await asyncio.sleep(0)
        self.seen.append(command)
        return self.answer


async def test_policy_deny_does_not_run(work: Path, tmp_path: Path) -> None:
    tool = BashTool(cwd=work, spill_dir=tmp_path / "s", policy="deny")
    out = await tool.run({"command": "touch ran"})
    assert out.is_error and out.exit_code is None
    assert "denies" in out.content and "--approve auto" in out.content
    assert "/approve auto" in out.content
    assert not (work / "ran").exists()


async def test_ask_without_approver_does_not_run(work: Path, tmp_path: Path) -> None:
    tool = BashTool(cwd=work, spill_dir=tmp_path / "s")
    assert tool.policy == "ask"
    out = await tool.run({"command": "touch ran"})
    assert out.is_error and "approval" in out.content and "--approve auto" in out.content
    assert not (work / "ran").exists()


async def test_ask_once_runs_and_asks_again(work: Path, tmp_path: Path) -> None:
    approver = RecordingApprover("once")
    tool = BashTool(cwd=work, spill_dir=tmp_path / "s", approver=approver)
    command = "touch ran && echo 'quoted $HOME'"
    out = await tool.run({"command": command})
    assert out.exit_code == 0 and (work / "ran").exists()
    await tool.run({"command": "true"})
    assert approver.seen == [command, "true"]
    assert tool.policy == "ask"


async def test_ask_always_switches_to_auto(work: Path, tmp_path: Path) -> None:
    approver = RecordingApprover("always")
    tool = BashTool(cwd=work, spill_dir=tmp_path / "s", approver=approver)
    await tool.run({"command": "touch one"})
    assert tool.policy == "auto"
    await tool.run({"command": "touch two"})
    assert approver.seen == ["touch one"]
    assert (work / "one").exists() and (work / "two").exists()


async def test_ask_declined_does_not_run(work: Path, tmp_path: Path) -> None:
    approver = RecordingApprover("deny")
    tool = BashTool(cwd=work, spill_dir=tmp_path / "s", approver=approver)
    out = await tool.run({"command": "touch ran"})
    assert out.is_error and out.content == "The user declined to run this command."
    assert approver.seen == ["touch ran"] and not (work / "ran").exists()
    assert tool.policy == "ask"


def test_unknown_policy_is_rejected(tool: BashTool) -> None:
    with pytest.raises(ValueError):
        tool.policy = "sometimes"  # type: ignore[assignment]


@pytest.mark.parametrize(
    ("arguments", "mentions"),
    [
        ({}, "`command`"),
        ({"command": 5}, "`command`"),
        ({"command": "  "}, "`command`"),
        ({"command": "touch ran", "timeout": -1}, "`timeout`"),
        ({"command": "touch ran", "timeout": 0}, "`timeout`"),
        ({"command": "touch ran", "timeout": "10"}, "`timeout`"),
        ({"command": "touch ran", "timeout": True}, "`timeout`"),
        ({"command": "touch ran", "timeout": float("nan")}, "`timeout`"),
    ],
)
async def test_invalid_arguments(
    tool: BashTool, work: Path, arguments: dict[str, Any], mentions: str
) -> None:
    out = await tool.run(arguments)
    assert out.is_error and out.exit_code is None
    assert out.content.startswith("Invalid arguments") and mentions in out.content
    assert not (work / "ran").exists()


def test_constructor_rejects_nonsense(work: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        BashTool(cwd=work, spill_dir=tmp_path / "s", max_output_chars=0)
    with pytest.raises(ValueError):
        BashTool(cwd=work, spill_dir=tmp_path / "s", default_timeout=0)


async def test_unusable_spill_dir_is_reported(work: Path, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    tool = BashTool(cwd=work, spill_dir=tmp_path / "file" / "spill", policy="auto")
    out = await tool.run({"command": "touch ran"})
    assert out.is_error and "output folder" in out.content
    assert not (work / "ran").exists()


async def test_output_reaches_a_listener_while_the_command_runs(tool: BashTool) -> None:
    """Each line is heard before the command ends, a few chunks a second at most."""
    heard: list[tuple[float, str]] = []
    loop = asyncio.get_running_loop()
    command = "for i in 1 2 3; do echo line $i; sleep 0.3; done"
    started = loop.time()
    out = await tool.run({"command": command}, lambda text: heard.append((loop.time(), text)))
    ended = loop.time()
    text = "".join(t for _, t in heard)
    assert text == "line 1\nline 2\nline 3\n"
    assert heard[0][0] - started < 0.5 < ended - started  # the first line came early
    assert len(heard) >= 3
    assert out.content.startswith("line 1\nline 2\nline 3\n") and out.exit_code == 0


async def test_a_burst_reaches_the_listener_bounded(tool: BashTool) -> None:
    heard: list[str] = []
    out = await tool.run({"command": "seq 1 200000"}, heard.append)
    assert out.truncated and max(len(t) for t in heard) <= tool.max_output_chars + 40
    assert "".join(heard).rstrip().endswith("200000")


async def test_cancel_keeps_what_was_printed(tool: BashTool, reaper: list[Held]) -> None:
    """Esc during a command: the group is killed and the output so far is kept, marked."""
    heard: list[str] = []
    task = asyncio.create_task(
        tool.run({"command": "echo before; sleep 100; echo never"}, heard.append)
    )
    deadline = time.monotonic() + 10
    while "before" not in "".join(heard):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(ToolInterrupted) as info:
        await task
    output = info.value.output
    assert output.interrupted and output.is_error and output.exit_code is None
    assert output.content.startswith("before\n") and "never" not in output.content
    assert "[interrupted by the user; process group killed" in output.content
    assert output.cwd is not None
    assert not tool.running
