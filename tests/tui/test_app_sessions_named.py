"""The app under Pilot against the loopback server: ``/rename``, the ``/resume`` picker and
menu showing name, age, size, folder and last prompt (this folder's sessions first), and the
one line a resume says."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList

from agent.log.events import SessionName
from agent.log.session import Session
from compact.contract.registry import build_registry
from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.screens.sessions import SessionsScreen
from tui.text import short_path
from tui.widgets.entries import Notice
from tui.widgets.header import AppHeader
from tui.widgets.prompt import CompletionMenu, PromptArea


def notices(app) -> list[str]:
    return [n.plain for n in app.query(Notice)]


def served(ui: UI, server: OpenAIServer):
    return ui.runtime(base_url=server.base_url, model="m", demo=False, context_window=32_000)


async def test_rename_names_the_session_in_its_log(ui: UI, openai_server: OpenAIServer) -> None:
    app = ui.app(served(ui, openai_server))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "/rename")
        assert notices(app)[-1] == "This session has no name: /rename NAME gives it one."
        await ui.send(pilot, "/rename   api   work ")
        said = notices(app)[-1]
        assert said.startswith("Session named 'api work' (kept once a prompt is sent): ")
        assert said.endswith("--resume 'api work' goes on with it.")
        await ui.send(pilot, "plan the api")
        await ui.send(pilot, "/rename 20261203-101010-abcdef")
        assert "Not renamed: that is shaped like a session id" in notices(app)[-1]
        await ui.send(pilot, "/rename api v2")
        assert "session api v2" in app.query_one(AppHeader).render().plain
        await ui.send(pilot, "/rename")
        assert notices(app)[-1] == "This session is named 'api v2'. /rename NAME renames it."
        names = [e.data.name for e in app.runtime.session.events if isinstance(e, SessionName)]
        assert names == ["api work", "api v2"]  # the log is the truth; the newest counts


async def test_the_picker_shows_name_age_size_folder_and_last_prompt_this_folder_first(
    ui: UI, openai_server: OpenAIServer, tmp_path: Path
) -> None:
    # A session started in another folder, more recent than the ones here.
    other = tmp_path / "other"
    other.mkdir()
    app = ui.app(served(ui, openai_server))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "plan the api")
        await ui.send(pilot, "now the tests")
        await ui.send(pilot, "/rename api work")
        named = app.runtime.session.id
        await ui.send(pilot, "/new")
        await ui.send(pilot, "a second one")
        current = app.runtime.session.id
        elsewhere = Session.create(ui.home, cwd=str(other), registry=build_registry())
        elsewhere.append("user/message", {"content": "far away"})
        elsewhere.close()
        # A session with no prompt is never offered.
        Session.create(ui.home, cwd=str(ui.workdir), registry=build_registry()).close()

        await ui.send(pilot, "/sessions")
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        options = screen.query_one(OptionList).options
        assert [o.id for o in options] == [current, named, elsewhere.id]
        rows = {o.id: str(o.prompt) for o in options}
        folder = short_path(str(ui.workdir))
        head, last = rows[named].split("\n")
        assert head.startswith("api work  just now · 2 turns · ")
        assert head.endswith(f"KiB · {folder}  {named}")
        assert last.strip() == "now the tests"
        assert "(this session)" in rows[current]
        assert rows[elsewhere.id].split("\n")[0].endswith(short_path(str(other)))
        screen.query_one(OptionList).highlighted = 1
        await pilot.press("enter")
        await ui.until(pilot, lambda: app.runtime.session.id == named)
        await ui.settle(pilot)
        host = openai_server.base_url.split("//")[1].split("/")[0]
        assert any(
            n.startswith(f"Resumed 'api work' ({named}): 2 turns · no checkpoint · m at {host}")
            for n in notices(app)
        ), notices(app)

        prompt = app.query_one(PromptArea)
        prompt.focus()
        await pilot.press(*"/resume a")
        menu = app.query_one(CompletionMenu)
        rows_shown = [str(menu.get_option_at_index(i).prompt) for i in range(menu.option_count)]
        assert rows_shown == [], rows_shown  # only the open one is named "a…"
        prompt.clear()
        await ui.send(pilot, "/new")
        await pilot.press(*"/resume api")
        rows_shown = [str(menu.get_option_at_index(i).prompt) for i in range(menu.option_count)]
        assert len(rows_shown) == 1 and rows_shown[0].startswith("api work  just now · ")
        await pilot.press("enter")
        assert prompt.text == "/resume api work"
        await pilot.press("enter")
        await ui.until(pilot, lambda: app.runtime.session.id == named)
        await ui.send(pilot, "/resume API WORK")
        assert notices(app)[-1] == f"Already in session {named}."
