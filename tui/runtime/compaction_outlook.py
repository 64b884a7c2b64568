"""What the front ends say about a compaction before it runs: the dry run's report and the
cost of the automatic compaction the gauge says is coming soon, both priced by
:mod:`compact.reports.compaction_cost` with the session's prices and the state of the
provider's prompt cache."""

from __future__ import annotations

import time

from compact.parts.cold import idle_s
from compact.reports.compaction_cost import CompactionCost, foreseen, outlook
from compact.reports.dry_run import report
from tui.runtime.runtime import Runtime


def cache_cold(runtime: Runtime, now: float | None = None) -> bool:
    """Whether the provider's prompt cache no longer holds the conversation's prefix: the
    last request is older than the provider's TTL (:class:`agent.llm.prompt_cache.CachePlan`),
    or none was made."""
    now = time.time() if now is None else now
    return runtime.cache_plan.cold(idle_s(runtime.session, now))


def dry_run_text(runtime: Runtime) -> str:
    """``/compact --dry-run``'s lines (:func:`compact.reports.dry_run.report`)."""
    run = runtime.compaction.dry_run(runtime.agent.envelope())
    return report(run, runtime.price_of, cold=cache_cold(runtime))


def next_compaction(runtime: Runtime) -> CompactionCost | None:
    """The automatic compaction's cost and saving, as if it ran now (None: the backend
    cannot tell, or there is nothing to compact)."""
    figures = runtime.compaction.forecast(runtime.agent.envelope())
    return None if figures is None else foreseen(figures, cold=cache_cold(runtime))


def soon_words(runtime: Runtime) -> str:
    """What the "compacting soon" line adds: ``costs …; saves …`` (empty: nothing known)."""
    cost = next_compaction(runtime)
    return "" if cost is None else outlook(cost, runtime.price_of)
