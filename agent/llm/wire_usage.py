"""The usage a server reports, in each dialect's words, as one :class:`~agent.log.events.Usage`.

Where each dialect puts its prompt-cache figure (the part of the prompt it served from its
cache):

* OpenAI (and llama.cpp's server, which says it both ways): ``usage.prompt_tokens_details
  .cached_tokens``;
* DeepSeek: ``usage.prompt_cache_hit_tokens`` (beside ``prompt_cache_miss_tokens``; the two
  add up to the prompt);
* llama.cpp: ``timings.cache_n`` on the chunk that ends the reply, and ``tokens_cached`` in
  its native completion answers (read from the usage or the chunk, wherever it comes).

A server that says none of these reported no cache figure: ``cached_tokens`` is None ("not
reported"), never 0. Figures that are not whole non-negative numbers are ignored, not
trusted: a server's numbers are data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.log.events import Usage


def field_of(value: Any, name: str) -> Any:
    """``value.name`` for an SDK object (declared field or one it kept as extra), or
    ``value[name]`` for a plain mapping; None when there is none."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value.get(name)
    found = getattr(value, name, None)
    if found is None:
        extra = getattr(value, "model_extra", None)
        if isinstance(extra, Mapping):
            found = extra.get(name)
    return found


def count(value: Any) -> int | None:
    """A token count as the server gave it, or None when it is not a whole number ≥ 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value) if value >= 0 else None


def chunk_cache_figure(chunk: Any) -> int | None:
    """A cache figure a llama.cpp chunk carries beside the usage (``timings.cache_n`` or a
    top-level ``tokens_cached``), or None."""
    found = count(field_of(field_of(chunk, "timings"), "cache_n"))
    return found if found is not None else count(field_of(chunk, "tokens_cached"))


def parse_usage(raw: Any, chunk_cached: int | None = None) -> Usage:
    """The usage ``raw`` (an SDK usage object or a mapping) reports; ``chunk_cached`` is
    :func:`chunk_cache_figure` of the chunks around it, used when the usage itself names no
    cache figure."""
    hit = count(field_of(raw, "prompt_cache_hit_tokens"))
    miss = count(field_of(raw, "prompt_cache_miss_tokens"))
    prompt = count(field_of(raw, "prompt_tokens"))
    if prompt is None:
        prompt = (hit or 0) + (miss or 0)
    cached = count(field_of(field_of(raw, "prompt_tokens_details"), "cached_tokens"))
    for other in (hit, count(field_of(raw, "tokens_cached")), chunk_cached):
        if cached is None:
            cached = other
        elif other is not None:
            # DeepSeek also fills the OpenAI field, with 0 (its documented example does):
            # its own figure is the one that counts.
            cached = max(cached, other)
    reasoning = count(field_of(field_of(raw, "completion_tokens_details"), "reasoning_tokens"))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=count(field_of(raw, "completion_tokens")) or 0,
        cached_tokens=None if cached is None else min(cached, prompt),
        reasoning_tokens=reasoning or 0,
    )
