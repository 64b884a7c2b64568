"""``/compact --dry-run`` and ``reefline compact --dry-run``: what a compaction now would
summarize and keep, the token figures, and what it would cost and save, without calling the
model or writing anything.

The backend works it out (:meth:`compact.contract.service.CompactService.dry_run`, whose value
is :class:`compact.contract.service.DryRun`); this module says it in a few plain lines, the
cost as every view prices it (:mod:`compact.reports.compaction_cost`).
"""

from __future__ import annotations

from agent.formatting import fmt_tokens, plural
from agent.llm.prices import PriceOf
from compact.contract.service import DryRun
from compact.reports.compaction_cost import cost_words, foreseen, saving_words

_KIND_WORDS = {
    "user/message": ("message of the user or checkpoint", "messages of the user or checkpoints"),
    "assistant/message": ("assistant reply", "assistant replies"),
    "tool/result": ("command output", "command outputs"),
    "context/message": ("workspace context", "workspace contexts"),
    "steering/message": ("steering message", "steering messages"),
}


def report(run: DryRun | None, price_of: PriceOf | None = None, *, cold: bool = False) -> str:
    """The dry run as a few plain lines (None: the backend cannot tell); its cost in money
    where ``price_of`` knows the models' prices; ``cold``: the provider's cache expired."""
    if run is None:
        return "This compaction backend cannot say beforehand what it would compact."
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
    costs = []
    if run.cost is not None:
        cost = foreseen(run.cost, cold=cold)
        costs.append(_sentence(f"Cost: {cost_words(cost, price_of)}"))
        if saving := saving_words(cost, price_of):
            costs.append(_sentence(f"Saves: {saving}"))
    return "\n".join(
        [
            head,
            f"Would summarize {plural(len(run.summarized), 'history item')}, seqs "
            f"{run.summarized[0]}–{run.summarized[-1]} (~{fmt_tokens(run.summarized_tokens)} "
            f"tokens): {kinds}.",
            f"Would keep verbatim {plural(len(run.kept), 'item')} after the checkpoint "
            f"(~{fmt_tokens(run.kept_tokens)} tokens).",
            f"After it: ~{fmt_tokens(after)} tokens plus the checkpoint.",
            *costs,
        ]
    )


def _sentence(text: str) -> str:
    """``text`` ending with one full stop (a cost ends with ``est.`` already)."""
    return text if text.endswith(".") else f"{text}."
