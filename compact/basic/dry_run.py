"""The basic backend's dry run: the range ``/compact`` would replace now, chosen exactly as
it chooses it (:func:`compact.basic.selection.select_range` with no retained tail beyond the
newest indivisible unit), priced with the meter; nothing sent or written."""

from __future__ import annotations

from collections import Counter

from agent.envelope import Envelope
from agent.log.session import Session
from agent.meter import TokenMeter
from compact.basic.selection import new_tokens, select_range
from compact.contract.service import DryRun


def dry_run(session: Session, meter: TokenMeter, envelope: Envelope, min_new_tokens: int) -> DryRun:
    """What a manual compaction would replace and keep now; nothing is sent or written."""
    total = meter.measure(envelope).total
    span = select_range(session, meter.price, 0) or []
    if span and new_tokens(session, span, meter.price) < min_new_tokens:
        span = []
    chosen = set(span)
    kept = [seq for seq in session.surface if seq not in chosen]
    kinds = Counter(session.events[seq].type for seq in span)
    return DryRun(
        summarized=span,
        summarized_tokens=sum(meter.price(s) for s in span),
        kinds=dict(kinds),
        kept=kept,
        kept_tokens=sum(meter.price(s) for s in kept),
        total=total,
        window=envelope.window,
    )
