"""The sandbox through real bash under real bubblewrap: no mocks, every file in tmp_path.

Each confinement claim is checked against the same command run unconfined, so a sandbox
that silently did nothing fails the test. Where bubblewrap cannot run here, the tests that
need it skip and say why (``pytest -rs``).
"""

from __future__ import annotations

import asyncio
import contextlib
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

from tools.base import SandboxMode, ToolInterrupted
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
