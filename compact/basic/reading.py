"""What a summary reads: the shadowed range as the model first saw it, in chunks that fit.

A pruned tool result on the surface is a placeholder or a trimmed excerpt. The summarizer is
given its **original** from the log instead (followed back through the replacement's
``surface_op``), cut head and tail the way the pruner trims, with a marker naming the file
that holds all of it — so nothing leaves the surface unsummarized except what that file
keeps. An earlier checkpoint in the range is read as it stands, to be merged.

The range is read in *units*: runs of surface nodes that split no tool call from its result
(a request, an answer, one step's calls with their results). Units are packed, oldest first,
into *chunks* that each fit one summarizer call; every chunk is a valid conversation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent.log.events import AssistantMessage, Event, ToolResult
from agent.log.messages import ChatMessage
from agent.log.session import Session
from agent.tokens import Estimator
from compact.parts.originals import KEEP_HEAD, KEEP_TAIL, ensure_spill, head_tail, original

MIN_SHARE = 0.05
"""A unit too big for a chunk has its originals cut harder, down to this share of the caps."""
SLICE = 500
"""Nodes read between two yields to the event loop (a few milliseconds of work)."""


@dataclass(frozen=True)
class Unit:
    """Surface nodes that belong together, as the summarizer reads them."""

    seqs: tuple[int, ...]
    messages: tuple[ChatMessage, ...]
    tokens: int
    """Estimated price of ``messages`` (originals included)."""


class RangeReader:
    """Turns surface ranges of one session into :class:`Unit` values."""

    def __init__(
        self,
        session: Session,
        estimator: Estimator,
        *,
        price: Callable[[int], int] | None = None,
        head: int = KEEP_HEAD,
        tail: int = KEEP_TAIL,
    ) -> None:
        self.session = session
        self.estimator = estimator
        self.price = price
        """The price of a surface node as it stands (a meter's): reused for every node
        read as it is on the surface, so only originals are tokenized again."""
        self.head = head
        self.tail = tail

    async def units(self, span: Sequence[int]) -> list[Unit]:
        """``span`` (seqs in surface order, balanced at both ends) cut into units. Yields to
        the event loop every :data:`SLICE` nodes: reading a range of tens of thousands of
        nodes (their originals tokenized again) takes seconds, and a cancel or a signal
        handler must not wait for it."""
        units: list[Unit] = []
        current: list[int] = []
        open_calls = 0
        for i, seq in enumerate(span):
            if i % SLICE == SLICE - 1:
                await asyncio.sleep(0)
            event = self.session.events[seq]
            current.append(seq)
            if isinstance(event, AssistantMessage):
                open_calls += len(event.data.tool_calls)
            elif isinstance(event, ToolResult):
                open_calls -= 1
            if open_calls <= 0:
                units.append(self.unit(current))
                current, open_calls = [], 0
        if current:
            units.append(self.unit(current))
        return units

    def unit(self, seqs: Sequence[int], share: float = 1.0) -> Unit:
        """The unit of ``seqs``, originals cut to ``share`` of the usual head and tail."""
        messages: list[ChatMessage] = []
        tokens = 0
        for seq in seqs:
            message, as_is = self.message(seq, share)
            if message is None:
                continue
            messages.append(message)
            if as_is and self.price is not None:
                tokens += self.price(seq)
            else:
                tokens += self.estimator.message_tokens(message)
        return Unit(tuple(seqs), tuple(messages), tokens)

    def message(self, seq: int, share: float = 1.0) -> tuple[ChatMessage | None, bool]:
        """The message node ``seq`` is read as, and whether that is the node as it stands."""
        event: Event = self.session.events[seq]
        if not isinstance(event, ToolResult):
            return self.session.node_message(seq), True
        first = original(self.session, event)
        content = first.data.content
        head, tail = int(self.head * share), int(self.tail * share)
        if len(content) > head + tail:
            path = first.data.spill_path or ensure_spill(self.session, first.seq, content)
            content = head_tail(content, head, tail, path)
        as_is = content == event.data.content
        return {"role": "tool", "tool_call_id": event.data.call_id, "content": content}, as_is

    def fit(self, unit: Unit, budget: int) -> Unit:
        """``unit`` within ``budget`` tokens if cutting its originals harder can do it (else
        as small as it gets)."""
        share = 1.0
        while unit.tokens > budget and share > MIN_SHARE:
            share = max(MIN_SHARE, share * max(0.1, budget / unit.tokens) * 0.9)
            unit = self.unit(unit.seqs, share)
        return unit


def plan_chunks(
    units: Sequence[Unit],
    first_budget: int,
    later_budget: int,
    fit: Callable[[Unit, int], Unit],
) -> list[list[Unit]]:
    """Pack ``units`` in order into chunks of at most ``first_budget`` tokens for the first
    and ``later_budget`` for the others (they also carry the checkpoint so far). A unit
    that fits no chunk is cut by ``fit`` and, if still too big, read alone."""
    chunks: list[list[Unit]] = []
    current: list[Unit] = []
    used = 0
    for unit in units:
        budget = first_budget if not chunks else later_budget
        if current and used + unit.tokens > budget:
            chunks.append(current)
            current, used = [], 0
            budget = later_budget
        if unit.tokens > budget:
            unit = fit(unit, budget)
        current.append(unit)
        used += unit.tokens
    if current:
        chunks.append(current)
    return chunks
