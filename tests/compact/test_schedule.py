"""The compaction mark: the cost schedule's choice between its floor and the threshold."""

from __future__ import annotations

from compact.basic.schedule import Schedule
from compact.contract.policy import CompactionSettings


def schedule(step: int, *, header: int, summary: int, cache_price: float = 0.1) -> Schedule:
    plan = Schedule(CompactionSettings(cache_price=cache_price), folds=True)
    for n in range(6):
        plan.steps.saw(header + n * step)
    plan.header, plan.last_summary = header, summary
    return plan


def test_with_too_few_steps_measured_the_threshold_stands() -> None:
    plan = Schedule(CompactionSettings(), folds=True)
    plan.steps.saw(1_000)
    assert plan.mark(16_000) == CompactionSettings().threshold(16_000)


def test_a_small_window_with_large_steps_compacts_well_before_the_threshold() -> None:
    """1,500-token steps at 16k: holding the context costs more than rewriting it early."""
    plan = schedule(1_500, header=500, summary=400)
    threshold = CompactionSettings().threshold(16_000)
    mark = plan.mark(16_000)
    assert 500 + 400 + 3 * 1_500 <= mark < 0.75 * threshold


def test_a_large_window_is_not_spent_a_few_steps_at_a_time() -> None:
    """Small steps and a cached header would put the cost optimum at a few thousand tokens;
    the mark stays at a quarter of the threshold."""
    plan = schedule(200, header=3_000, summary=500)
    threshold = CompactionSettings().threshold(128_000)
    assert plan.mark(128_000) == -(-threshold // 4)


def test_no_cache_price_keeps_the_threshold() -> None:
    plan = schedule(1_500, header=500, summary=400, cache_price=0)
    assert plan.mark(16_000) == CompactionSettings().threshold(16_000)
