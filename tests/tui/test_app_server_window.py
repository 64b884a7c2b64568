"""The app with a server that says its own window, does not report usage, cuts a reply,
and states its limit in an overflow error: what the gauge, /context and the transcript say."""

from __future__ import annotations

import json
from typing import Any

from textual.widgets import Static

from tests.agent.test_whole_replies import chat, whole
from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tests.wire import Exchange, ReplayServer
from tui.screens.context import ContextScreen
from tui.widgets.entries import Notice
from tui.widgets.gauge import TokenGauge
from tui.widgets.timeline import TimelinePanel


def notices(app: Any) -> list[str]:
    return [n.plain for n in app.query(Notice)]


async def test_the_gauge_and_context_say_the_window_came_from_the_server(ui: UI) -> None:
    props = json.dumps({"default_generation_settings": {"n_ctx": 3072}})
    with ReplayServer([Exchange("GET", "/props", None, 200, "application/json", [props])]) as srv:
        runtime = ui.runtime(base_url=srv.base_url, model="smollm2", demo=False)
        assert runtime.windows.current.label() == "window 8,192 from table"  # before asking
        app = ui.app(runtime)
        async with app.run_test(size=(160, 40)) as pilot:
            gauge = app.query_one(TokenGauge)
            await ui.until(
                pilot, lambda: gauge.reading is not None and gauge.reading.window == 3072
            )
            assert "window from server" in gauge.render().plain
            await ui.send(pilot, "/context")
            assert isinstance(app.screen, ContextScreen)
            text = "\n".join(line.plain for line in app.screen.lines)
            assert "window         3,072 from server (llama.cpp /props n_ctx)" in text


async def test_usage_not_reported_cut_replies_and_a_lowered_window(
    ui: UI, openai_server: OpenAIServer
) -> None:
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=32_000
    )
    app = ui.app(runtime)
    message = "request (40000 tokens) exceeds the available context size (16000 tokens)"
    openai_server.push(
        {"text": "Once upon a time", "usage": False, "finish_reason": "length"},
        {"status": 400, "message": message, "type": "exceed_context_size_error"},
        # Whether the overflow's compaction asks for a summary and retries depends on the
        # history's size (paths included): every reply it may take reports no usage.
        {"text": "## Primary request and intent\n- a story", "usage": False},
        {"text": "fine", "usage": False},
    )
    async with app.run_test(size=(140, 40)) as pilot:
        await ui.send(pilot, "a story")
        assert any("cut off at the output cap" in n for n in notices(app))
        await ui.send(pilot, "more")
        assert any("16,000 tokens" in n for n in notices(app))  # said once, where one looks
        gauge = app.query_one(TokenGauge)
        assert gauge.reading is not None and gauge.reading.window == 16_000
        assert "window from the server's error" in gauge.render().plain
        await ui.send(pilot, "/context")
        text = "\n".join(line.plain for line in app.screen.lines)  # type: ignore[attr-defined]
        assert "not reported by the server" in text


async def test_a_resumed_session_still_shows_the_cut(ui: UI, openai_server: OpenAIServer) -> None:
    settings = {"base_url": openai_server.base_url, "model": "m", "demo": False}
    first = ui.runtime(**settings, context_window=32_000)
    openai_server.push({"text": "Once upon a time", "finish_reason": "length"})
    app = ui.app(first)
    async with app.run_test(size=(120, 30)) as pilot:
        await ui.send(pilot, "a story")
        live = app.main.transcript.dump()
    session_id = first.session.id
    first.close()
    again = ui.app(ui.runtime(**settings, context_window=32_000, resume=session_id))
    async with again.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        resumed = again.main.transcript.dump()
    cut = [line for line in live if "cut off at the output cap" in line]
    assert cut and [line for line in resumed if "cut off at the output cap" in line] == cut


async def test_the_http_client_is_closed_when_the_app_and_the_repl_end(
    ui: UI, openai_server: OpenAIServer
) -> None:
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=32_000
    )
    app = ui.app(runtime)
    async with app.run_test(size=(100, 30)) as pilot:
        await ui.send(pilot, "hi")
        assert not runtime.model._client.is_closed()  # type: ignore[attr-defined]
    assert runtime.model._client.is_closed()  # type: ignore[attr-defined]
    other = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=32_000
    )
    await other.aclose()
    assert other.model._client.is_closed()  # type: ignore[attr-defined]


async def test_a_hostile_servers_notice_is_shown_not_obeyed(ui: UI) -> None:
    osc = "\x1b]52;c;ZXZpbA==\x07"
    refusal = json.dumps({"error": {"message": f"Automatic streaming tool choice {osc}"}})
    exchanges = [chat(500, "application/json", refusal), whole("ok")]
    with ReplayServer(exchanges) as srv:
        runtime = ui.runtime(base_url=srv.base_url, model="m", demo=False, context_window=8000)
        app = ui.app(runtime)
        async with app.run_test(size=(140, 40)) as pilot:
            await ui.send(pilot, "hi")
            shown = "\n".join(app.main.transcript.dump())
    assert "whole replies" in shown and "\\x1b]52;c;" in shown
    assert "\x1b" not in shown and "\x07" not in shown


async def test_the_panel_and_the_gauge_agree_when_the_server_says_the_window(ui: UI) -> None:
    """A model no table knows: the window comes from the server after start; the panel's
    word on automatic compaction follows the gauge (one source: the gauge's reading)."""
    props = json.dumps({"default_generation_settings": {"n_ctx": 3072}})
    with ReplayServer([Exchange("GET", "/props", None, 200, "application/json", [props])]) as srv:
        runtime = ui.runtime(base_url=srv.base_url, model="a-model-no-table-knows", demo=False)
        app = ui.app(runtime)
        async with app.run_test(size=(160, 40)) as pilot:
            gauge = app.query_one(TokenGauge)
            panel = app.query_one(TimelinePanel)
            await ui.until(
                pilot, lambda: gauge.reading is not None and gauge.reading.window == 3072
            )
            await pilot.pause()
            assert "auto at 80%" in gauge.render().plain
            hint = panel.query_one(".empty", Static).render().plain
            assert "is off" not in hint
            assert "runs when the context reaches 80% of the window" in hint
