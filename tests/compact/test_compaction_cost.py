"""The pricing every view of a compaction's cost shares (compact/reports/compaction_cost.py):
the arithmetic, warm and cold, foreseen and recorded. The views themselves are driven
through the real process in tests/e2e/test_compaction_cost.py and
tests/tui/test_app_compaction_cost.py."""

from __future__ import annotations

import pytest

from agent.llm.prices import ModelPrice
from agent.log.events import Usage
from compact.contract.service import CostFigures
from compact.reports.compaction_cost import (
    SAVING_STEPS,
    cost_words,
    foreseen,
    outlook,
    recorded,
    saving_words,
)
from compact.reports.records import TimelineRecord

PRICE = ModelPrice(input=100.0, cached_input=10.0, output=400.0)


def price_of(model: str) -> ModelPrice | None:
    return PRICE if model == "m" else None


FIGURES = CostFigures(
    summarizer="m",
    model="m",
    prefix=40_000,
    new=1_000,
    output=600,
    reread=3_500,
    reread_extra=3_000,
    before=45_000,
    after=5_000,
    mark=9_000,
    growth=1_000,
)


def test_a_warm_cache_prices_the_summary_call_and_the_re_read_over_a_cached_read() -> None:
    cost = foreseen(FIGURES)
    # 1,000 new × 100 + 40,000 cached × 10 + 600 out × 400, then 3,000 × (100 − 10)
    expected = (100_000 + 400_000 + 240_000 + 270_000) / 1_000_000
    assert cost.cost_dollars(price_of) == pytest.approx(expected)
    # 40k fewer re-read per step, over the 4 steps to the mark at 1k a step, cached.
    assert (cost.saved, cost.steps, cost.until_next) == (40_000, 4, True)
    assert cost.saving_dollars(price_of) == pytest.approx(160_000 * 10 / 1_000_000)
    assert cost_words(cost, price_of) == (
        "summary call ~41k in (~40k cached), ~600 out; then ~3k re-read uncached "
        "(the checkpoint and the kept tail) · ~$1.01 est."
    )
    assert saving_words(cost, price_of) == (
        "~40k tokens re-read per step, ~160k over the 4 steps until the next automatic "
        "compaction · ~$1.60 est."
    )


def test_a_cold_cache_reads_the_prefix_anew_and_the_re_read_costs_nothing_extra() -> None:
    cost = foreseen(FIGURES, cold=True)
    assert cost.cost_dollars(price_of) == pytest.approx((41_000 * 100 + 600 * 400) / 1e6)
    words = cost_words(cost, price_of)
    assert "(the cache is cold: none cached)" in words
    assert "then ~3k re-read at no extra cost" in words


def test_without_a_price_only_tokens_and_without_a_mark_the_next_ten_steps() -> None:
    cost = foreseen(CostFigures(**{**FIGURES.__dict__, "model": "x", "mark": None}))
    assert cost.cost_dollars(price_of) is None and "$" not in outlook(cost, price_of)
    assert cost.steps == SAVING_STEPS and not cost.until_next
    assert f"over the next {SAVING_STEPS} steps" in saving_words(cost, price_of)


def test_a_compaction_that_ran_is_priced_from_its_reported_usage_and_re_read() -> None:
    record = TimelineRecord(
        number=1,
        kind="compaction",
        compaction_id="c",
        trigger="auto",
        status="done",
        started_at=0.0,
        ended_at=1.0,
        items_before=10,
        items_after=1,
        tokens_before=20_000,
        tokens_after=500,
        model="m",
        usage=Usage(prompt_tokens=30_000, completion_tokens=400, cached_tokens=25_000),
        reread_tokens=2_000,
    )
    cost = recorded(record)
    assert cost is not None
    expected = (5_000 * 100 + 25_000 * 10 + 400 * 400 + 2_000 * 90) / 1e6
    assert cost.cost_dollars(price_of) == pytest.approx(expected)
    assert cost_words(cost, price_of) == (
        "summary calls 30k in (25k cached), 400 out; then 2k re-read uncached "
        "(the checkpoint and the kept tail) · ~$1.09 est."
    )
