"""A model call's usage as events carry it: :class:`Usage`, and :data:`ReportedUsage`, the
field type that checks it (:mod:`agent.log.usage_figures`) wherever an event is made or
loaded."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field

from agent.log.event_data import Data
from agent.log.usage_figures import usage_figures


class Usage(Data):
    """Provider-reported token usage of one request (buckets as the OpenAI API reports them).

    ``cached_tokens`` is the part of ``prompt_tokens`` the provider served from its prompt
    cache; None when the provider reported no cache figure (logs written before it could be
    None hold 0 there either way).
    """

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = None
    reasoning_tokens: int = 0

    def plus(self, other: Usage | None) -> Usage:
        """The usage of both requests (``other`` None: this one). The cached figure is None
        only when neither reported one."""
        if other is None:
            return self
        cached = None
        if self.cached_tokens is not None or other.cached_tokens is not None:
            cached = (self.cached_tokens or 0) + (other.cached_tokens or 0)
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=cached,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )

    @classmethod
    def reported(cls, raw: object) -> Usage | None:
        """The usage ``raw`` (a mapping as logged, or a Usage) says, or None when its figures
        are not token counts (:func:`agent.log.usage_figures.usage_figures`): a server's
        ``10**400`` in an old log loads as "not reported"."""
        if isinstance(raw, Usage):
            raw = raw.model_dump()
        figures = usage_figures(raw)
        return None if figures is None else cls(**figures)


class CacheExpected(Data):
    """What the provider was expected to serve from its prompt cache for one request: the
    tokens of the prefix the previous request already sent unchanged, and the seconds since
    that request. Logged with the reply (:mod:`agent.cache_expectation`) only when the prefix
    was within the provider's cache TTL; a reply without it expected nothing (the first
    request, one after the TTL, a new model or tool set, or a log older than this field)."""

    prefix_tokens: int = Field(ge=0)
    since_s: float = Field(ge=0)


def _reported_usage(value: object) -> object:
    return None if value is None else Usage.reported(value)


ReportedUsage = Annotated[Usage | None, BeforeValidator(_reported_usage)]
"""How an event carries a call's usage: checked wherever it is made or loaded, so no view of
a log meets a figure no server could have meant."""
