"""Recovering from a context overflow: the provider refused the request as too long.

The request_error listener prunes (every result older than the newest unit may be masked or
trimmed: the request cannot go as it is), then compacts everything but the newest unit, and
asks the loop to retry the step only if the surface shrank (``replace_generation``
advanced: a prune alone counts).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from agent.log.session import Session
from agent.meter import TokenMeter
from compact.basic.prune import Pruner
from compact.basic.selection import select_range, tail_start
from compact.contract.service import CompactionError, CompactionResult
from compact.parts.transaction import Attempt

Bracket = Callable[[Attempt], Awaitable[CompactionResult]]
"""Writes one compaction (:meth:`compact.basic.compactor.Compactor.bracket`)."""


async def recover_overflow(
    session: Session,
    meter: TokenMeter,
    pruner: Pruner | None,
    bracket: Bracket,
    signal: asyncio.Event | None,
) -> CompactionResult | None:
    """Prune, then compact all but the newest unit; None when there is nothing to compact.
    Raises :class:`CompactionError` (``cancelled`` once ``signal`` is set)."""
    await meter.settle()
    if pruner is not None:
        protect = tail_start(session.surface, meter.price, 0)
        await pruner.prune(protect_from=protect, trigger="overflow", signal=signal)
    if signal is not None and signal.is_set():
        raise CompactionError("cancelled")
    span = select_range(session, meter.price, 0)
    if span is None:
        return None
    return await bracket(Attempt(span, "overflow", session.open_turn))
