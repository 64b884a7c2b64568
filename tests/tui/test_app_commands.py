"""Slash commands typed in the prompt (everything except /compact, see test_app_compaction)."""

from __future__ import annotations

from textual.widgets import OptionList

from agent.log.store import list_sessions
from tests.tui.conftest import UI
from tui.screens.context import ContextScreen
from tui.screens.sessions import SessionsScreen
from tui.widgets.entries import Notice, UserEntry
from tui.widgets.header import AppHeader
from tui.widgets.prompt import CompletionMenu, PromptArea
from tui.widgets.timeline import TimelinePanel


def notices(app) -> list[str]:
    return [n.plain for n in app.query(Notice)]


async def test_help_lists_every_command_and_the_keys(ui: UI) -> None:
    """/help prints the commands with their usage and the key bindings."""
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "/help")
        text = notices(app)[-1]
        for usage in (
            "/compact [--dry-run] [focus]",
            "/resume <name>",
            "/approve ask|auto|deny",
            "/quit",
        ):
            assert usage in text
        assert "esc interrupt" in text


async def test_an_unknown_command_suggests_the_closest(ui: UI) -> None:
    """A typo gets a clear message naming the closest command; nothing is sent."""
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "/compcat")
        assert notices(app)[-1] == "Unknown command /compcat — did you mean /compact?"
        await ui.send(pilot, "/zzzzzz")
        assert "type /help" in notices(app)[-1]
        assert not app.query(UserEntry)
        await ui.send(pilot, "/etc/hosts is a path")
        assert [u.text for u in app.query(UserEntry)] == ["/etc/hosts is a path"]


def menu_rows(app) -> list[str]:
    menu = app.query_one(CompletionMenu)
    return [str(menu.get_option_at_index(i).prompt) for i in range(menu.option_count)]


async def test_completion_menu_as_you_type(ui: UI) -> None:
    """Typing /co opens a menu under the prompt with each match and what it does; ↓ moves,
    Tab takes the highlighted row; Enter on a whole command sends it; Esc closes the menu."""
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("/", "c", "o")
        menu = app.query_one(CompletionMenu)
        prompt = app.query_one(PromptArea)
        assert menu.display and not menu.has_focus
        rows = menu_rows(app)
        assert rows[0].startswith("/compact") and rows[1].startswith("/context"), rows
        assert "what fills the context window" in rows[1], rows  # with what it does
        assert menu.region.y > prompt.region.y  # under the prompt
        await pilot.press("down", "tab")
        assert prompt.text == "/context "
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ContextScreen)
        assert not menu.display
        await pilot.press("escape")
        await ui.until(pilot, lambda: not isinstance(app.screen, ContextScreen))
        await pilot.press("/", "h")
        assert menu.display
        await pilot.press("escape")
        assert not menu.display and prompt.text == "/h"


async def test_enter_on_a_command_without_arguments_runs_it(ui: UI) -> None:
    """Enter on the highlighted /context row runs it at once (no second Enter); on /compact,
    which takes a focus, it only puts it in the prompt."""
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "explore the README.md")
        prompt = app.query_one(PromptArea)
        await pilot.press("/", "c", "o", "down", "enter")
        await ui.until(pilot, lambda: isinstance(app.screen, ContextScreen))
        assert prompt.text == ""
        await pilot.press("escape")
        await ui.until(pilot, lambda: not isinstance(app.screen, ContextScreen))
        await pilot.press("/", "c", "o", "enter")
        assert prompt.text == "/compact "
        assert not app.main.view.timeline.records  # nothing ran


async def test_completion_menu_completes_arguments(ui: UI) -> None:
    """/approve offers its modes, /model the known models, /resume the stored sessions (with
    their first prompts); Enter takes the highlighted one and, taken whole, runs it."""
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "explore the README.md")
        first = app.runtime.session.id
        await app.run_slash("new")
        await ui.until(pilot, lambda: app.runtime.session.id != first)
        prompt = app.query_one(PromptArea)
        prompt.focus()
        await pilot.press(*"/appr", "enter")  # takes "/approve ", then its modes show
        assert prompt.text == "/approve "
        assert [r.split()[0] for r in menu_rows(app)] == ["ask", "auto", "deny"]
        await pilot.press("down", "enter")
        assert prompt.text == "/approve auto"
        prompt.clear()
        await pilot.press(*"/model gpt-4.")
        rows = menu_rows(app)
        assert rows and all(r.startswith("gpt-4.") for r in rows), rows
        prompt.clear()
        await pilot.press(*"/resume ")
        rows = menu_rows(app)
        [row] = rows
        assert row.startswith(f"{first}  just now · ") and row.endswith("explore the README.md")
        await pilot.press("enter")
        assert prompt.text == f"/resume {first}"
        await pilot.press("enter")
        await ui.until(pilot, lambda: app.runtime.session.id == first)


async def test_context_shows_the_breakdown_and_session_totals(ui: UI) -> None:
    """/context opens a modal with each category and the provider-reported totals."""
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "look")
        await ui.send(pilot, "/context")
        screen = app.screen
        assert isinstance(screen, ContextScreen)
        text = "\n".join(line.plain for line in screen.lines)
        for label in ("system prompt", "tool schemas", "tool results", "input", "output", "cached"):
            assert label in text
        assert app.runtime.meter.session_usage.input > 0
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ContextScreen)


async def test_timeline_toggles_the_panel(ui: UI) -> None:
    """/timeline and ctrl+t show and hide the panel."""
    app = ui.app()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(TimelinePanel)
        assert not panel.display
        await ui.send(pilot, "/timeline")
        assert panel.display and panel.region.width > 0
        assert "No compactions yet" in panel.query_one(".empty").render().plain
        await pilot.press("ctrl+t")
        assert not panel.display


async def test_new_sessions_and_resume(ui: UI) -> None:
    """/new starts a fresh session; /sessions picks one; /resume <id> reopens it."""
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "first session")
        first = app.runtime.session.id
        await ui.send(pilot, "/new")
        second = app.runtime.session.id
        assert second != first and not app.query(UserEntry)
        assert second in app.query_one(AppHeader).render().plain
        await ui.send(pilot, "second session")
        await ui.send(pilot, "/sessions")
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        ids = [o.id for o in screen.query_one(OptionList).options]
        assert set(ids) == {first, second}
        rows = [str(o.prompt) for o in screen.query_one(OptionList).options]
        assert any("first session" in row for row in rows)  # each row shows its first prompt
        screen.query_one(OptionList).highlighted = ids.index(first)
        await pilot.press("enter")
        await ui.until(pilot, lambda: app.runtime.session.id == first)
        await pilot.pause()
        assert [u.text for u in app.query(UserEntry)] == ["first session"]
        await ui.send(pilot, f"/resume {second}")
        assert app.runtime.session.id == second
        await ui.send(pilot, "/resume no-such-session")
        assert app.runtime.session.id == second
        assert "cannot resume" in notices(app)[-1]
        assert "/sessions" in notices(app)[-1] and "reefline sessions" not in notices(app)[-1]
        assert len(list_sessions(ui.home)) == 2


async def test_a_session_nothing_happened_in_leaves_nothing_behind(ui: UI) -> None:
    """/new, /new, then quitting: the untouched sessions are not left on disk."""
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "keep this one")
        kept = app.runtime.session.id
        await ui.send(pilot, "/new")
        await ui.send(pilot, "/new")
        assert len(list_sessions(ui.home)) == 2  # the first /new's is gone already
        await ui.type(pilot, "/quit")
        await pilot.pause()
    app.runtime.close()
    assert [s.id for s in list_sessions(ui.home)] == [kept]
    assert {p.stem for p in (ui.home / "sessions").glob("*.spill")} <= {kept}


async def test_model_in_the_demo_changes_no_label(ui: UI) -> None:
    """The offline demo answers whatever the name: /model says so and relabels nothing."""
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "/model")
        assert "scripted-demo" in notices(app)[-1]
        await ui.send(pilot, "/model gpt-4o-mini")
        assert "offline demo model answers here" in notices(app)[-1]
        assert app.runtime.model_name == "scripted-demo"
        assert "gpt-4o-mini" not in app.query_one(AppHeader).render().plain


async def test_model_and_approve(ui: UI, openai_server) -> None:  # type: ignore[no-untyped-def]
    """/model switches the model for the next request; /approve sets the bash policy."""
    runtime = ui.runtime(base_url=openai_server.base_url, model="m", demo=False)
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "/model")
        assert "Model: m" in notices(app)[-1]
        await ui.send(pilot, "/model other-model")
        assert app.runtime.agent.model_name == "other-model"
        assert "other-model" in app.query_one(AppHeader).render().plain
        await ui.send(pilot, "/approve deny")
        assert app.runtime.bash.policy == "deny"
        await ui.send(pilot, "/approve sometimes")
        assert "Usage: /approve" in notices(app)[-1] and app.runtime.bash.policy == "deny"
        await ui.send(pilot, "/approve")
        assert "deny" in notices(app)[-1]


async def test_quit(ui: UI) -> None:
    """/quit leaves the app."""
    app = ui.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ui.type(pilot, "/quit")
        await pilot.pause()
        assert not app.is_running


async def test_history_recalls_and_persists(ui: UI) -> None:
    """Up recalls earlier prompts; the history survives a restart."""
    app = ui.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ui.send(pilot, "/approve")
        await ui.send(pilot, "/model")
        prompt = app.query_one(PromptArea)
        await pilot.press("up")
        assert prompt.text == "/model"
        await pilot.press("up")
        assert prompt.text == "/approve"
        await pilot.press("down", "down")
        assert prompt.text == ""
    again = ui.app()
    async with again.run_test(size=(100, 30)) as pilot:
        await pilot.press("up")
        assert again.query_one(PromptArea).text == "/model"


async def test_palette_offers_the_slash_commands(ui: UI) -> None:
    """The command palette lists every slash command."""
    app = ui.app()
    async with app.run_test(size=(100, 30)):
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for name in ("/compact", "/context", "/timeline", "/sessions", "/quit"):
            assert name in titles


async def test_rewind_goes_back_to_before_a_prompt_in_a_new_session(ui: UI) -> None:
    """/rewind (or Esc twice on an empty prompt) lists the prompts; picking one opens a new
    session forked just before it, with that prompt in the input; the old one is kept."""
    from tui.screens.rewind import RewindScreen
    from tui.widgets.prompt import PromptArea

    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "explore the README.md")
        await ui.send(pilot, "now parser.py")
        parent = app.runtime.session
        parent_bytes = parent.path.read_bytes()
        prompt = app.query_one(PromptArea)
        prompt.focus()
        await pilot.press("escape", "escape")
        await ui.until(pilot, lambda: isinstance(app.screen, RewindScreen))
        options = app.screen.query_one(OptionList)
        assert "now parser.py" in str(options.get_option_at_index(0).prompt)  # newest first
        await pilot.press("enter")
        await ui.until(pilot, lambda: app.runtime.session.id != parent.id)
        await pilot.pause()
        assert prompt.text == "now parser.py"
        assert [u.text for u in app.query(UserEntry)] == ["explore the README.md"]
        assert "Back before turn 2" in notices(app)[-1]
        assert any(f"Forked from session {parent.id}" in n for n in notices(app))
        assert not any("Session resumed." in n for n in notices(app))  # the fork says it
        assert parent.path.read_bytes() == parent_bytes
        assert {s.id for s in list_sessions(ui.home)} == {parent.id, app.runtime.session.id}


async def test_rewind_says_at_once_that_it_is_going_back(ui: UI) -> None:
    """From the pick to the new session on screen, the status line says it is going back
    (and offers no Esc it would ignore) and the prompt already holds the text to edit, read-
    only so that nothing goes to the session being left; after, it is ready and editable."""
    from tui.screens.rewind import RewindScreen
    from tui.widgets.status import StatusLine

    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "explore the README.md")
        await ui.send(pilot, "now parser.py")
        parent = app.runtime.session.id
        prompt = app.query_one(PromptArea)
        status = app.query_one(StatusLine)
        seen: list[tuple[str, str, bool, str, str]] = []

        def saw(activity: str) -> None:  # called as the status changes, not polled
            line = status.render().plain
            seen.append((activity, prompt.text, prompt.read_only, app.runtime.session.id, line))

        app.watch(status, "activity", saw, init=False)
        await app.run_slash("rewind")
        await ui.until(pilot, lambda: isinstance(app.screen, RewindScreen))
        await pilot.press("enter")
        await ui.until(pilot, lambda: app.runtime.session.id != parent)
        await ui.until(pilot, lambda: status.activity == "idle")
        activity, text, read_only, session, line = seen[0]
        assert (activity, text, read_only, session) == ("rewinding", "now parser.py", True, parent)
        assert "going back" in line and "to before turn 2" in line and "esc" not in line, line
        assert not prompt.read_only and prompt.text == "now parser.py"
        assert "Back before turn 2" in notices(app)[-1]


async def test_sessions_lists_a_log_it_cannot_parse_as_unreadable(ui: UI) -> None:
    """A stored log with a line nested deeper than the JSON parser goes: /sessions still
    opens, that row says the log is unreadable, and picking it says why."""
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "a good session")
        good = app.runtime.session.id
        deep = "[" * 50_000 + "]" * 50_000  # past any recursion limit a test run sets
        bad = ui.home / "sessions" / "20000101-000000-bad000.jsonl"
        bad.write_text(
            '{"seq": 0, "type": "session/start", "time": 1.0, "data": {"id": "x", "version": 1, '
            '"cwd": "/", "created_at": 1.0}}\n'
            f'{{"seq": 1, "type": "user/message", "data": {{"content": {deep}}}}}\n'
        )
        await ui.send(pilot, "/sessions")
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        options = screen.query_one(OptionList).options
        rows = {o.id: str(o.prompt) for o in options}
        assert "(unreadable log: line 2 is nested too deeply)" in rows[bad.stem]
        assert "a good session" in rows[good]
        screen.query_one(OptionList).highlighted = [o.id for o in options].index(bad.stem)
        await pilot.press("enter")
        await ui.settle(pilot)
        assert app.runtime.session.id == good
        assert "cannot resume" in notices(app)[-1] and f"{bad.name}:2" in notices(app)[-1]
