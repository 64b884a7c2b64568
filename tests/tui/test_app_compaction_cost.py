"""The app says what a compaction will cost and save before it runs — the gauge's
"compacting soon" (its tooltip), ``/context`` and ``/compact --dry-run`` — and what one that
ran cost, in its summary modal; against the loopback server, in money only where the
model's price is known."""

from __future__ import annotations

import re
from typing import Any

import pytest
from textual.widgets import OptionList

from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.screens.context import ContextScreen
from tui.screens.summary import SummaryScreen
from tui.widgets.entries import Notice
from tui.widgets.gauge import TokenGauge
from tui.widgets.timeline import TimelinePanel

PRICES = {"m": {"input": 100.0, "cached_input": 10.0, "output": 400.0}}
MONEY = re.compile(r" · ~\$[\d.,]+ est\.")


def notices(app: Any) -> list[str]:
    return [n.plain for n in app.query(Notice)]


@pytest.mark.parametrize("priced", [False, True], ids=["no price", "priced"])
async def test_the_gauge_context_dry_run_and_summary_modal_say_the_cost(
    ui: UI, openai_server: OpenAIServer, priced: bool
) -> None:
    openai_server.summarize = True
    openai_server.default.words = 250  # every answer grows the context by about a step
    runtime = ui.runtime(
        base_url=openai_server.base_url,
        model="m",
        demo=False,
        context_window=12_000,
        prices=PRICES if priced else {},
    )
    app = ui.app(runtime)
    async with app.run_test(size=(200, 50)) as pilot:
        gauge = app.query_one(TokenGauge)
        for n in range(30):  # until the gauge says compacting is near
            await ui.send(pilot, f"question {n}")
            if gauge.reading is not None and gauge.reading.soon:
                break
        assert gauge.reading is not None and gauge.reading.soon, gauge.render().plain
        assert "compacting soon" in gauge.render().plain
        # Hovering says what it costs and saves (the line has no room for it).
        tip = str(gauge.tooltip)
        assert tip.startswith("Compacting soon: costs summary call ~"), tip
        assert "; saves ~" in tip and "until the next automatic compaction" in tip, tip
        assert bool(MONEY.search(tip)) is priced, tip
        outlook = tip.removeprefix("Compacting soon: ")
        # /context says the same, at the same moment.
        await ui.send(pilot, "/context")
        assert isinstance(app.screen, ContextScreen)
        body = "\n".join(line.plain for line in app.screen.lines)
        assert f"compacting soon {outlook}" in body, body
        await pilot.press("escape")
        await pilot.pause()
        # The dry run prices /compact as every view does.
        await ui.send(pilot, "/compact --dry-run")
        dry = notices(app)[-1]
        cost = next(line for line in dry.splitlines() if line.startswith("Cost: "))
        assert cost.startswith("Cost: summary call ~"), dry
        assert bool(MONEY.search(cost)) is priced, cost
        # After it ran, its summary modal says what it cost, from the log.
        await ui.send(pilot, "/compact")
        panel = app.query_one(TimelinePanel)
        await ui.until(pilot, lambda: any(r.status == "done" for r in panel.records))
        panel.query_one(OptionList).focus()
        panel.query_one(OptionList).highlighted = len(panel.records) - 1
        await pilot.press("enter")
        await ui.until(pilot, lambda: isinstance(app.screen, SummaryScreen))
        facts = app.screen.query_one(".facts").render().plain
        [row] = [line for line in facts.splitlines() if line.startswith("cost ")]
        assert re.search(r"summary calls [\d.]+k? in \(", row), row
        assert "re-read uncached (the checkpoint and the kept tail)" in row, row
        assert bool(MONEY.search(row)) is priced, row
