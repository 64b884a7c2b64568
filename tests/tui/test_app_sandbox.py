"""The sandbox in the app and in ``--plain``: the status line says it beside the approval
policy, the approval question says how the command will run, ``/context`` says what it
allows. Real bash under real bubblewrap, on the offline demo model."""

from __future__ import annotations

import asyncio
import io
import time
import uuid
from pathlib import Path

import pytest

from agent.log.events import ToolResult
from tests.tui.conftest import UI
from tui.line.repl import PlainRepl
from tui.screens.approval import ApprovalScreen
from tui.screens.context import ContextScreen


def results(app) -> list[ToolResult]:
    return [e for e in app.runtime.session.events if isinstance(e, ToolResult)]


def asking(app) -> bool:
    return isinstance(app.screen, ApprovalScreen) and app.screen.armed


async def test_the_status_line_says_the_sandbox_and_follows_the_policy(bwrap: str, ui: UI) -> None:
    app = ui.app(ui.runtime(approve="auto"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        line = app.main.status.render().plain
        assert "commands run without asking · sandbox workspace-write" in line
        await ui.send(pilot, "look around")
        assert {r.data.sandbox for r in results(app)} == {"workspace-write"}
        await ui.type(pilot, "/approve ask")
        await pilot.pause()
        assert " · sandbox off" in app.main.status.render().plain


async def test_off_is_always_shown(ui: UI) -> None:
    app = ui.app(ui.runtime(approve="ask", sandbox="off"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        # Within the 80 columns: the hint after it is what a narrow terminal cuts.
        assert " · sandbox off" in app.main.status.render().plain[:80]


async def test_the_dialog_says_how_the_command_will_run(bwrap: str, ui: UI) -> None:
    """Unsandboxed while each command is asked about; "always" runs this one as the dialog
    said and the next ones in the sandbox, and the notice and the status line say so."""
    app = ui.app(ui.runtime(approve="ask"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "what is here in README.md")
        await ui.until(pilot, lambda: asking(app))
        said = app.screen.query_one(".jail").render().plain
        assert said == "runs unsandboxed: as you, with your files and your network"
        await pilot.press("ctrl+a")
        await ui.settle(pilot)
        modes = [r.data.sandbox for r in results(app)]
        assert modes[0] == "off" and set(modes[1:]) == {"workspace-write"} and len(modes) > 1
        notices = "\n".join(app.main.transcript.dump())
        assert "The next ones run sandboxed (workspace-write, no network)." in notices
        assert "sandbox workspace-write" in app.main.status.render().plain


async def test_a_chosen_sandbox_is_said_in_the_dialog_and_in_context(bwrap: str, ui: UI) -> None:
    app = ui.app(ui.runtime(approve="ask", sandbox="read-only", sandbox_network=True))
    async with app.run_test(size=(120, 40)) as pilot:
        assert "sandbox read-only + network" in app.main.status.render().plain
        await ui.type(pilot, "hi there")
        await ui.until(pilot, lambda: asking(app))
        said = app.screen.query_one(".jail").render().plain
        assert said == "runs sandboxed (read-only, network allowed)"
        await pilot.press("y")
        await ui.until(pilot, lambda: len(results(app)) == 1)
        assert results(app)[0].data.sandbox == "read-only"
        while app.busy:  # deny what else the demo asks to run
            await ui.until(pilot, lambda: asking(app) or not app.busy)
            if asking(app):
                await pilot.press("n")
            await pilot.pause()
        await ui.send(pilot, "/context")
        assert isinstance(app.screen, ContextScreen)
        text = "\n".join(line.plain for line in app.screen.lines)
        assert "sandbox        read-only: the filesystem read-only, secrets hidden" in text
        assert "network allowed" in text


async def test_plain_asks_with_the_sandbox_said(bwrap: str, ui: UI) -> None:
    """``--plain`` on a terminal: the question says how the command will run, "always"
    says how the next ones will."""
    runtime = ui.runtime(approve="ask")
    lines = iter(["what is in README.md", "/quit"])
    asked: list[str] = []

    async def read(prompt: str) -> str | None:
        if prompt.startswith("[y]"):
            asked.append(prompt)
            return "always"
        return next(lines)

    out = io.StringIO()
    repl = PlainRepl(runtime, read, out, interactive=True)
    assert await asyncio.wait_for(repl.run(), 30) == 0
    text = out.getvalue()
    assert "Commands run unsandboxed; /context says more." in text
    assert "Run this command, unsandboxed?" in text and len(asked) == 1
    assert "this one unsandboxed, the next ones sandboxed (workspace-write, no network)" in text
    modes = [e.data.sandbox for e in runtime.session.events if isinstance(e, ToolResult)]
    assert modes[0] == "off" and set(modes[1:]) == {"workspace-write"} and len(modes) > 1


async def test_a_session_that_ends_takes_its_sandbox_with_it(bwrap: str, ui: UI) -> None:
    """A server a sandboxed command left running in the background lives on in the session's
    sandbox, and ends when the session does (``/new``, ``/resume`` and quitting close it)."""
    marker = f"{1000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6:06d}"
    runtime = ui.runtime(approve="auto")
    out = await runtime.bash.run({"command": f"setsid sleep {marker} > /dev/null 2>&1 &"})
    assert out.sandbox == "workspace-write"
    deadline = time.monotonic() + 5
    while not sleepers(marker) and time.monotonic() < deadline:  # it starts in the background
        await asyncio.sleep(0.05)
    assert sleepers(marker)
    runtime.close()
    deadline = time.monotonic() + 5
    while sleepers(marker) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert sleepers(marker) == []


def sleepers(marker: str) -> list[str]:
    """Live ``sleep MARKER`` processes (zombies are dead), by PID."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if cmdline == f"sleep\0{marker}\0".encode() and state not in ("Z", "X"):
            found.append(entry.name)
    return found


async def test_without_bwrap_the_app_says_so(
    ui: UI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PATH without bubblewrap (the environment, not our code): a notice at start, the
    status line and /context say there is none."""
    empty = tmp_path / "no-bwrap"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    app = ui.app(ui.runtime(approve="auto"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        notices = "\n".join(app.main.transcript.dump())
        assert notices.count("No sandbox: bubblewrap is not installed (no `bwrap` on PATH)") == 1
        assert "commands run without asking · no sandbox" in app.main.status.render().plain
        await ui.send(pilot, "/context")
        text = "\n".join(line.plain for line in app.screen.lines)
        assert "sandbox        off: no sandbox here — bubblewrap is not installed" in text
