"""Bash approval in ``ask`` mode: the modal, and the turn waiting for the answer."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Button

from agent.log.events import ToolResult, ToolStart
from tests.e2e.conftest import REEFLINE
from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.screens.approval import ApprovalScreen
from tui.widgets.prompt import PromptArea
from tui.widgets.tool_card import ToolCard


def results(app) -> list[ToolResult]:
    return [e for e in app.runtime.session.events if isinstance(e, ToolResult)]


def asking(app) -> bool:
    """The approval dialog is up and taking keys."""
    return isinstance(app.screen, ApprovalScreen) and app.screen.armed


class Clock:
    """The approval dialog's time, moved by the test (nothing here waits on real time)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def pause(self, seconds: float = 1.0) -> None:
        """The person stops typing for ``seconds``."""
        self.now += seconds


def steering(app) -> list[str]:
    """What was sent as steering: still queued, or delivered (in the log)."""
    queued = list(app.runtime.agent.pending_steering)
    logged = [e.data.content for e in app.runtime.session.events if e.type == "steering/message"]
    return logged + queued


async def test_allow_once_runs_the_command_and_asks_again(ui: UI) -> None:
    """The modal shows the command in full; the turn waits; allow once asks again next time."""
    app = ui.app(ui.runtime(approve="ask"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "hi there")
        await ui.until(pilot, lambda: asking(app))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        assert screen.command == "ls -la"
        assert screen.query_one(".command").render().plain == "$ ls -la"
        await pilot.pause(0.2)
        assert results(app) == []  # the turn waits for the answer
        assert any(isinstance(e, ToolStart) for e in app.runtime.session.events)
        assert app.main.status.activity == "approval"
        await pilot.press("y")
        await ui.until(pilot, lambda: len(results(app)) == 1)
        assert results(app)[0].data.exit_code == 0
        await ui.until(pilot, lambda: asking(app))
        await pilot.click("#once")
        await ui.settle(pilot)
        assert [r.data.exit_code for r in results(app)] == [0, 0]
        assert app.runtime.bash.policy == "ask"


async def test_always_switches_the_session_to_auto(ui: UI) -> None:
    """ "Always for this session" runs this and every later command without asking."""
    app = ui.app(ui.runtime(approve="ask"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "what is here in README.md")
        await ui.until(pilot, lambda: asking(app))
        await pilot.press("a")  # not a deliberate key for "always": typing, for the prompt
        await pilot.pause(0.1)
        assert isinstance(app.screen, ApprovalScreen) and app.runtime.bash.policy == "ask"
        assert app.query_one(PromptArea).text == "a"
        await ui.until(pilot, lambda: asking(app))  # a quiet moment after the typing
        await pilot.press("ctrl+a")
        await ui.settle(pilot)
        assert app.runtime.bash.policy == "auto"
        assert len(results(app)) == 4 and all(r.data.exit_code == 0 for r in results(app))
        # ...and the screen says so: a notice where it happened, and the status line.
        assert any("commands run without asking" in line for line in app.main.transcript.dump())
        assert "commands run without asking" in app.main.status.render().plain
        await ui.type(pilot, "/approve ask")
        await pilot.pause()
        assert "without asking" not in app.main.status.render().plain


async def test_deny_tells_the_model_and_the_card_shows_it(ui: UI) -> None:
    """Deny (button or Esc) returns a refusal to the model; nothing runs."""
    app = ui.app(ui.runtime(approve="ask"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "hi there")
        await ui.until(pilot, lambda: asking(app))
        await pilot.click("#deny")
        await ui.until(pilot, lambda: asking(app))
        await pilot.press("escape")
        await ui.settle(pilot)
        denied = results(app)
        assert len(denied) == 2
        assert all(r.data.is_error and "declined" in r.data.content for r in denied)
        cards = list(app.query(ToolCard))
        assert all(c.is_error and "declined" in c.output for c in cards)
        assert all(
            Content.from_markup(c.border_subtitle).plain.startswith("declined") for c in cards
        )
        # ...and so does the export of the session, by the real subcommand.
        out = subprocess.run(
            [REEFLINE, "export", app.runtime.session.id],
            env={**os.environ, "REEFLINE_HOME": str(ui.home)},
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert out.stdout.count("*declined*") == 2 and "*error*" not in out.stdout


async def test_the_modal_buttons_fit_at_80_columns(ui: UI) -> None:
    """At 80×24 the three choices are all on screen."""
    app = ui.app(ui.runtime(approve="ask"))
    async with app.run_test(size=(80, 24)) as pilot:
        await ui.type(pilot, "hi there")
        await ui.until(pilot, lambda: asking(app))
        await pilot.pause()
        for button in app.screen.query(Button):
            region = button.region
            assert region.width > 0 and region.right <= 80 and region.bottom <= 24, button.id
        await pilot.press("n")
        await ui.until(pilot, lambda: asking(app))
        await pilot.press("n")
        await ui.settle(pilot)


HIDDEN = "ls -la\x1b]0;\ntouch X\x07"


def hostile_runtime(ui: UI, server: OpenAIServer, command: str):
    server.push({"tool_calls": [{"name": "bash", "arguments": {"command": command}}]})
    server.push({"text": "done"})
    return ui.runtime(
        base_url=server.base_url, model="m", demo=False, context_window=32_000, approve="ask"
    )


async def test_the_dialog_and_the_card_show_exactly_what_runs(
    ui: UI, openai_server: OpenAIServer, workdir: Path
) -> None:
    """An escape sequence that would swallow the rest of the line (OSC … BEL) and a second
    line: both shown, written out, numbered; nothing that runs is hidden."""
    app = ui.app(hostile_runtime(ui, openai_server, HIDDEN))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "list the files")
        await ui.until(pilot, lambda: asking(app))
        screen = app.screen
        assert screen.command == HIDDEN
        assert screen.query_one(".command").render().plain == (
            "1 │ ls -la\\x1b]0;\n2 │ touch X\\x07"
        )
        shape = screen.query_one(".shape").render().plain
        assert "2 lines" in shape and "escapes" in shape
        await pilot.press("n")
        await ui.settle(pilot)
        assert not (workdir / "X").exists()
        card = app.query_one(ToolCard)
        assert card.query_one(".command").display
        assert "2 │ touch X\\x07" in card.query_one(".command").render().plain
        assert card._border_title is not None and "(+1 more line)" in card._border_title.plain


@pytest.mark.parametrize(
    ("blank", "said"),
    [("", "⋮ 80 empty lines"), (" \t", "⋮ 80 blank lines (spaces and tabs only)")],
    ids=["empty", "spaces"],
)
async def test_empty_lines_cannot_push_the_command_out_of_sight(
    ui: UI, openai_server: OpenAIServer, workdir: Path, blank: str, said: str
) -> None:
    """80 empty (or blank) lines, then what runs: the run is one numbered row saying how
    many, so the line that runs is in view, numbered 81, without scrolling; what runs is
    the command byte for byte."""
    command = f"{blank}\n" * 80 + "touch X"
    app = ui.app(hostile_runtime(ui, openai_server, command))
    async with app.run_test(size=(80, 24)) as pilot:
        await ui.type(pilot, "go")
        await ui.until(pilot, lambda: asking(app))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen) and screen.command == command
        shape = screen.query_one(".shape")
        assert "81 lines, 80 of them empty" in shape.render().plain
        assert shape.region.height > 0 and shape.region.bottom <= 24  # on screen
        assert screen.query_one(".command").render().plain == f" 1 │ {said}\n81 │ touch X"
        box = screen.query_one(".command-box", VerticalScroll)
        assert box.max_scroll_y == 0  # all of it in view, nothing to scroll to
        assert box.region.height >= 2 and box.region.bottom <= 24
        await pilot.press("y")
        await ui.settle(pilot)
    assert (workdir / "X").exists()


async def test_typing_ahead_goes_to_the_prompt_not_to_the_dialog(ui: UI) -> None:
    """Steering typed while the agent works keeps going into the prompt when the dialog
    opens: the "a" of "also" is not "always", "y" is not "yes", Enter sends the steering."""
    app = ui.app(ui.runtime(approve="ask"))
    clock = app.approver.clock = Clock()  # the dialog has just opened, until the test says
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "hi there")
        await ui.until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        assert not app.screen.armed
        await pilot.press(*"yes also", "backspace")
        prompt = app.query_one(PromptArea)
        assert prompt.text == "yes als"
        assert app.runtime.bash.policy == "ask" and results(app) == []
        await pilot.press("o", "enter")
        assert prompt.text == ""
        clock.pause()
        await ui.until(pilot, lambda: asking(app))
        await pilot.press("n")
        clock.pause()
        await ui.until(pilot, lambda: len(results(app)) >= 1)
        assert results(app)[0].data.is_error  # denied, not approved by the typing
        assert "yes also" in steering(app)
        await pilot.press("ctrl+c")  # the rest of the turn is not this test's
        await ui.settle(pilot)
        assert app.runtime.bash.policy == "ask"


SED = "sed -i s/grep/rg/ notes.txt"
"""What the model asks to run (it edits a file: an answer that counts)."""


def sed_runtime(ui: UI, server: OpenAIServer):
    server.push({"tool_calls": [{"name": "bash", "arguments": {"command": SED}}]})
    server.push({"text": "done"})
    return ui.runtime(
        base_url=server.base_url, model="m", demo=False, context_window=32_000, approve="ask"
    )


@pytest.mark.parametrize(
    "sentence",
    ["why not rg", "use this instead", "no, use rg", "yes but check it first", "always rg"],
    ids=["y-in-why", "n-in-instead", "no-first", "yes-first", "always-first"],
)
async def test_prose_typed_at_the_dialog_never_answers_it(
    ui: UI, openai_server: OpenAIServer, workdir: Path, sentence: str
) -> None:
    """The dialog has been up a while and is taking keys; the person types a sentence for
    the agent (its first letter after a pause), pauses, and presses Enter. None of it
    answers the dialog: the sentence shows in the prompt, and Enter sends it from there as a
    queued message. Only then, after a quiet moment, ``y`` on its own approves."""
    (workdir / "notes.txt").write_text("use grep\n")
    app = ui.app(sed_runtime(ui, openai_server))
    clock = app.approver.clock = Clock()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "tidy the notes")
        await ui.until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        clock.pause()  # the dialog has been up a second
        await ui.until(pilot, lambda: asking(app))
        dialog = app.screen
        await pilot.press(*sentence)
        clock.pause()  # and then a pause, before Enter
        await pilot.pause()
        prompt = app.query_one(PromptArea)
        assert app.screen is dialog and results(app) == []
        assert prompt.text == sentence  # in the prompt, where it shows
        assert "Typing goes to the prompt" in dialog.query_one(".hint").render().plain
        await pilot.press("enter")  # from the prompt: a queued message
        await ui.until(pilot, lambda: steering(app) == [sentence])
        assert prompt.text == "" and app.runtime.bash.policy == "ask"
        assert app.screen is dialog and results(app) == []
        clock.pause()
        await ui.until(pilot, lambda: asking(app))
        await pilot.press("y")
        await pilot.pause()
        assert app.screen is dialog  # a lone "y" acts once nothing followed it
        clock.pause()
        await ui.until(pilot, lambda: len(results(app)) == 1)
        assert results(app)[0].data.exit_code == 0
        await ui.settle(pilot)
    assert (workdir / "notes.txt").read_text() == "use rg\n"


async def test_enter_ending_a_sentence_does_not_press_the_focused_button(
    ui: UI, openai_server: OpenAIServer, workdir: Path
) -> None:
    """A button is focused (Tab, deliberately); the person then types a sentence for the
    agent and ends it with Enter: the Enter sends the sentence, it presses nothing. After a
    quiet moment, Enter on the focused button answers."""
    (workdir / "notes.txt").write_text("use grep\n")
    app = ui.app(sed_runtime(ui, openai_server))
    clock = app.approver.clock = Clock()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "tidy the notes")
        await ui.until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        clock.pause()
        await ui.until(pilot, lambda: asking(app))
        dialog = app.screen
        for _ in range(5):  # Tab, to "Allow once"
            await pilot.press("tab")
            if isinstance(dialog.focused, Button) and dialog.focused.id == "once":
                break
        assert isinstance(dialog.focused, Button) and dialog.focused.id == "once"
        await pilot.press(*"the tests pass", "enter")
        assert app.screen is dialog and results(app) == []
        await ui.until(pilot, lambda: steering(app) == ["the tests pass"])
        assert app.query_one(PromptArea).text == ""
        clock.pause()
        await pilot.press("enter")  # now deliberate: the focused button
        await ui.until(pilot, lambda: len(results(app)) == 1)
        assert results(app)[0].data.exit_code == 0
        await ui.settle(pilot)
    assert app.runtime.bash.policy == "ask"
    assert (workdir / "notes.txt").read_text() == "use rg\n"


INVISIBLE = "\u202e\u200b\u00ad\U000e0041\u180e\u3164"
"""A bidi override, a zero-width space, a soft hyphen, a tag letter, the Mongolian vowel
separator and a Hangul filler: each draws nothing (or reorders what follows)."""


async def test_invisible_characters_are_written_out_and_run_byte_for_byte(
    ui: UI, openai_server: OpenAIServer, workdir: Path
) -> None:
    name = f"A{INVISIBLE}B"
    command = f"printf %s '{name}' > made"
    app = ui.app(hostile_runtime(ui, openai_server, command))
    shown = "A\\u202e\\u200b\\xad\\U000e0041\\u180e\\u3164B"
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "make it")
        await ui.until(pilot, lambda: asking(app))
        screen = app.screen
        assert screen.query_one(".command").render().plain == f"$ printf %s '{shown}' > made"
        assert "escapes" in screen.query_one(".shape").render().plain
        await pilot.press("y")
        await ui.settle(pilot)
        card = app.query_one(ToolCard)
        assert card.query_one(".command").display
        assert shown in card.query_one(".command").render().plain
        assert card._border_title is not None and shown in card._border_title.plain
        for invisible in INVISIBLE:
            assert invisible not in card._border_title.plain
    assert (workdir / "made").read_bytes() == name.encode()


async def test_ctrl_c_at_the_approval_dialog_says_the_command_never_ran(ui: UI) -> None:
    """Interrupting while the dialog asks: the call did nothing, and neither the log nor the
    card may say its effects may be partial."""
    app = ui.app(ui.runtime(approve="ask"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "hi there")
        await ui.until(pilot, lambda: asking(app))
        await pilot.press("ctrl+c")
        await ui.settle(pilot)
        [result] = results(app)
        assert "may be partial" not in result.data.content
        assert "not run" in result.data.content
        card = app.query_one(ToolCard)
        assert "not run" in card.output
        assert Content.from_markup(card.border_subtitle).plain.startswith("not run")


async def test_resume_takes_the_resumed_sessions_policy_not_the_current_one(ui: UI) -> None:
    """/resume from a session that runs commands unasked into one left in ask: the dialog
    asks again (it ran the command without asking); and back, the auto session is auto."""
    from agent.log.session import Session
    from compact.contract.registry import build_registry

    asking_one = Session.create(ui.home, cwd=str(ui.workdir), registry=build_registry())
    asking_one.append("user/message", {"content": "an earlier question"})
    asking_one.close()
    app = ui.app(ui.runtime(approve="ask"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "/approve auto")
        await ui.send(pilot, "hello")  # a session with no prompt is not kept
        auto_id = app.runtime.session.id
        await ui.send(pilot, f"/resume {asking_one.id}")
        assert app.runtime.session.id == asking_one.id
        assert app.runtime.bash.policy == "ask"
        assert app.main.status.policy == "ask"
        await ui.type(pilot, "hi there")
        await ui.until(pilot, lambda: asking(app))
        await pilot.press("ctrl+c")
        await ui.settle(pilot)
        await ui.send(pilot, f"/resume {auto_id}")
        assert app.runtime.session.id == auto_id
        assert app.runtime.bash.policy == "auto"


async def test_a_lone_letter_answers_at_once_with_enter_and_can_be_taken_back(
    ui: UI, openai_server: OpenAIServer, workdir: Path
) -> None:
    """After a quiet moment ``y`` waits for the quiet moment after it; Backspace takes it
    back (nothing reaches the prompt), and ``n`` then Enter denies at once."""
    (workdir / "notes.txt").write_text("use grep\n")
    app = ui.app(sed_runtime(ui, openai_server))
    clock = app.approver.clock = Clock()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "tidy the notes")
        await ui.until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        clock.pause()
        await ui.until(pilot, lambda: asking(app))
        dialog = app.screen
        await pilot.press("y")
        assert "y: allow once" in dialog.query_one(".hint").render().plain
        await pilot.press("backspace")
        clock.pause()
        await pilot.pause()
        assert app.screen is dialog and results(app) == []
        assert app.query_one(PromptArea).text == ""
        await pilot.press("n", "enter")  # the clock stands still: Enter answers, not time
        await ui.until(pilot, lambda: len(results(app)) == 1)
        assert results(app)[0].data.is_error and "declined" in results(app)[0].data.content
        await ui.settle(pilot)
    assert (workdir / "notes.txt").read_text() == "use grep\n"
    assert steering(app) == []


async def test_the_typing_hint_keeps_the_buttons_in_view_at_80x24(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """A command that fills its box, at 80×24: once typing shows the hint, the buttons and
    the hint are still all on screen."""
    app = ui.app(hostile_runtime(ui, openai_server, "\n" * 80 + "touch X" + "\nls -la" * 12))
    clock = app.approver.clock = Clock()
    async with app.run_test(size=(80, 24)) as pilot:
        await ui.type(pilot, "go")
        await ui.until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        clock.pause()
        await ui.until(pilot, lambda: asking(app))
        await pilot.press(*"why not")
        await pilot.pause()
        hint = app.screen.query_one(".hint")
        assert "Typing goes to the prompt" in hint.render().plain
        for widget in [hint, *app.screen.query(Button)]:
            region = widget.region
            assert region.height > 0 and region.right <= 80 and region.bottom <= 24, widget
        await pilot.press("escape")
        await ui.settle(pilot)
