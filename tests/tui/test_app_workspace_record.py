"""The app's status line says the session's first workspace snapshot while it runs in the
background, and stops saying it once it is done (a ``git`` that holds the snapshot's store
until the test has seen the line: no timing assumed)."""

from __future__ import annotations

import os

import pytest

from tests.git_gate import held_git, opened_at_last
from tests.tui.conftest import UI
from tui.widgets.status import StatusLine


async def test_the_status_line_says_the_first_snapshot_while_it_runs(
    ui: UI, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(1500):
        folder = ui.workdir / f"pkg{n // 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{n}.txt").write_text(f"line {n}\n")
    gate = ui.home.parent / "gate"
    monkeypatch.setenv("PATH", f"{held_git(ui.home.parent, gate)}{os.pathsep}{os.environ['PATH']}")
    with opened_at_last(gate):
        app = ui.app(ui.runtime(approve="auto", sandbox="off"))
        async with app.run_test(size=(160, 30)) as pilot:
            status = app.query_one(StatusLine)
            said = "recording the workspace (1,502 files)"
            await ui.until(pilot, lambda: said in status.render().plain)
            gate.touch()
            await ui.until(pilot, lambda: "recording" not in status.render().plain)
            assert "ready" in status.render().plain
