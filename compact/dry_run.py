"""``/compact --dry-run`` and ``reefline compact --dry-run``: what a compaction now would
summarize and keep, and the token figures, without calling the model or writing anything.

It selects the range exactly as ``/compact`` does (:func:`compact.selection.select_range`
with no retained tail beyond the newest indivisible unit) and prices it with the meter.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from agent.envelope import Envelope
from agent.formatting import fmt_tokens, plural
from agent.meter import TokenMeter
from agent.session import Session
from compact.selection import new_tokens, select_range

MIN_NEW_TOKENS = 512
"""As :data:`compact.basic.MIN_MANUAL_TOKENS`: below this, ``/compact`` does nothing."""


@dataclass(frozen=True)
class DryRun:
    """What ``/compact`` would do now (``summarized`` empty: nothing)."""

    summarized: list[int]
    summarized_tokens: int
    kinds: dict[str, int]
    """Summarized items by event type."""
    kept: list[int]
    kept_tokens: int
    total: int
    window: int | None


def dry_run(session: Session, meter: TokenMeter, envelope: Envelope) -> DryRun:
    """What a manual compaction would replace and keep now; nothing is sent or written."""
    total = meter.measure(envelope).total
    span = select_range(session, meter.price, 0) or []
    if span and new_tokens(session, span, meter.price) < MIN_NEW_TOKENS:
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


_KIND_WORDS = {
    "user/message": ("message of the user or checkpoint", "messages of the user or checkpoints"),
    "assistant/message": ("assistant reply", "assistant replies"),
    "tool/result": ("command output", "command outputs"),
    "context/message": ("workspace context", "workspace contexts"),
    "steering/message": ("steering message", "steering messages"),
}


def report(run: DryRun) -> str:
    """The dry run as a few plain lines."""
    window = f" / {fmt_tokens(run.window)}" if run.window else ""
    head = (
        "Dry run: nothing sent to the model, nothing written. "
        f"Context now ~{fmt_tokens(run.total)}{window} tokens."
    )
    if not run.summarized:
        return f"{head}\nNothing to compact yet: /compact would do nothing."
    kinds = ", ".join(
        plural(n, *_KIND_WORDS.get(kind, (kind, kind))) for kind, n in sorted(run.kinds.items())
    )
    after = run.total - run.summarized_tokens
    return "\n".join(
        [
            head,
            f"Would summarize {plural(len(run.summarized), 'history item')}, seqs "
            f"{run.summarized[0]}–{run.summarized[-1]} (~{fmt_tokens(run.summarized_tokens)} "
            f"tokens): {kinds}.",
            f"Would keep verbatim {plural(len(run.kept), 'item')} after the checkpoint "
            f"(~{fmt_tokens(run.kept_tokens)} tokens).",
            f"After it: ~{fmt_tokens(after)} tokens plus the checkpoint.",
        ]
    )
