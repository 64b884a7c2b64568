"""Cache misses: a reply whose request's prefix the provider should have served from its
prompt cache (:class:`agent.log.events.CacheExpected`, logged with the reply) but reported
mostly uncached. The one judgement and wording of a miss: the core's warning (a notice as
the reply is logged), the usage totals (:mod:`agent.usage_totals`: ``/context`` and
``reefline sessions``) all ask :func:`cache_miss`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from agent.formatting import fmt_duration, fmt_tokens
from agent.log.usage_figures import token_figure

MIN_PREFIX_TOKENS = 1_024
"""Providers cache no prefix shorter than this (OpenAI's and Anthropic's minimum): a
shorter one is never a miss."""

MISS_BELOW = 0.5
"""A request is a miss when the provider served less than this share of the prefix it was
expected to serve. Half, because a hit is all or nearly all of the prefix (the cache is
read in blocks of 128 to 1,024 tokens, so a few hundred tokens short is still a hit), while
a miss is nearly none of it (an expired or evicted prefix, a request routed to a machine
that never saw it): anything in between is rare, and below half the person pays more than
half the prefix at the full price, which is worth a line; above it a warning would mostly
report block rounding or a partly evicted cache nobody can act on."""


@dataclass(frozen=True)
class CacheMiss:
    """One miss: the prefix expected cached, what the provider served of it, and how long
    before the request the prefix was last sent."""

    prefix_tokens: int
    cached: int
    since_s: float

    @property
    def billed_in_full(self) -> int:
        """Tokens of the prefix billed at the full input price that the cache should have
        served."""
        return max(0, self.prefix_tokens - self.cached)

    @property
    def line(self) -> str:
        """``the provider served 3% of a prefix it had 2m 05s ago: 41k tokens billed in
        full``."""
        share = 100 * self.cached / self.prefix_tokens
        return (
            f"the provider served {share:.0f}% of a prefix it had {fmt_duration(self.since_s)} "
            f"ago: {fmt_tokens(self.billed_in_full)} tokens billed in full"
        )


def cache_miss(cached: int | None, expected: object) -> CacheMiss | None:
    """The miss a reply records, or None: ``cached`` is the cache figure its usage reported
    (None: the server reports none, so no miss can be told), ``expected`` its logged
    ``cache_expected`` (a :class:`~agent.log.events.CacheExpected`, or the mapping a raw log
    line holds; anything else expected nothing). A prefix under :data:`MIN_PREFIX_TOKENS`
    is never a miss."""
    figures = expected_figures(expected)
    if cached is None or figures is None:
        return None
    prefix, since = figures
    if prefix < MIN_PREFIX_TOKENS or cached >= MISS_BELOW * prefix:
        return None
    return CacheMiss(prefix, cached, since)


def expected_figures(expected: object) -> tuple[int, float] | None:
    """(prefix tokens, seconds since) of a logged expectation, checked as any figure read
    from a log is (:func:`agent.log.usage_figures.token_figure`); None when there is none."""
    if expected is None:
        return None
    if not isinstance(expected, Mapping):
        expected = {
            "prefix_tokens": getattr(expected, "prefix_tokens", None),
            "since_s": getattr(expected, "since_s", None),
        }
    prefix = token_figure(expected.get("prefix_tokens"))
    since = expected.get("since_s")
    if prefix is None or isinstance(since, bool) or not isinstance(since, int | float):
        return None
    if not math.isfinite(since) or since < 0:
        return None
    return prefix, float(since)
