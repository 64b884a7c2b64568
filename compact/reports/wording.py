"""How timeline records are said: the one-line form of a record, what it spent, and what a
line-oriented front end prints about compaction events as they happen. Every front end words
them the same way (figures and durations: :mod:`agent.formatting`)."""

from __future__ import annotations

from typing import Literal

from agent.formatting import fmt_duration, fmt_tokens, one_line, plural
from agent.llm.prices import PriceOf, format_cost
from agent.log.events import Event
from compact.contract.events import CompactEnd, CompactProgress, CompactStart
from compact.reports.records import TimelineRecord
from compact.reports.timeline import TimelineFold


def label(record: TimelineRecord) -> str:
    """What ran: the trigger of a compaction; ``prune`` (``prune (overflow)``) for a batch."""
    if record.kind == "prune":
        return "prune" if record.trigger == "pressure" else f"prune ({record.trigger})"
    return record.trigger


def status(record: TimelineRecord) -> str:
    """A record's status as every view says it: ``undone by #4`` for a compaction (or an
    edit) a later undo reversed, else the fold's status (``done``, ``failed`` …)."""
    if record.undone_by is not None and record.status == "done":
        return f"undone by #{record.undone_by}"
    return record.status


def occasion(record: TimelineRecord) -> str | None:
    """What set a compaction off and what it kept verbatim, e.g. ``the context reached 12.4k,
    past the auto mark at 12.0k; kept verbatim: 3 items (~2.1k tokens)``; None for a record
    that does not say (a prune, an undo, an older log)."""
    why = record.why
    if why is None:
        return None
    context = fmt_tokens(why.context_tokens)
    if record.trigger == "auto" and why.mark and why.context_tokens < why.mark:
        # Only a cold cache brings a compaction before its mark (compact.basic.schedule).
        cause = (
            f"the context at {context}, before the auto mark at {fmt_tokens(why.mark)}: "
            "the provider's cache had expired, so compacting now cost less"
        )
    elif record.trigger == "auto":
        mark = f", past the auto mark at {fmt_tokens(why.mark)}" if why.mark else ""
        cause = f"the context reached {context}{mark}"
    elif record.trigger == "overflow":
        cause = f"the provider refused the {context}-token request as too long"
    elif record.trigger == "manual":
        cause = f"/compact at {context}" + (f", focus: {record.focus}" if record.focus else "")
    else:
        cause = f"a {record.trigger} compaction at {context}"
    if why.kept_items:
        kept = f"{plural(why.kept_items, 'item')} (~{fmt_tokens(why.kept_tokens)} tokens)"
    else:
        kept = "nothing but the checkpoint"
    return f"{cause}; kept verbatim: {kept}"


def occasion_brief(record: TimelineRecord) -> str | None:
    """:func:`occasion` in a few words for a one-line marker, e.g. ``at 12.4k, mark 12.0k ·
    kept 3 items verbatim (~2.1k)``; None when the record does not say."""
    why = record.why
    if why is None:
        return None
    mark = f", mark {fmt_tokens(why.mark)}" if record.trigger == "auto" and why.mark else ""
    if mark and why.mark and why.context_tokens < why.mark:
        mark += " (cache expired: early)"
    kept = (
        f"kept {plural(why.kept_items, 'item')} verbatim (~{fmt_tokens(why.kept_tokens)})"
        if why.kept_items
        else "kept nothing verbatim"
    )
    return f"at {fmt_tokens(why.context_tokens)}{mark} · {kept}"


def start_line(record: TimelineRecord) -> str:
    """What a line-oriented front end says when a compaction starts: what ran, and why."""
    why = occasion(record)
    return f"{label(record)}: {why}" if why else label(record)


CompactionNews = tuple[Literal["start", "progress", "end"], TimelineRecord]


def compaction_news(fold: TimelineFold, event: Event) -> CompactionNews | None:
    """What a line-oriented front end prints about ``event`` (already fed to ``fold``): a
    compaction that started, one of its summarizer calls, or its end; None otherwise."""
    if not isinstance(event, CompactStart | CompactProgress | CompactEnd):
        return None
    record = fold.record(event.data.compaction_id)
    if record is None:
        return None
    if isinstance(event, CompactStart):
        return "start", record
    return ("progress" if isinstance(event, CompactProgress) else "end"), record


def progress_text(record: TimelineRecord, now: float) -> str:
    """What the latest summarizer call of a compaction did, for a progress line::

    #3 auto · chunk 1/3 summarized · 14s
    #3 auto · the summary was cut off at its 1600-token limit; asking for a terser one · 2m 03s
    """
    parts = [f"#{record.number} {label(record)}"]
    if record.note:
        parts.append(one_line(record.note, 120))
    elif record.chunks > 1:
        parts.append(f"chunk {record.chunks_done}/{record.chunks} summarized")
    else:
        parts.append("summary written")
    parts.append(fmt_duration(record.elapsed(now)))
    return " · ".join(parts)


def describe(record: TimelineRecord) -> str:
    """One plain line for a record, e.g.::

    #1 auto · done · 42 items · 38.1k → 2.3k tokens · 4.2s · summary calls 40k in · 83% …
    #2 prune · done · 3 results · −9.7k tokens
    #3 manual · failed: <error>
    """
    head = f"#{record.number} {label(record)}"
    if record.status == "failed":
        return f"{head} · failed: {one_line(record.error or 'unknown error', 200)}"
    if record.status == "discarded":
        # A summary written ahead and never used: what it cost is the point of the row.
        cost = spent(record)
        why = one_line((record.error or "").removeprefix("discarded: "), 200)
        return f"{head} · discarded (written ahead, not used): {why}" + (
            f" · summary calls {cost}" if cost else ""
        )
    parts = [head, status(record)]
    if record.kind == "prune":
        parts.append(plural(record.items_before, "result"))
        saved = record.saved_tokens
        if saved is not None:
            parts.append(f"−{fmt_tokens(saved)} tokens")
    else:
        if record.items_before:
            parts.append(plural(record.items_before, "item"))
        if record.status == "done" and record.tokens_after is not None:
            parts.append(
                f"{fmt_tokens(record.tokens_before)} → {fmt_tokens(record.tokens_after)} tokens"
            )
        elif record.tokens_before:
            parts.append(f"{fmt_tokens(record.tokens_before)} tokens")
        if record.chunks > 1:
            if record.status == "running":
                parts.append(f"chunk {min(record.chunks_done + 1, record.chunks)}/{record.chunks}")
            else:
                parts.append(f"{record.chunks} chunks")
        if record.model == "fallback":
            reason = record.fallback_reason
            parts.append(
                f"model-free fallback ({one_line(reason, 80)})" if reason else "model-free fallback"
            )
        elif record.status == "running" and record.note:
            parts.append(one_line(record.note, 80))
    if record.duration_s is not None and record.kind == "compaction":
        parts.append(fmt_duration(record.duration_s))
    if cost := spent(record):
        parts.append(f"summary calls {cost}")
    if cache := reread(record):
        parts.append(cache)
    if record.focus:
        parts.append(f'focus "{one_line(record.focus, 40)}"')
    return " · ".join(parts)


def spent(record: TimelineRecord, price_of: PriceOf | None = None) -> str:
    """What a compaction's summary calls cost, as their provider reported it:
    ``3k in · 83% cached · 100 out`` (``cache not reported`` when the provider named no
    cache figure), and ``~$0.01 est.`` when ``price_of`` knows the summarizer's price.
    Empty for a prune (no model call) and when no call reported usage."""
    usage = record.usage
    if usage is None:
        return ""
    cached = usage.cached_tokens
    share = (
        "cache not reported"
        if cached is None or usage.prompt_tokens <= 0
        else f"{100 * min(cached, usage.prompt_tokens) / usage.prompt_tokens:.0f}% cached"
    )
    parts = [
        f"{fmt_tokens(usage.prompt_tokens)} in",
        share,
        f"{fmt_tokens(usage.completion_tokens)} out",
    ]
    price = price_of(record.model) if price_of is not None and record.model else None
    if price is not None:
        dollars = price.cost(usage.prompt_tokens, cached or 0, usage.completion_tokens)
        parts.append(format_cost(dollars))
    return " · ".join(parts)


def reread(record: TimelineRecord) -> str:
    """What a compaction cost a prompt cache (``5.2k re-read uncached``); empty when not
    known (a prune, a failure, an older log)."""
    if record.reread_tokens is None:
        return ""
    return f"{fmt_tokens(record.reread_tokens)} re-read uncached"


def running_detail(record: TimelineRecord) -> str:
    """A running compaction in a few words, for a status line: its trigger, the chunk it is
    on, a problem it met (``auto · chunk 2/3``)."""
    parts = [record.trigger]
    if record.chunks > 1:
        parts.append(f"chunk {min(record.chunks_done + 1, record.chunks)}/{record.chunks}")
    if record.note:
        parts.append(record.note)
    return " · ".join(parts)
