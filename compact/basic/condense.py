"""Condensing one range into one checkpoint: chunks, retries, time budget, progress, fallback.

The range is read as the model first saw it (:mod:`compact.basic.reading`) and, when it is more
than one summarizer call may read, summarized in chunks, oldest first: each call gets the
checkpoint so far (framed, as the conversation would carry it) followed by the next chunk,
and merges them. Each call:

- has an output cap of about a quarter of what the whole range costs on the surface (within
  ``max_tokens`` and a fifth of the window), so the checkpoint is always smaller than what
  it replaces and a rambling model is stopped early;
- has a time budget (``summary_timeout_s``);
- is logged as one ``compact/progress`` record (chunk, what it read, usage, outcome);
- when cut at its cap, is asked once more for a terser checkpoint.

When the model cannot deliver and the caller allows it (automatic and overflow compactions),
the model-free checkpoint (:mod:`compact.basic.summarizers`) condenses what is left instead — the
checkpoint so far included — so the compaction still lands.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from agent.envelope import Envelope
from agent.formatting import fmt_duration
from agent.log.events import ContextMessage, Usage
from agent.log.messages import ChatMessage
from compact.basic import summarizers
from compact.basic.reading import RangeReader, Unit, plan_chunks
from compact.basic.suffix import Continuation, continuation
from compact.contract.policy import MIN_SUMMARY_TOKENS, CompactionSettings
from compact.contract.service import CompactionError
from compact.parts.checkpoint import (
    SUMMARY_INSTRUCTION,
    Call,
    Summarizer,
    Summary,
    SummaryJob,
    SummaryRejected,
    frame,
)
from compact.parts.transaction import Condensed

FRAME_TOKENS = 96
OVER_CAP = 1.5
"""A summary this many times its cap (by our estimate) came from a server ignoring it."""
"""Price of the checkpoint's preamble and tags around a summary."""

Record = Callable[[dict[str, Any]], None]
"""Appends one ``compact/progress`` (data without the compaction id)."""

ModelFree = Literal["never", "on_failure", "only"]


@dataclass(frozen=True)
class Header:
    """The conversation's request header, as values: what every summary call replays."""

    model: str
    system: str
    tools: list[dict[str, Any]]
    tokens: int
    """Estimated price of the system prompt and tool schemas."""
    window: int | None

    @classmethod
    def of(cls, envelope: Envelope, tokens: int, model: str | None = None) -> Header:
        """The header ``envelope`` carries, ``tokens`` its price; ``model`` summarizes
        instead of the conversation's (``compaction.summarizer_model``)."""
        return cls(
            model or envelope.model, envelope.system, envelope.tools, tokens, envelope.window
        )


class Condenser:
    """Condenses ranges of one session (see the module docstring)."""

    def __init__(
        self,
        reader: RangeReader,
        summarize: Summarizer,
        settings: CompactionSettings,
    ) -> None:
        self.reader = reader
        self.summarize = summarize
        self.settings = settings
        self._instruction: int | None = None

    @property
    def _instruction_tokens(self) -> int:
        # Priced on first use, not at construction: that would load the tokenizer at start-up.
        if self._instruction is None:
            standing = self.settings.instructions or ""
            count = self.reader.estimator.count
            self._instruction = count(SUMMARY_INSTRUCTION) + count(standing) + 96
        return self._instruction

    def reads(self, header: Header, span: list[int], shadowed_tokens: int) -> tuple[int, int, bool]:
        """What the summary of ``span`` would read, as ``(prefix, new, whole)``: the header
        and the conversation it continues (a cache hit while warm), then the instruction and
        the originals after it (``whole`` True); when the conversation leaves no room for a
        summary, the range read on its own, all of it new but the header."""
        cap = self.settings.summary_cap(shadowed_tokens, header.window)
        whole = continuation(self.reader, span)
        if self._suffix_cap(header, cap, whole.tokens) is None:
            return header.tokens, shadowed_tokens + self._instruction_tokens, False
        new = whole.tokens - whole.prefix_tokens + self._instruction_tokens
        return header.tokens + whole.prefix_tokens, new, True

    def read_budget(self, header: Header, cap: int) -> int | None:
        """Tokens of history one summarizer call may read (None: the window is unknown)."""
        if header.window is None:
            return None
        return max(0, header.window - header.tokens - self._instruction_tokens - cap)

    async def condense(
        self,
        header: Header,
        span: list[int],
        shadowed_tokens: int,
        record: Record,
        *,
        focus: str | None = None,
        model_free: ModelFree = "never",
        read_newest: bool = False,
    ) -> Condensed:
        """One summary of ``span``. ``model_free``: ``never`` (a failure raises
        :class:`CompactionError`), ``on_failure`` (the model-free checkpoint covers what the
        model could not), ``only`` (do not ask the model). ``read_newest``: a call continuing
        the conversation reads all of it, the newest step too (see
        :func:`compact.basic.suffix.continuation`).

        One function because the chunk loop, its terser retry, its time budget and the model-
        free fallback share one running total of usage and one progress record per call.
        """
        units = await self.reader.units(span)
        if model_free == "only":
            return Condensed(_model_free(self._model_free_reads(units), None))
        cap = self.settings.summary_cap(shadowed_tokens, header.window)
        focus_tokens = self.reader.estimator.count(focus) if focus else 0
        whole = continuation(self.reader, span, read_newest=read_newest)
        suffix_cap = self._suffix_cap(header, cap, whole.tokens + focus_tokens)
        if suffix_cap is not None:
            return await self._whole(header, whole, suffix_cap, record, focus, model_free, units)
        budget = self.read_budget(header, cap)
        if budget is not None and focus:
            budget = max(0, budget - focus_tokens)
        if budget is None:
            chunks = [units]
        else:
            later = budget - cap - FRAME_TOKENS
            chunks = plan_chunks(units, budget, max(later, budget // 2), self.reader.fit)
        spent: list[Usage] = []
        so_far: Summary | None = None
        for index, chunk in enumerate(chunks, 1):
            lead = [checkpoint_message(so_far.text)] if so_far is not None else []
            job = SummaryJob(
                model=header.model,
                system=header.system,
                tools=header.tools,
                messages=[*lead, *_messages(chunk)],
                max_tokens=cap,
                focus=focus,
                standing=self.settings.instructions,
                window=header.window,
            )
            read = sum(unit.tokens for unit in chunk)
            if lead:
                read += self.reader.estimator.messages_tokens(lead)
            where = {
                "chunk": index,
                "chunks": len(chunks),
                "items": _items(chunk),
                "input_tokens": read,
            }
            try:
                so_far = await self._call(job, where, record, spent)
            except CompactionError as exc:
                if exc.code != "summary" or model_free == "never":
                    raise
                rest = [
                    *lead,
                    *(m for left in chunks[index - 1 :] for m in self._model_free_reads(left)),
                ]
                return Condensed(_model_free(rest, _total(spent)), exc.detail)
        assert so_far is not None
        summary = dataclasses.replace(so_far, usage=_total(spent), max_tokens=cap)
        size = self.reader.estimator.messages_tokens([checkpoint_message(summary.text)])
        if size >= shadowed_tokens and model_free == "on_failure":
            reason = f"the summary (~{size} tokens) was not smaller than the history"
            return Condensed(_model_free(self._model_free_reads(units), summary.usage), reason)
        return Condensed(summary)

    def _suffix_cap(self, header: Header, cap: int, reads: int) -> int | None:
        """The output cap of one call reading the whole conversation (``reads`` tokens),
        or None when that leaves too little room for a summary: the range is then read in
        chunks. The cap may shrink to what the window leaves, down to a third."""
        if header.window is None:
            return cap
        room = header.window - header.tokens - self._instruction_tokens - reads
        least = max(2 * MIN_SUMMARY_TOKENS, cap // 3)
        return min(cap, room) if room >= min(cap, least) else None

    async def _whole(
        self,
        header: Header,
        whole: Continuation,
        cap: int,
        record: Record,
        focus: str | None,
        model_free: ModelFree,
        units: list[Unit],
    ) -> Condensed:
        """One call that continues the conversation's own request (:mod:`compact.basic.suffix`)."""
        job = SummaryJob(
            model=header.model,
            system=header.system,
            tools=header.tools,
            messages=whole.messages,
            max_tokens=cap,
            focus=focus,
            standing=self.settings.instructions,
            window=header.window,
            appendix=whole.appendix,
            checkpoint=whole.checkpoint,
        )
        where = {
            "chunk": 1,
            "chunks": 1,
            "items": len(self.reader.session.surface),
            "input_tokens": whole.tokens,
            "cached_prefix_tokens": whole.prefix_tokens,
        }
        spent: list[Usage] = []
        try:
            summary = await self._call(job, where, record, spent)
        except CompactionError as exc:
            if exc.code != "summary" or model_free == "never":
                raise
            reads = self._model_free_reads(units)
            return Condensed(_model_free(reads, _total(spent)), exc.detail)
        return Condensed(
            dataclasses.replace(summary, usage=_total(spent), max_tokens=cap), read_all=True
        )

    def _model_free_reads(self, units: list[Unit]) -> list[ChatMessage]:
        """What the model-free checkpoint reads of ``units``: all but the context reefline
        itself put there (the workspace context, which goes back on the surface after the
        compaction anyway; a note on dropped tool calls). It quotes every user message as a
        request, and these are none. A model reads them all: it can tell."""
        events = self.reader.session.events
        kept = [u for u in units if not all(isinstance(events[s], ContextMessage) for s in u.seqs)]
        return _messages(kept)

    async def _call(
        self, job: SummaryJob, where: dict[str, Any], record: Record, spent: list[Usage]
    ) -> Summary:
        """One summarizer call (and one terser retry after a cut), each logged."""
        reason = ""
        for terse in (False, True):
            started = time.monotonic()
            outcome = await self._attempt(dataclasses.replace(job, terse=terse))
            model: str | None
            if isinstance(outcome, Summary):
                model, usage, status = outcome.model, outcome.usage, "ok"
            else:
                call = outcome.call if isinstance(outcome, SummaryRejected) else Call()
                model, usage, reason = call.model, call.usage, outcome.detail
                status = "cut" if getattr(outcome, "cut", False) else "failed"
            if usage is not None:
                spent.append(usage)
            record(
                {
                    **where,
                    "status": status,
                    "reason": None if status == "ok" else reason,
                    "model": model,
                    "usage": usage.model_dump() if usage is not None else None,
                    "max_tokens": job.max_tokens,
                    "elapsed_s": time.monotonic() - started,
                }
            )
            if isinstance(outcome, Summary):
                return outcome
            if status != "cut":
                raise outcome
        raise SummaryRejected(f"{reason}, also when asked for a terser one")

    async def _attempt(self, job: SummaryJob) -> Summary | CompactionError:
        """The hook's summary for ``job`` within the time budget, or why there is none."""
        timeout = self.settings.summary_timeout_s
        try:
            async with asyncio.timeout(timeout):
                summary = await self.summarize(job)
        except TimeoutError:
            return SummaryRejected(f"the summarizer did not finish within {fmt_duration(timeout)}")
        except CompactionError as exc:
            return exc
        size = self.reader.estimator.count(summary.text)
        if size > OVER_CAP * job.max_tokens:
            # A server that ignores max_tokens: such a checkpoint would crowd out the next
            # chunk, and a cap the server honoured would have cut it anyway.
            return SummaryRejected(
                f"the summary (~{size} tokens) is far over its {job.max_tokens}-token cap",
                Call(summary.model, summary.usage),
            )
        return summary


def checkpoint_message(summary: str) -> ChatMessage:
    """A summary as the conversation carries it: the framed checkpoint, a user message."""
    return {"role": "user", "content": frame(summary)}


def _messages(units: list[Unit]) -> list[ChatMessage]:
    return [m for unit in units for m in unit.messages]


def _items(units: list[Unit]) -> int:
    return sum(len(unit.seqs) for unit in units)


def _total(usages: list[Usage]) -> Usage | None:
    total: Usage | None = None
    for usage in usages:
        total = usage.plus(total)
    return total


def _model_free(messages: list[ChatMessage], usage: Usage | None) -> Summary:
    return Summary(summarizers.fallback_summary(messages), usage, summarizers.MODEL, None)
