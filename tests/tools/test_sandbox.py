"""The sandbox through real bash under real bubblewrap: no mocks, every file in tmp_path.

Each confinement claim is checked against the same command run unconfined, so a sandbox
that silently did nothing fails the test. Where bubblewrap cannot run here, the tests that
need it skip and say why (``pytest -rs``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.base import ApprovalDecision, SandboxMode, ToolInterrupted
from tools.bash import BashTool
from tools.sandbox import Availability, SandboxChoice, SandboxUnavailable, choose

SECRET = "secret-" + uuid.uuid4().hex


@pytest.fixture
def elsewhere() -> Iterator[Path]:
    """A folder we may write that is neither the workspace nor under /tmp (which the
    sandbox replaces with a private one): the standard /var/tmp."""
    if not os.access("/var/tmp", os.W_OK) or os.path.realpath("/var/tmp").startswith("/tmp"):
        pytest.skip("no writable /var/tmp outside /tmp to try a write outside the workspace")
    with tempfile.TemporaryDirectory(dir="/var/tmp") as path:
        yield Path(path)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``$HOME`` with planted credentials."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(SECRET + "\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(f"aws_secret_access_key = {SECRET}\n")
    (home / ".netrc").write_text(f"machine example.com password {SECRET}\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def reefline_home(tmp_path: Path) -> Path:
    """A reefline home with another session's log in it."""
    sessions = tmp_path / "reefline-home" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "other.jsonl").write_text(f'{{"secret": "{SECRET}"}}\n')
    return tmp_path / "reefline-home"


def make_tool(
    workspace: Path, reefline_home: Path, mode: SandboxMode, *, network: bool = False
) -> BashTool:
    sandbox = choose(mode, network=network, hidden=[reefline_home])
    spill = reefline_home / "sessions" / "this.spill"
    return BashTool(cwd=workspace, spill_dir=spill, policy="auto", sandbox=sandbox)


def processes_with(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` (zombies are dead)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


async def gone(marker: str, within: float = 2.0) -> list[int]:
    deadline = time.monotonic() + within
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return left


@pytest.fixture
def leftovers() -> Iterator[list[str]]:
    """Markers of processes a test started: any still alive at teardown are killed."""
    markers: list[str] = []
    yield markers
    for marker in markers:
        for pid in processes_with(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def sleeper_marker() -> str:
    """A unique ``sleep`` argument, to find the process from outside its PID namespace."""
    return f"{1000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6:06d}"


# --- the filesystem ---------------------------------------------------------------------------


async def test_writes_go_to_the_workspace_and_nowhere_else(
    bwrap: str, tmp_path: Path, reefline_home: Path, elsewhere: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    beside = tmp_path / "beside.txt"
    target = elsewhere / "outside.txt"
    scratch = Path(tempfile.gettempdir()) / f"scratch-{uuid.uuid4().hex}"
    tool = make_tool(work, reefline_home, "workspace-write")
    out = await tool.run(
        {"command": f"echo in > inside.txt; echo out > {target}; echo x > {beside}; "
                    f"echo t > {scratch} && cat {scratch}"}
    )  # fmt: skip
    assert (work / "inside.txt").read_text() == "in\n"
    assert f"{target}: Read-only file system" in out.content
    assert not target.exists() and not beside.exists()
    assert "\nt\n" in out.content and not scratch.exists()  # a private /tmp, writable
    # One line tells the model why, above the footer.
    note = out.content.splitlines()[-2]
    assert note.startswith("[sandbox workspace-write may have blocked this: only ")
    assert str(work) in note
    assert out.sandbox == "workspace-write"
    # The same command unconfined writes there: the sandbox is what stopped it.
    free = make_tool(work, reefline_home, "off")
    out = await free.run({"command": f"echo out > {target}"})
    assert target.read_text() == "out\n" and out.sandbox == "off"
    assert "sandbox" not in out.content


async def test_read_only_lets_nothing_but_tmp_be_written(
    bwrap: str, tmp_path: Path, reefline_home: Path
) -> None:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "notes.txt").write_text("kept\n")
    tool = make_tool(work, reefline_home, "read-only")
    out = await tool.run({"command": "echo gone > notes.txt; cat notes.txt; echo t > /tmp/t"})
    assert "Read-only file system" in out.content and "kept" in out.content
    assert (work / "notes.txt").read_text() == "kept\n"
    assert "only a private /tmp can be written" in out.content
    assert out.exit_code == 0 and out.sandbox == "read-only"
    # The working directory still persists: its one writable file is the shell's record.
    await tool.run({"command": "cd sub"})
    assert tool.cwd == work / "sub"
    out = await tool.run({"command": "pwd"})
    assert out.content.startswith(f"{work / 'sub'}\n")


async def test_planted_secrets_cannot_be_read(
    bwrap: str, tmp_path: Path, home: Path, reefline_home: Path
) -> None:
    """The working directory holds $HOME and reefline's home: binding it must not bring the
    hidden folders back."""
    read = (
        "cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc reefline-home/sessions/other.jsonl;"
        " ls -A ~/.ssh; grep -r secret- ~ reefline-home 2>/dev/null; echo done"
    )
    free = make_tool(tmp_path, reefline_home, "off")
    assert (await free.run({"command": read})).content.count(SECRET) >= 4  # they are there
    for mode in ("workspace-write", "read-only"):
        out = await make_tool(tmp_path, reefline_home, mode).run({"command": read})
        assert SECRET not in out.content, mode
        assert "done" in out.content


async def test_full_output_is_spilled_and_can_be_read_back(
    bwrap: str, tmp_path: Path, reefline_home: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for mode in ("workspace-write", "read-only"):
        tool = make_tool(work, reefline_home, mode)
        out = await tool.run({"command": "seq 1 200000"})
        assert out.truncated and out.spill_path is not None
        spill = Path(out.spill_path)
        assert spill.parent == reefline_home / "sessions" / "this.spill"
        assert spill.read_text().splitlines()[-1] == "200000"
        again = await tool.run({"command": f"wc -l < {spill}"})
        assert again.content.startswith("200000\n"), (mode, again.content)


async def test_cd_persists_across_calls(bwrap: str, tmp_path: Path, reefline_home: Path) -> None:
    work = tmp_path / "work"
    (work / "a" / "b").mkdir(parents=True)
    tool = make_tool(work, reefline_home, "workspace-write")
    await tool.run({"command": "cd a"})
    await tool.run({"command": "cd b && touch here"})
    assert tool.cwd == work / "a" / "b" and (work / "a" / "b" / "here").exists()
    out = await tool.run({"command": "pwd"})
    assert out.content.startswith(f"{work / 'a' / 'b'}\n") and out.cwd == str(work / "a" / "b")


# --- processes and the environment ------------------------------------------------------------


async def test_no_other_process_and_no_key_in_the_environment(
    bwrap: str, tmp_path: Path, reefline_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process of the user holds a key in its environment (as the user's shell
    does): an unconfined command can read it from /proc, a sandboxed one cannot."""
    canary = "canary-" + uuid.uuid4().hex
    holder = subprocess.Popen(
        ["sleep", "60"], env={**os.environ, "SOME_TOKEN": canary}, stdout=subprocess.DEVNULL
    )
    monkeypatch.setenv("OTHER_TOKEN", canary)  # and in reefline's own environment
    try:
        look = (
            f"cat /proc/{holder.pid}/environ /proc/{os.getpid()}/environ; "
            "cat /proc/[0-9]*/environ; env; echo; ls /proc | grep -c '^[0-9]'"
        )
        free = make_tool(tmp_path, reefline_home, "off")
        assert canary in (await free.run({"command": look})).content
        out = await make_tool(tmp_path, reefline_home, "workspace-write").run({"command": look})
        assert canary not in out.content
        assert "PATH=" in out.content and "HOME=" in out.content  # the allow-list is there
        visible = int(out.content.splitlines()[-2])
        assert visible <= 4  # its own PID namespace: the jail's init, bash, ls, grep
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("how", ["timeout", "cancel"])
async def test_timeout_and_cancel_kill_everything_inside(
    bwrap: str, tmp_path: Path, reefline_home: Path, leftovers: list[str], how: str
) -> None:
    """Background children, and one that left the process group with setsid, all die."""
    marker = sleeper_marker()
    leftovers.append(marker)
    command = (
        f"sleep {marker} & setsid sleep {marker} > /dev/null 2>&1 & "
        f"(sleep {marker}; echo never) & echo started; wait"
    )
    tool = make_tool(tmp_path, reefline_home, "workspace-write")
    if how == "timeout":
        out = await tool.run({"command": command, "timeout": 1})
        assert "timed out after 1s" in out.content and "started" in out.content
    else:
        task = asyncio.ensure_future(tool.run({"command": command}))
        deadline = time.monotonic() + 5
        while len(processes_with(f"sleep\0{marker}")) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert len(processes_with(f"sleep\0{marker}")) == 3
        task.cancel()
        with pytest.raises(ToolInterrupted) as interrupted:
            await task
        assert interrupted.value.output.interrupted
    assert await gone(marker) == []
    assert not tool.running


async def test_network_needs_sandbox_network(
    bwrap: str, tmp_path: Path, reefline_home: Path
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        connect = f"echo hi > /dev/tcp/127.0.0.1/{port} && echo connected"
        out = await make_tool(tmp_path, reefline_home, "workspace-write").run({"command": connect})
        assert "connected" not in out.content
        assert "there is no network (the user can allow it with --sandbox-network)" in out.content
        tool = make_tool(tmp_path, reefline_home, "workspace-write", network=True)
        out = await tool.run({"command": connect})
        assert "connected" in out.content and "sandbox" not in out.content


# --- choosing a mode --------------------------------------------------------------------------


def test_the_default_follows_the_approval_policy(bwrap: str) -> None:
    choice = choose(None)
    assert choice.mode("auto") == "workspace-write"
    assert choice.mode("ask") == "off" and choice.mode("deny") == "off"
    assert choose("read-only").mode("ask") == "read-only"
    assert choose("off").mode("auto") == "off"
    assert choice.describe("auto") == "sandboxed (workspace-write, no network)"
    assert choice.describe("ask") == "unsandboxed"


async def test_the_approved_command_runs_as_the_person_was_told(
    bwrap: str, tmp_path: Path, reefline_home: Path
) -> None:
    """ "Always" asked about an unsandboxed command runs it unsandboxed; the next ones
    follow ``auto`` into the sandbox."""

    async def always(command: str) -> str:
        return "always"

    work = tmp_path / "work"
    work.mkdir()
    sandbox = choose(None, hidden=[reefline_home])
    spill = reefline_home / "sessions" / "s.spill"
    tool = BashTool(cwd=work, spill_dir=spill, policy="ask", approver=always, sandbox=sandbox)
    first = await tool.run({"command": "true"})
    second = await tool.run({"command": "true"})
    assert (first.sandbox, second.sandbox) == ("off", "workspace-write")


def test_a_confining_mode_without_a_sandbox_is_refused() -> None:
    missing = Availability(reason="bubblewrap is not installed (no `bwrap` on PATH)")
    for mode in ("read-only", "workspace-write"):
        with pytest.raises(SandboxUnavailable) as refused:
            choose(mode, availability=missing)
        said = str(refused.value)
        assert f"`{mode}`" in said and "bwrap" in said
        assert "install bubblewrap" in said and "--sandbox off" in said
    assert choose("off", availability=missing).mode("auto") == "off"
    assert choose(None, availability=missing).mode("auto") == "off"
    assert isinstance(choose(None, availability=missing), SandboxChoice)


def test_without_bwrap_on_path_detection_says_so(tmp_path: Path) -> None:
    """A real process whose PATH has bash but no bubblewrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    bash = subprocess.run(["which", "bash"], capture_output=True, text=True).stdout.strip()
    (bin_dir / "bash").symlink_to(bash)
    probe = "from tools.sandbox import detect; print(detect().reason)"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert done.stdout.strip() == "bubblewrap is not installed (no `bwrap` on PATH)"


def test_no_choice_can_ask_for_a_sandbox_there_is_none_of() -> None:
    """Built directly, not through choose(): the refusal is the choice's own invariant."""
    missing = Availability(reason="not Linux")
    with pytest.raises(SandboxUnavailable, match="not Linux"):
        SandboxChoice("workspace-write", availability=missing)


# --- one jail per tool ------------------------------------------------------------------------

NAMESPACE = "readlink /proc/self/ns/pid"


def host_parent(pid: int) -> int:
    """The parent of ``pid`` as this (outer) PID namespace numbers it."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


async def namespace_of(tool: BashTool) -> str:
    out = await tool.run({"command": NAMESPACE})
    assert out.exit_code == 0, out.content
    return out.content.splitlines()[0]


async def wait_for_processes(marker: str, count: int = 1) -> list[int]:
    deadline = time.monotonic() + 5
    while len(found := processes_with(marker)) < count and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert len(found) >= count, f"{marker} never started"
    return found


async def test_one_jail_serves_the_tools_commands(
    bwrap: str, tmp_path: Path, reefline_home: Path
) -> None:
    """Same PID namespace across commands (a jail per command would give each its own),
    not the host's; its private /tmp lasts from one command to the next."""
    tool = make_tool(tmp_path, reefline_home, "workspace-write")
    first = await namespace_of(tool)
    assert first != os.readlink("/proc/self/ns/pid")
    out = await tool.run({"command": "echo kept > /tmp/note; echo $PPID"})
    assert out.content.startswith("1\n")  # bash's parent is the jail's PID 1, the runner
    assert await namespace_of(tool) == first
    out = await tool.run({"command": "cat /tmp/note"})
    assert out.content.startswith("kept\n")
    assert not (Path(tempfile.gettempdir()) / "note").exists()
    tool.close()


async def test_a_changed_shape_starts_a_jail_of_that_shape(
    bwrap: str, tmp_path: Path, reefline_home: Path
) -> None:
    """Another mode, the network, or the approval policy the default follows: the next
    command runs in a jail of the new shape, never in the old one."""
    work = tmp_path / "work"
    work.mkdir()
    tool = make_tool(work, reefline_home, "workspace-write")
    seen = [await namespace_of(tool)]
    tool.sandbox = choose("read-only", hidden=[reefline_home])
    seen.append(await namespace_of(tool))
    out = await tool.run({"command": "echo x > made.txt"})
    assert "Read-only file system" in out.content and out.sandbox == "read-only"
    assert not (work / "made.txt").exists()
    tool.sandbox = choose("read-only", network=True, hidden=[reefline_home])
    seen.append(await namespace_of(tool))
    assert len(set(seen)) == 3

    # The default follows the policy: auto confines, ask does not, auto again confines.
    async def once(command: str) -> ApprovalDecision:
        return "once"

    tool.sandbox = choose(None, hidden=[reefline_home])
    tool.approver = once
    confined = await namespace_of(tool)
    assert confined not in seen
    out = await tool.run({"command": "touch made.txt"})
    assert out.sandbox == "workspace-write" and (work / "made.txt").exists()
    tool.policy = "ask"
    assert await namespace_of(tool) == os.readlink("/proc/self/ns/pid")  # unconfined
    tool.policy = "auto"
    assert await namespace_of(tool) not in (*seen, os.readlink("/proc/self/ns/pid"))
    tool.close()


async def test_a_secret_made_during_the_session_is_hidden(
    bwrap: str, tmp_path: Path, home: Path, reefline_home: Path
) -> None:
    tool = make_tool(tmp_path / "home", reefline_home, "workspace-write")
    before = await namespace_of(tool)
    (home / ".kube").mkdir()
    (home / ".kube" / "config").write_text(f"token: {SECRET}\n")
    out = await tool.run({"command": f"cat ~/.kube/config; {NAMESPACE}"})
    assert SECRET not in out.content
    assert before not in out.content  # a jail with the new secret hidden
    tool.close()


async def test_the_environment_is_the_allow_list_and_on_no_command_line(
    bwrap: str, tmp_path: Path, reefline_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reefline's own variables (not allowed) are nowhere in the jail, its PID 1's included;
    an allowed one reaches the command through the socket, never through a command line
    (readable by every user): no process of the machine has it in its arguments."""
    canary = "canary-" + uuid.uuid4().hex
    allowed = "UTC0" + uuid.uuid4().hex[:8]  # TZ is allowed; the value is findable
    monkeypatch.setenv("SOME_TOKEN", canary)
    monkeypatch.setenv("TZ", allowed)
    tool = make_tool(tmp_path, reefline_home, "workspace-write")
    look = "env; tr '\\0' '\\n' < /proc/1/environ; cat /proc/[0-9]*/environ | tr '\\0' '\\n'"
    out = await tool.run({"command": look})
    assert canary not in out.content
    assert f"TZ={allowed}" in out.content and "SOME_TOKEN" not in out.content
    names = {line.split("=", 1)[0] for line in out.content.splitlines()[:-1] if "=" in line}
    assert names <= {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM",
                     "TZ", "PWD", "PAGER", "GIT_PAGER", "GIT_TERMINAL_PROMPT",
                     "DEBIAN_FRONTEND", "SHLVL", "_", "OLDPWD"} | {n for n in names if n.startswith("LC_")}  # fmt: skip
    await tool.run({"command": "sleep 30 > /dev/null 2>&1 &"})  # the jail stays up
    on_command_lines = [
        entry
        for entry in os.listdir("/proc")
        if entry.isdigit() and _cmdline_has(int(entry), (canary, allowed))
    ]
    assert on_command_lines == []
    tool.close()


def _cmdline_has(pid: int, needles: tuple[str, ...]) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return any(needle.encode() in cmdline for needle in needles)


@pytest.mark.parametrize("how", ["timeout", "cancel", "pipe held"])
async def test_a_killed_command_takes_its_jail_with_it(
    bwrap: str, tmp_path: Path, reefline_home: Path, leftovers: list[str], how: str
) -> None:
    """A setsid escapee in a reused jail dies on timeout, on cancel, and when a background
    job holds the output pipe after bash exited, with what earlier commands left in the
    background; the next command gets a fresh jail."""
    marker = sleeper_marker()
    leftovers.append(marker)
    tool = make_tool(tmp_path, reefline_home, "workspace-write")
    await tool.run({"command": f"sleep {marker} > /dev/null 2>&1 &"})
    first = await namespace_of(tool)
    assert len(await wait_for_processes(f"sleep\0{marker}")) == 1  # the earlier job lives
    command = f"setsid sleep {marker} > /dev/null 2>&1 & echo started; sleep {marker}"
    if how == "timeout":
        out = await tool.run({"command": command, "timeout": 1})
        assert "timed out after 1s" in out.content and "started" in out.content
    elif how == "cancel":
        task = asyncio.ensure_future(tool.run({"command": command}))
        await wait_for_processes(f"sleep\0{marker}", 3)
        task.cancel()
        with pytest.raises(ToolInterrupted):
            await task
    else:
        out = await tool.run({"command": f"{command} &"})
        assert out.exit_code == 0 and "[background processes kept the output open" in out.content
    assert await gone(marker) == []
    assert await namespace_of(tool) != first
    tool.close()


async def test_a_jail_killed_from_outside_is_said_and_replaced(
    bwrap: str, tmp_path: Path, reefline_home: Path, leftovers: list[str]
) -> None:
    """The runner (the jail's PID 1) SIGKILLed by someone else: the running command gets a
    clear error; a jail found dead between commands is replaced without a word."""
    marker = sleeper_marker()
    leftovers.append(marker)
    tool = make_tool(tmp_path, reefline_home, "workspace-write")
    task = asyncio.ensure_future(tool.run({"command": f"echo before; sleep {marker}"}))
    [sleeper] = await wait_for_processes(f"sleep\0{marker}")
    bash = host_parent(sleeper)
    os.kill(host_parent(bash), signal.SIGKILL)  # bash's parent is the runner
    out = await asyncio.wait_for(task, 5)
    assert out.is_error and out.exit_code is None and not out.interrupted
    assert out.content.startswith("before\n")
    assert "[the sandbox stopped unexpectedly" in out.content
    assert "the next command starts a new sandbox]" in out.content
    assert await gone(marker) == []
    out = await tool.run({"command": "echo again"})
    assert out.content.startswith("again\n") and out.exit_code == 0
    # Between commands: the orphaned job's parent is the runner.
    await tool.run({"command": f"sleep {marker} > /dev/null 2>&1 &"})
    [sleeper] = await wait_for_processes(f"sleep\0{marker}")
    os.kill(host_parent(sleeper), signal.SIGKILL)
    assert await gone(marker) == []
    out = await tool.run({"command": "echo still"})
    assert out.content.startswith("still\n") and out.exit_code == 0
    tool.close()


async def test_commands_run_at_once_get_a_jail_each(
    bwrap: str, tmp_path: Path, reefline_home: Path, leftovers: list[str]
) -> None:
    """Never from the agent (it runs calls in turn), but the tool allows it: a command
    started while another runs gets a jail of its own, ended with it; the kept one stays."""
    marker = sleeper_marker()
    leftovers.append(marker)
    tool = make_tool(tmp_path, reefline_home, "workspace-write")
    left = f"sleep {marker} > /dev/null 2>&1 & {NAMESPACE}; sleep 0.3"
    outs = await asyncio.gather(*(tool.run({"command": left}) for _ in range(3)))
    spaces = [out.content.splitlines()[0] for out in outs]
    assert all(out.exit_code == 0 for out in outs) and len(set(spaces)) == 3
    assert len(await gone(marker)) == 1  # the kept jail's job; the others died with theirs
    assert await namespace_of(tool) in spaces
    tool.close()
    assert await gone(marker) == []


async def test_a_jail_that_cannot_start_is_said(
    bwrap: str, tmp_path: Path, reefline_home: Path
) -> None:
    """The runner's interpreter hidden in the jail (a setting, not our code): the command
    is not run, the model is told why at once; the next shape that can start does."""
    interpreter = Path(sys.executable).parent
    sandbox = choose("workspace-write", hidden=[reefline_home, interpreter])
    spill = reefline_home / "sessions" / "this.spill"
    tool = BashTool(cwd=tmp_path, spill_dir=spill, policy="auto", sandbox=sandbox)
    out = await asyncio.wait_for(tool.run({"command": "touch ran"}), 15)
    assert out.is_error and out.sandbox is None
    assert out.content.startswith("Could not run: cannot start the sandbox: bwrap: ")
    assert sys.executable in out.content and not (tmp_path / "ran").exists()
    tool.sandbox = choose("workspace-write", hidden=[reefline_home])
    assert (await tool.run({"command": "touch ran"})).exit_code == 0
    assert (tmp_path / "ran").exists()
    tool.close()


async def test_closing_the_tool_ends_its_jail(
    bwrap: str, tmp_path: Path, reefline_home: Path, leftovers: list[str]
) -> None:
    """What runs in the background in the jail ends with the tool: closed, or dropped."""
    for how in ("closed", "dropped"):
        marker = sleeper_marker()
        leftovers.append(marker)
        tool = make_tool(tmp_path, reefline_home, "read-only")
        await tool.run({"command": f"setsid sleep {marker} > /dev/null 2>&1 &"})
        await wait_for_processes(f"sleep\0{marker}")
        cwd_dirs = list((reefline_home / "sessions" / "this.spill").glob(".cwd-*"))
        assert cwd_dirs and all(path.is_dir() for path in cwd_dirs)
        if how == "closed":
            tool.close()
        else:
            del tool
            gc.collect()
        assert await gone(marker) == [], how
        assert not [p for p in cwd_dirs if p.exists()], how


REEFLINE_LIKE = """
import asyncio, sys
from pathlib import Path
from tools.bash import BashTool
from tools.sandbox import choose

async def main(work, spill, marker):
    tool = BashTool(cwd=work, spill_dir=spill, policy="auto", sandbox=choose("workspace-write"))
    await tool.run({"command": f"setsid sleep {marker} > /dev/null 2>&1 &"})
    print("ready", flush=True)
    if sys.argv[4] == "busy":
        await tool.run({"command": f"sleep {marker}"})
    else:
        await asyncio.sleep(60)

asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]))
"""


@pytest.mark.parametrize("when", ["idle", "busy"])
def test_a_sigkilled_reefline_leaves_no_jail_behind(
    bwrap: str, tmp_path: Path, leftovers: list[str], when: str
) -> None:
    """A process using the tool is SIGKILLed (nothing of ours runs after that): its jail
    and everything in it die, between commands and during one."""
    marker = sleeper_marker()
    leftovers.append(marker)
    proc = subprocess.Popen(
        [sys.executable, "-c", REEFLINE_LIKE, str(tmp_path), str(tmp_path / "spill"), marker,
         when],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        asyncio.run(wait_for_processes(f"sleep\0{marker}", 2 if when == "busy" else 1))
        proc.kill()
        proc.wait(10)
        assert asyncio.run(gone(marker, within=5)) == []
    finally:
        proc.kill()
        proc.wait(10)
