"""A cold prompt cache: the schedule's decision to compact at a checkpoint past the
provider's TTL, and the service's reading of the time since the last request (the log's,
on the clock it is given)."""

from __future__ import annotations

import math
import time

from agent.llm.prompt_cache import CachePlan
from compact.basic import BasicCompactService
from compact.basic.schedule import REACH_STEPS, Schedule
from compact.contract.policy import CompactionSettings
from tests.compact.conftest import add_turn

WINDOW = 16_000
STEP = 1_500


def schedule() -> Schedule:
    """1,500-token steps at a 16k window: the mark comes a few steps after a compaction."""
    plan = Schedule(CompactionSettings(), folds=True)
    for n in range(6):
        plan.steps.saw(300 + n * STEP)
    plan.header, plan.last_summary = 300, 1_000
    return plan


def test_a_summary_written_ahead_is_committed_at_a_cold_checkpoint_within_reach() -> None:
    """Its cost is spent: the step reads what the compaction leaves instead of the whole
    context in full."""
    plan = schedule()
    mark = plan.mark(WINDOW)
    for steps in range(1, REACH_STEPS + 1):
        assert plan.cold_now(mark - steps * STEP + 1, WINDOW, written=True)


def test_a_cold_checkpoint_far_from_the_mark_waits() -> None:
    plan = schedule()
    mark = plan.mark(WINDOW)
    assert not plan.cold_now(mark - (REACH_STEPS + 1) * STEP, WINDOW, written=True)


def test_a_summary_still_to_write_is_not_cheaper_cold_at_the_cost_mark() -> None:
    """The summary call reads the cold conversation in full: what the step would have read,
    so the compaction costs what it costs at the mark, and early it only holds less for
    fewer steps."""
    plan = schedule()
    mark = plan.mark(WINDOW)
    assert not any(plan.cold_now(mark - n * 500, WINDOW) for n in range(1, 10))


def test_too_few_steps_measured_decide_nothing() -> None:
    plan = Schedule(CompactionSettings(), folds=True)
    plan.steps.saw(1_000)
    assert not plan.cold_now(plan.mark(WINDOW) - 100, WINDOW, written=True)


def service(make_rig: object, ttl_s: float, now: list[float]) -> BasicCompactService:
    rig = make_rig()  # type: ignore[operator]
    add_turn(rig.session, 1, calls=2)
    return BasicCompactService(
        rig.session,
        rig.meter,
        rig.service.model,
        CompactionSettings(),
        cache_plan=CachePlan(breakpoints=False, ttl_s=ttl_s),
        clock=lambda: now[0],
    )


def test_the_cache_is_cold_once_the_ttl_passed_since_the_last_request(make_rig: object) -> None:
    now = [time.time()]
    compaction = service(make_rig, 300, now)
    last = max(e.time for e in compaction.session.events if e.type == "assistant/message")
    now[0] = last + 10
    assert not compaction.cold()
    now[0] = last + 301
    assert compaction.cold()


def test_a_local_server_never_counts_as_cold(make_rig: object) -> None:
    now = [time.time() + 10**9]
    assert not service(make_rig, math.inf, now).cold()
