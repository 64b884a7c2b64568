"""Cache misses in the app: the gauge says the newest reply's cache share, a forgotten
prefix gets one notice, and /context counts the miss; a server with no cache figure gets no
notice and "not reported" (the app, the real client, the loopback server with a prefix
cache, the real log)."""

from __future__ import annotations

from typing import Any

from agent.formatting import fmt_tokens
from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tests.tui.test_app_usage import gauge_text
from tui.screens.context import ContextScreen
from tui.widgets.entries import Notice

LONG = "please read this: " + "lorem ipsum dolor " * 300
WARNING = "the provider served "


def warnings(app: Any) -> list[str]:
    return [n.plain for n in app.query(Notice) if WARNING in n.plain]


def context_text(app: Any) -> str:
    assert isinstance(app.screen, ContextScreen)
    return "\n".join(line.plain for line in app.screen.lines)


async def test_the_gauge_says_the_last_share_and_a_forgotten_prefix_is_said_once(
    ui: UI, openai_server: OpenAIServer
) -> None:
    openai_server.prefix_cache = True
    openai_server.push({"text": "one"}, {"text": "two"}, {"text": "three", "cached_tokens": 0})
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="gpt-4.1", demo=False, context_window=64_000
    )
    app = ui.app(runtime)
    async with app.run_test(size=(200, 40)) as pilot:
        await ui.send(pilot, LONG)
        await ui.until(pilot, lambda: " · cache 0% · " in gauge_text(app))  # nothing before it
        await ui.send(pilot, "second")
        await ui.until(pilot, lambda: " · cache 9" in gauge_text(app))  # the prefix, served
        assert not warnings(app)
        await ui.send(pilot, "third")
        await ui.until(pilot, lambda: bool(warnings(app)))
        assert " · cache 0% · " in gauge_text(app)
        reply = [e for e in runtime.session.events if e.type == "assistant/message"][-1]
        expected = reply.data.cache_expected  # type: ignore[attr-defined]
        assert expected is not None and expected.prefix_tokens > 1024
        [said] = warnings(app)
        assert said.startswith(f"{WARNING}0% of a prefix it had "), said
        assert said.endswith(f" ago: {fmt_tokens(expected.prefix_tokens)} tokens billed in full")

        await ui.send(pilot, "/context")
        billed = f"{expected.prefix_tokens:,} tokens billed in full that the cache should have"
        assert f"misses         1: {billed} served (~<$0.01 est.)" in context_text(app)


async def test_no_cache_figure_no_notice_and_not_reported(
    ui: UI, openai_server: OpenAIServer
) -> None:
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="gpt-4.1", demo=False, context_window=64_000
    )
    app = ui.app(runtime)
    async with app.run_test(size=(200, 40)) as pilot:
        await ui.send(pilot, LONG)
        await ui.send(pilot, "second")
        await ui.until(pilot, lambda: " · cache not reported" in gauge_text(app))
        assert not warnings(app)
        await ui.send(pilot, "/context")
        assert "misses         not reported" in context_text(app)
