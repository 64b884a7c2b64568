"""Range selection: pure functions over a session's surface and the prices of its nodes.

A compaction replaces a head-anchored range: everything before a cut that leaves a retained
tail of about ``retain`` tokens (always at least the newest node), moved head-ward until it
splits no tool call from its result. An earlier checkpoint at the head is inside the range,
so the new summary merges it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent.log.events import AssistantMessage, UserMessage
from agent.log.session import Session
from compact.contract.service import CompactionResult
from compact.parts.pairing import open_calls_at_cuts

Price = Callable[[int], int]
"""The estimated tokens of the surface node with this seq."""


MIN_MANUAL_TOKENS = 512
"""Below this much new history a summary cannot save anything worth a model call (the
checkpoint's own sections cost about that much)."""


def tail_start(nodes: Sequence[int], price: Price, retain: int) -> int:
    """Position where a tail of at least ``retain`` tokens (and one node) begins."""
    cut = len(nodes)
    kept = 0
    while cut > 0 and (kept < retain or cut == len(nodes)):
        cut -= 1
        kept += price(nodes[cut])
    return cut


def newest_step(session: Session) -> int:
    """Position of the newest assistant message with tool calls (the step whose results
    the model acts on next); the surface's length when there is none."""
    events = session.events
    nodes = session.surface
    for position in range(len(nodes) - 1, -1, -1):
        event = events[nodes[position]]
        if isinstance(event, AssistantMessage) and event.data.tool_calls:
            return position
    return len(nodes)


def select_range(session: Session, price: Price, retain: int) -> list[int] | None:
    """The range to compact keeping about ``retain`` tokens at the tail, as seqs in surface
    order; None when no balanced cut leaves anything to compact."""
    nodes = session.surface
    cut = tail_start(nodes, price, retain)
    open_calls = open_calls_at_cuts(session)
    while cut > 0 and open_calls[cut] != 0:
        cut -= 1
    if cut <= 0:
        return None
    return list(nodes[:cut])


def new_tokens(session: Session, span: list[int], price: Price) -> int:
    """What ``span`` holds besides earlier checkpoints: the history a summary would be about
    that no checkpoint condenses yet."""
    total = 0
    for seq in span:
        event = session.events[seq]
        if not (isinstance(event, UserMessage) and event.data.source == "compact"):
            total += price(seq)
    return total


def not_worth_it(span: list[int], previous: CompactionResult, price: Price) -> bool:
    """A retry that would mostly re-summarize the checkpoint just written cannot shrink the
    context much: skip it rather than log a failure."""
    fresh = sum(price(seq) for seq in span if seq != previous.replacement_seq)
    return fresh < previous.summary_tokens


def balanced_span(session: Session, start: int, end: int) -> list[int]:
    """The surface nodes from seq ``start`` to seq ``end`` (by position). Raises
    ``ValueError`` for a range that is not on the surface, runs backwards, or splits a tool
    call from its result."""
    nodes = list(session.surface)
    if start not in nodes or end not in nodes:
        raise ValueError(f"range {start}..{end} is not on the surface")
    i, j = nodes.index(start), nodes.index(end)
    if i > j:
        raise ValueError(f"range start {start} comes after its end {end} on the surface")
    open_calls = open_calls_at_cuts(session)
    if open_calls[i] != 0 or open_calls[j + 1] != 0:
        raise ValueError(f"range {start}..{end} splits a tool call from its result")
    return nodes[i : j + 1]
