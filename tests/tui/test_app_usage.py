"""What the session used and cost, in the app: the gauge line and /context, against the
loopback server reporting usage in its wire shapes (the app, the real client, the real log)."""

from __future__ import annotations

from typing import Any

from agent.formatting import fmt_tokens
from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.screens.context import ContextScreen
from tui.widgets.gauge import TokenGauge

OPENAI = {
    "prompt_tokens": 40_000,
    "completion_tokens": 1_000,
    "prompt_tokens_details": {"cached_tokens": 30_000},
}
# gpt-4.1 at $2.00 / $0.50 cached / $8.00 per million, two such calls:
# (2 × 10,000 × 2.00 + 2 × 30,000 × 0.50 + 2 × 1,000 × 8.00) / 1e6 = $0.086
GPT41_COST = "~$0.09 est."


def gauge_text(app: Any) -> str:
    return app.query_one(TokenGauge).render().plain


async def test_the_gauge_says_input_cached_share_and_estimated_cost(
    ui: UI, openai_server: OpenAIServer
) -> None:
    runtime = ui.runtime(base_url=openai_server.base_url, model="gpt-4.1", demo=False)
    openai_server.push({"text": "one", "usage": OPENAI}, {"text": "two", "usage": OPENAI})
    app = ui.app(runtime)
    async with app.run_test(size=(200, 40)) as pilot:
        assert "cached" not in gauge_text(app)  # nothing used yet: nothing said
        await ui.send(pilot, "first")
        await ui.send(pilot, "second")
        await ui.until(pilot, lambda: "in 80k" in gauge_text(app))
        assert "in 80k · cache 75% · " + GPT41_COST in gauge_text(app)
        await ui.send(pilot, "/context")
        assert isinstance(app.screen, ContextScreen)
        text = "\n".join(line.plain for line in app.screen.lines)
        assert "input          80,000 tokens (2 model calls)" in text
        assert "cached         75% (60,000 tokens reported cached)" in text
        assert f"cost           {GPT41_COST} (estimated from built-in list prices)" in text


async def test_no_cache_figure_and_no_price_are_said_not_invented(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """A local model: usage without a cache figure, no price. The gauge says the cache was
    not reported and shows no cost; /context says the cost is unknown."""
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="my-local", demo=False, context_window=64_000
    )
    openai_server.push({"text": "one", "usage": {"prompt_tokens": 20_000, "completion_tokens": 5}})
    app = ui.app(runtime)
    async with app.run_test(size=(200, 40)) as pilot:
        await ui.send(pilot, "first")
        await ui.until(pilot, lambda: "in 20k" in gauge_text(app))
        assert "in 20k · cache not reported" in gauge_text(app)
        assert "$" not in gauge_text(app)
        await ui.send(pilot, "/context")
        text = "\n".join(line.plain for line in app.screen.lines)  # type: ignore[attr-defined]
        assert "cached         not reported" in text
        assert "cost           unknown" in text and "$" not in text


async def test_a_configured_price_gives_a_model_outside_the_table_a_cost(
    ui: UI, openai_server: OpenAIServer
) -> None:
    prices = {"my-local": {"input": 1.0, "cached_input": 0.1, "output": 2.0}}
    runtime = ui.runtime(
        base_url=openai_server.base_url,
        model="my-local",
        demo=False,
        context_window=64_000,
        prices=prices,
    )
    usage = {"prompt_tokens": 1_000_000, "completion_tokens": 500_000,
             "prompt_cache_hit_tokens": 600_000, "prompt_cache_miss_tokens": 400_000}  # fmt: skip
    openai_server.push({"text": "one", "usage": usage})
    app = ui.app(runtime)
    async with app.run_test(size=(200, 40)) as pilot:
        await ui.send(pilot, "first")
        # 400,000 × 1.0 + 600,000 × 0.1 + 500,000 × 2.0 = $1.46 (per million)
        await ui.until(pilot, lambda: "in 1M" in gauge_text(app))
        assert "in 1M · cache 60% · ~$1.46 est." in gauge_text(app)
        await ui.send(pilot, "/context")
        text = "\n".join(line.plain for line in app.screen.lines)  # type: ignore[attr-defined]
        assert "~$1.46 est. (estimated from the prices in your config)" in text
        assert "list prices" not in text


async def test_a_narrower_gauge_sheds_the_least_useful_parts_and_keeps_the_cost(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """At 120 columns (the timeline panel open) the gauge drops where the window came from
    and "measured" before the cost; at 80 the input and cached share go, the cost stays."""
    runtime = ui.runtime(base_url=openai_server.base_url, model="gpt-4.1", demo=False)
    openai_server.push({"text": "one", "usage": OPENAI})
    app = ui.app(runtime)
    async with app.run_test(size=(120, 30)) as pilot:
        await ui.send(pilot, "first")
        await ui.until(pilot, lambda: "in 40k" in gauge_text(app))
        text = gauge_text(app)
        assert "auto at 80%" in text and "window from" not in text, text
        assert text.endswith(" · in 40k · cache 75% · ~$0.04 est."), text
        await pilot.resize_terminal(80, 30)
        await ui.until(pilot, lambda: "cached" not in gauge_text(app))
        text = gauge_text(app)
        assert "auto at 80%" in text and text.endswith(" · ~$0.04 est."), text
        await pilot.resize_terminal(60, 30)
        await ui.until(pilot, lambda: "auto at" not in gauge_text(app))
        assert gauge_text(app).endswith("% · ~$0.04 est."), gauge_text(app)


async def test_the_timeline_row_and_summary_say_what_a_compaction_cost_and_saved(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """/compact on the loopback server: its summary call's usage (DeepSeek's shape) is on
    the timeline row, and the summary modal says what it saved and its estimated cost."""
    from textual.widgets import OptionList

    from tui.screens.summary import SummaryScreen
    from tui.widgets.timeline import TimelinePanel

    runtime = ui.runtime(
        base_url=openai_server.base_url, model="deepseek-chat", demo=False, context_window=8000
    )
    small = {"prompt_tokens": 900, "completion_tokens": 10}
    for n in range(3):
        openai_server.push({"text": f"answer {n}", "words": 300, "usage": small})
    summary = {"prompt_tokens": 3000, "completion_tokens": 100,
               "prompt_cache_hit_tokens": 2500, "prompt_cache_miss_tokens": 500}  # fmt: skip
    openai_server.push({"text": "## Primary request and intent\n- three answers", "usage": summary})
    app = ui.app(runtime)
    async with app.run_test(size=(160, 44)) as pilot:
        for n in range(3):
            await ui.send(pilot, f"question {n}")
        await ui.send(pilot, "/compact")
        panel = app.query_one(TimelinePanel)
        [record] = panel.records
        assert record.status == "done"
        row = str(panel.query_one(OptionList).options[0].prompt)
        assert "3k in · 83% cached" in row
        assert record.reread_tokens is not None  # and what the rewrite cost the cache
        assert f"{fmt_tokens(record.reread_tokens)} re-read" in row
        panel.query_one(OptionList).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, SummaryScreen)
        facts = app.screen.query_one(".facts").render().plain
        assert record.saved_tokens is not None and record.saved_tokens > 0
        assert f"saved     {fmt_tokens(record.saved_tokens)} tokens of context" in facts
        # deepseek-chat: 500 × 0.28 + 2,500 × 0.028 + 100 × 0.42, per million: < $0.01
        reread = fmt_tokens(record.reread_tokens)
        assert (
            "cost      summary calls 3k in (2.5k cached), 100 out; then "
            f"{reread} re-read uncached (the checkpoint and the kept tail) · ~<$0.01 est."
        ) in facts
