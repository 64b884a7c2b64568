"""What the provider should serve from its prompt cache for the next request, told from the
log at dispatch and logged with the reply (:class:`agent.log.events.CacheExpected`), so that
the miss warning, ``/context`` and ``reefline sessions`` are folds of the log
(:mod:`agent.cache_misses`).

The expected prefix is the part of this request that the previous request already sent
unchanged. Between two steps the surface only grows, so it is the whole previous request,
whose size the server reported (its prompt tokens). A rewrite since (a compaction, a masking
fold, a revision or an undo) changes the history from its first changed message on: only
the part before it counts, estimated. A new model, system prompt or tool set shares nothing.
The previous request's time is its reply's time in the log; past the provider's TTL
(:attr:`agent.llm.prompt_cache.CachePlan.ttl_s`) nothing is expected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent.log.events import (
    AssistantMessage,
    CacheExpected,
    Event,
    RequestHeader,
    RequestHeaderData,
    SurfaceReplace,
    SurfaceRestore,
    SurfaceRevise,
)
from agent.log.session import Session

Estimate = Callable[[list[dict[str, Any]]], int]


def expected_cache(
    session: Session,
    system: dict[str, Any],
    *,
    now: float,
    ttl_s: float,
    estimate: Estimate | None,
) -> CacheExpected | None:
    """The expectation for the request about to go out (its header already logged;
    ``system``: its system message), or None when nothing is expected to be cached. ``now``
    is the wall-clock time the log's event times are in; ``estimate`` sizes a prefix a
    rewrite cut short (None: such a prefix is not sized, and nothing is expected)."""
    events = session.events
    previous, rewritten, restored, new_header = _since_previous(events)
    if previous is None or previous.data.usage is None:
        return None  # a first request, or a previous one of unknown size
    since = max(0.0, now - previous.time)
    if since > ttl_s:
        return None
    if new_header and not _same_prompt(_header_before(events, previous.seq), _latest(events)):
        return None
    sent = previous.data.usage.prompt_tokens
    if not rewritten:
        return CacheExpected(prefix_tokens=sent, since_s=since)
    if estimate is None:
        return None
    kept = [] if restored else _unchanged_prefix(session, previous.seq)
    # The tool schemas (sent before the messages) are left out of the estimate: it errs
    # low, so a miss it reports is one, and one it misses is a few hundred tokens at most.
    tokens = min(sent, estimate([system, *kept]))
    return CacheExpected(prefix_tokens=tokens, since_s=since)


def _since_previous(events: Sequence[Event]) -> tuple[AssistantMessage | None, bool, bool, bool]:
    """(the newest reply, whether the surface was rewritten after it, whether a rewrite was
    undone after it, whether a request header was logged after it)."""
    rewritten = restored = new_header = False
    for event in reversed(events):
        if isinstance(event, AssistantMessage):
            return event, rewritten, restored, new_header
        op = event.surface_op
        rewritten |= isinstance(op, SurfaceReplace | SurfaceRestore | SurfaceRevise)
        restored |= isinstance(op, SurfaceRestore)
        new_header |= isinstance(event, RequestHeader)
    return None, rewritten, restored, new_header


def _unchanged_prefix(session: Session, before: int) -> list[dict[str, Any]]:
    """The messages of the surface's first nodes that the request answered by reply
    ``before`` sent as they are now: up to the first node added or revised after it."""
    kept: list[dict[str, Any]] = []
    for seq in session.surface:
        revised = session.revised_by(seq)
        if seq >= before or (revised is not None and revised > before):
            break
        message = session.node_message(seq)
        if message is not None:
            kept.append(dict(message))
    return kept


def _header_before(events: Sequence[Event], seq: int) -> RequestHeaderData | None:
    """The request header in effect for an event at ``seq`` (the last one logged before)."""
    for i in range(seq - 1, -1, -1):
        event = events[i]
        if isinstance(event, RequestHeader):
            return event.data
    return None


def _latest(events: Sequence[Event]) -> RequestHeaderData | None:
    return _header_before(events, len(events))


def _same_prompt(a: RequestHeaderData | None, b: RequestHeaderData | None) -> bool:
    """Whether two headers send the same prefix: model, system prompt and tools (sampling
    parameters and the window change nothing the provider caches)."""
    if a is None or b is None:
        return a is b
    return (a.model, a.system, a.tools) == (b.model, b.system, b.tools)
