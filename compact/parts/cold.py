"""When the provider's prompt cache went cold: the time since the session's newest model
request, read from the log (its one record of what was sent and when).

A request's prefix stays cached for the provider's TTL after its last use
(:class:`agent.llm.prompt_cache.CachePlan`). The newest use the log records is the newest
step reply (``assistant/message``) or summarizer call (``compact/progress``,
``compact/summary``), stamped when it ended: no earlier than the provider last read the
prefix, so the cache is never taken for cold while it is warm on that account. A summary
written ahead is logged when it is committed, later than its calls: the same direction.
"""

from __future__ import annotations

from agent.log.events import AssistantMessage, Event
from agent.log.session import Session
from compact.contract.events import CompactProgress, CompactSummary

REQUESTS: tuple[type[Event], ...] = (AssistantMessage, CompactProgress, CompactSummary)
"""The events that record a model request's end."""


def last_request(session: Session) -> float | None:
    """The log time of the session's newest model request (None: none was made)."""
    for event in reversed(session.events):
        if isinstance(event, REQUESTS):
            return event.time
    return None


def idle_s(session: Session, now: float) -> float | None:
    """Seconds from the newest model request to ``now`` (None: none was made)."""
    last = last_request(session)
    return None if last is None else max(0.0, now - last)
