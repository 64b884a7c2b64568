"""A big paste in the app (the real app under Pilot, the loopback server as the model): the
prompt shows it as one ``[pasted N lines]`` token, the model gets the whole text, and the
transcript shows it folded, unfolded by Enter or a click."""

from __future__ import annotations

from textual import events

from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.widgets.entries import UserEntry
from tui.widgets.prompt import PromptArea

PASTED = "\n".join(f"line {n} of the log" for n in range(1, 201))


async def test_a_200_line_paste_is_one_token_sent_whole_and_folded(
    ui: UI, openai_server: OpenAIServer
) -> None:
    runtime = ui.runtime(base_url=openai_server.base_url, model="my-local", demo=False)
    openai_server.push({"text": "I read it."})
    app = ui.app(runtime)
    async with app.run_test(size=(80, 24)) as pilot:
        prompt = app.query_one(PromptArea)
        await ui.type(pilot, "why does this fail? ", enter=False, keys=True)
        app.post_message(events.Paste(PASTED))
        await ui.until(pilot, lambda: "[pasted" in prompt.text)
        assert prompt.text == "why does this fail? [pasted 200 lines]"
        await ui.press(pilot, "enter")
        await ui.until(pilot, lambda: len(openai_server.requests) == 1)
        await ui.settle(pilot)
        [user] = [m for m in openai_server.requests[0]["messages"] if m["role"] == "user"][-1:]
        assert user["content"].endswith("why does this fail? " + PASTED)
        [entry] = app.query(UserEntry)
        shown = entry.render().plain
        assert "line 200 of the log" not in shown
        assert "▸ 197 more lines · show all" in shown
        entry.focus()
        await ui.press(pilot, "enter")
        assert "line 200 of the log" in entry.render().plain
        await pilot.click(entry)
        assert "line 200 of the log" not in entry.render().plain


async def test_the_paste_token_goes_with_backspace_and_opens_with_ctrl_o(ui: UI) -> None:
    app = ui.app()
    async with app.run_test(size=(80, 24)) as pilot:
        prompt = app.query_one(PromptArea)
        prompt.focus()
        app.post_message(events.Paste(PASTED))
        await ui.until(pilot, lambda: prompt.text == "[pasted 200 lines]")
        await ui.press(pilot, "backspace")
        assert prompt.text == ""
        app.post_message(events.Paste("short\npaste"))  # under 12 lines: as it is
        await ui.until(pilot, lambda: prompt.text == "short\npaste")
        app.post_message(events.Paste(PASTED))
        await ui.until(pilot, lambda: "[pasted 200 lines]" in prompt.text)
        await ui.press(pilot, "ctrl+o")
        assert prompt.text == "short\npaste" + PASTED
