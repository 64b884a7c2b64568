"""In the app, ``/rewind`` after a command changed a file: the list, then the question
"conversation only / conversation and files" (the command layer's one Choose effect, shown
as the choice modal), then the files put back (Pilot against the loopback server)."""

from __future__ import annotations

from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.screens.choice import ChoiceScreen
from tui.screens.rewind import RewindScreen
from tui.widgets.entries import Notice


async def test_rewind_asks_and_puts_the_files_back(ui: UI, openai_server: OpenAIServer) -> None:
    notes = ui.workdir / "notes.txt"
    notes.write_text("one\n")
    openai_server.agent_commands = ["echo two >> notes.txt"]
    runtime = ui.runtime(base_url=openai_server.base_url, model="m", demo=False, sandbox="off")
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "add a line")
        assert notes.read_text() == "one\ntwo\n"
        parent = app.runtime.session.id
        await ui.type(pilot, "/rewind")
        await ui.until(pilot, lambda: isinstance(app.screen, RewindScreen))
        await pilot.press("enter")
        await ui.until(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("down", "enter")
        await ui.until(pilot, lambda: app.runtime.session.id != parent)
        await ui.settle(pilot)
        await ui.until(pilot, lambda: app.main.status.activity == "idle")
        assert notes.read_text() == "one\n"
        said = [n.plain for n in app.query(Notice)][-1]
        assert "Back before turn 1" in said and "Put back 1 file" in said, said
