"""What a compaction costs and what it saves, priced one way for every view: ``/compact
--dry-run`` (and ``reefline compact --dry-run``), the "compacting soon" line and the
summary modal, so their figures agree.

A compaction costs its summary calls (the conversation's prefix they replay, a cache hit
while the cache is warm, then the instruction read new, then the checkpoint written) and
the rewrite: the next request reads the checkpoint and the kept tail anew, where without it
a cached read would have served them (:mod:`compact.basic.schedule` prices both the same
way: it is the ``K`` of its cost model). It saves what it takes off the context, re-read
(cached) by every step after it: counted over the steps expected until the next automatic
compaction (from the typical growth of a step and the mark), else over the next
:data:`SAVING_STEPS`. When the cache is cold (the provider dropped the prefix after a
pause), the next request reads everything anew anyway: the rewrite costs nothing extra, and
the summary call reads its prefix anew too.

Tokens always; money where the models' prices are known (:mod:`agent.llm.prices`: the
config's ``prices``, then the built-in list), an estimate, as everywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from agent.formatting import fmt_tokens
from agent.llm.prices import ModelPrice, PriceOf, format_cost
from compact.contract.service import CostFigures
from compact.reports.records import TimelineRecord

SAVING_STEPS = 10
"""Steps a saving is counted over when the steps until the next compaction are not known."""


@dataclass(frozen=True)
class CompactionCost:
    """One compaction's cost and saving, in tokens (see the module docstring)."""

    summarizer: str | None
    """The model that wrote (or would write) the summary."""
    model: str | None
    """The conversation's model: the re-read and the saving are its input."""
    cached: int | None
    """Summary-call input read from the prompt cache (None: not reported)."""
    new: int
    """Summary-call input read new."""
    output: int
    """Summary-call output."""
    reread: int | None
    """Tokens the next request reads anew: the checkpoint and the kept tail (None: no
    rewrite, as after a compaction that failed)."""
    reread_extra: int
    """Of those, what a cached read would have served without the rewrite: what the
    views say and price (for a compaction that ran, all of :attr:`reread`)."""
    saved: int | None = None
    """Tokens of context no longer re-read by each step after it."""
    steps: int = SAVING_STEPS
    """Steps the saving is counted over."""
    until_next: bool = False
    """``steps`` are those expected until the next automatic compaction."""
    cold: bool = False
    """The cache is cold: the re-read costs nothing extra."""
    ran: bool = False
    """A compaction that ran (figures from the log), not one foreseen."""
    header_reread: bool = False
    """The re-read includes the header, too short for a provider to cache on its own."""

    @property
    def read(self) -> int:
        """All the input of its summary calls."""
        return (self.cached or 0) + self.new

    def cost_dollars(self, price_of: PriceOf | None) -> float | None:
        """The summary calls and the re-read's extra over a cached read, in dollars; None
        when a model's price is unknown."""
        summarizer = _price(price_of, self.summarizer)
        model = _price(price_of, self.model)
        if summarizer is None or model is None:
            return None
        calls = summarizer.cost(self.read, self.cached or 0, self.output)
        extra = 0 if self.cold else self.reread_extra
        return calls + model.cost(extra, 0, 0) - model.cost(extra, extra, 0)

    def saving_dollars(self, price_of: PriceOf | None) -> float | None:
        """The saving over :attr:`steps`, re-read at the cached price; None without one."""
        model = _price(price_of, self.model)
        if model is None or self.saved is None:
            return None
        total = self.saved * self.steps
        return model.cost(total, total, 0)


def _price(price_of: PriceOf | None, model: str | None) -> ModelPrice | None:
    return None if price_of is None or model is None else price_of(model)


def foreseen(figures: CostFigures, *, cold: bool = False) -> CompactionCost:
    """The cost of a compaction not yet run, from a backend's figures; ``cold``: the
    provider's cache has expired since the last request."""
    after = figures.after
    steps, until_next = SAVING_STEPS, False
    if figures.mark is not None and figures.growth and figures.mark > after:
        steps, until_next = max(1, math.ceil((figures.mark - after) / figures.growth)), True
    return CompactionCost(
        summarizer=figures.summarizer,
        model=figures.model,
        cached=0 if cold else figures.prefix,
        new=figures.new + (figures.prefix if cold else 0),
        output=figures.output,
        reread=figures.reread,
        reread_extra=figures.reread_extra,
        saved=max(0, figures.before - after),
        steps=steps,
        until_next=until_next,
        cold=cold,
        header_reread=figures.header_reread,
    )


def recorded(record: TimelineRecord) -> CompactionCost | None:
    """What a compaction that ran cost, from the log: its summary calls' reported usage
    and what the next request read anew after it (``reread_tokens``; the part a cached read
    would have served is not recorded, so all of it is priced as extra: an upper bound).
    None for a record that says neither (a prune, an undo, an older log)."""
    usage = record.usage
    if usage is None and record.reread_tokens is None:
        return None
    cached = None if usage is None else usage.cached_tokens
    prompt = 0 if usage is None else usage.prompt_tokens
    cached = None if cached is None else min(cached, prompt)
    reread = record.reread_tokens
    return CompactionCost(
        summarizer=record.model,
        model=record.model,
        cached=cached,
        new=prompt - (cached or 0),
        output=0 if usage is None else usage.completion_tokens,
        reread=reread,
        reread_extra=reread or 0,
        saved=record.saved_tokens if record.status == "done" else None,
        ran=True,
    )


def cost_words(cost: CompactionCost, price_of: PriceOf | None = None) -> str:
    """``summary call ~40k in (~38k cached), ~1.2k out; then ~3.1k re-read uncached (the
    checkpoint and the kept tail) · ~$0.01 est.``: the re-read is what a cached read would
    have served without the rewrite (:attr:`CompactionCost.reread_extra`)."""
    tilde = "" if cost.ran else "~"
    calls = "summary calls" if cost.ran else "summary call"
    if cost.cold:
        share = "the cache is cold: none cached"
    elif cost.cached is None:
        share = "cache not reported"
    else:
        share = f"{tilde}{fmt_tokens(cost.cached)} cached"
    read, out = f"{tilde}{fmt_tokens(cost.read)}", f"{tilde}{fmt_tokens(cost.output)}"
    text = f"{calls} {read} in ({share}), {out} out"
    if cost.ran and not cost.read and not cost.output:
        text = "no summary call reported usage"
    if cost.reread is not None:
        reread = f"{tilde}{fmt_tokens(cost.reread_extra)}"
        if cost.cold:
            text += f"; then {reread} re-read at no extra cost (a cold cache reads all anew)"
        else:
            parts = "the header, too short to cache alone, " if cost.header_reread else ""
            text += f"; then {reread} re-read uncached ({parts}the checkpoint and the kept tail)"
    dollars = cost.cost_dollars(price_of)
    return text if dollars is None else f"{text} · {format_cost(dollars)}"


def saving_words(cost: CompactionCost, price_of: PriceOf | None = None) -> str:
    """``~35k tokens re-read per step, ~280k over the 8 steps until the next
    automatic compaction · ~$0.03 est.``; empty when nothing is known to be saved."""
    if cost.saved is None:
        return ""
    tilde = "" if cost.ran else "~"
    per = f"{tilde}{fmt_tokens(cost.saved)} tokens re-read per step"
    if cost.ran:
        return per
    steps = (
        f"the {cost.steps} steps until the next automatic compaction"
        if cost.until_next
        else f"the next {cost.steps} steps"
    )
    text = f"{per}, ~{fmt_tokens(cost.saved * cost.steps)} over {steps}"
    dollars = cost.saving_dollars(price_of)
    return text if dollars is None else f"{text} · {format_cost(dollars)}"


def outlook(cost: CompactionCost, price_of: PriceOf | None = None) -> str:
    """Cost and saving in one line: ``costs …; saves …``."""
    saving = saving_words(cost, price_of)
    costs = f"costs {cost_words(cost, price_of)}"
    return f"{costs}; saves {saving}" if saving else costs
