"""Model and bash output is shown literally: never parsed as markup; escapes and control
characters written out as escape notation, never sent to the terminal."""

from __future__ import annotations

from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.widgets.entries import UserEntry
from tui.widgets.reply import AssistantEntry
from tui.widgets.tool_card import ToolCard

HOSTILE = "[/] close [b]x[/b] [link=http://evil]y[/link] \x1b[31mred\x1b[0m \x1b]0;title\x07 bell\x07 nul\x00 end"
COMMAND = r"printf '[/] [b]bold[/b] \033[31mred\033[0m \033]2;pwned\007 ok\n'"


async def test_hostile_text_renders_literally(ui: UI, openai_server: OpenAIServer) -> None:
    """Brackets survive as text; escapes and control characters are shown, never obeyed."""
    openai_server.push(
        {
            "reasoning": "thinking [/] about [i]it[/i]",
            "tool_calls": [{"name": "bash", "arguments": {"command": COMMAND}}],
        },
        {"text": HOSTILE},
    )
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=32_000
    )
    app = ui.app(runtime)
    async with app.run_test(size=(100, 30)) as pilot:
        await ui.type(pilot, "say [/] and [b]hi[/b]")
        await ui.settle(pilot)
        assert app.query(UserEntry).first().text == "say [/] and [b]hi[/b]"
        card = app.query_one(ToolCard)
        assert card.output == "[/] [b]bold[/b] red  ok"
        assert "[/] [b]bold[/b]" in card.query_one(".output").render().plain
        assert card._border_title is not None
        assert card._border_title.plain.startswith("$ printf '[/] [b]bold[/b]")
        entries = list(app.query(AssistantEntry))
        assert entries[0].parts()[1] == "thinking [/] about [i]it[/i]"
        answer = entries[-1].parts()[0]
        assert answer.startswith("[/] close [b]x[/b]")
        assert "red" in answer and "bell" in answer and "end" in answer
        for text in app.main.transcript.dump():
            assert not any(ord(c) < 32 and c not in "\n\t" for c in text), text
        assert "\\x1b]0;title\\x07 bell\\x07 nul\\x00 end" in answer
        await pilot.press("ctrl+y")
        # The clipboard gets what was shown: no hidden payload rides along.
        assert app.clipboard.startswith("[/] close")
        assert "\x1b" not in app.clipboard and "\\x1b]0;title" in app.clipboard


async def test_a_crash_report_shows_no_locals(
    ui: UI, openai_server: OpenAIServer, monkeypatch, capfd
) -> None:
    """Textual's own crash report printed every frame's locals; here a frame holds the
    model's error context, which holds the API key. The app's report shows none."""
    import pytest

    key = "sk-reefline-CRASH-0b7e1d"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)  # where the key goes
    runtime = ui.runtime(base_url=openai_server.base_url, model="m", demo=False)
    app = ui.app(runtime)
    with pytest.raises(RuntimeError, match="boom"):
        async with app.run_test(size=(100, 30)) as pilot:

            def boom(context=runtime.model._errors, secret=key) -> None:  # type: ignore[attr-defined]
                raise RuntimeError("boom")

            app.call_later(boom)
            await pilot.pause(0.2)
    report = capfd.readouterr().err
    assert "boom" in report and "RuntimeError" in report
    assert key not in report and "secret =" not in report


async def test_a_server_that_wants_a_key_and_got_none_says_which_flag_in_the_app(
    ui: UI, openai_server: OpenAIServer, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """OPENAI_API_KEY is exported, but --base-url names another server: it gets no key, and
    its 401 is answered in the transcript with the flag that would send one."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-for-openai-only-0123456789")
    openai_server.push({"status": 401, "message": "Missing bearer token"})
    runtime = ui.runtime(base_url=openai_server.base_url, model="m", demo=False,
                         context_window=32_000)  # fmt: skip
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "hi")
        shown = "\n".join(app.main.transcript.dump())
        assert "--api-key-env NAME" in shown, shown
    assert "authorization" not in openai_server.headers[0]
