"""The usage a server reports, in each dialect's words, as one :class:`~agent.log.events.Usage`.

Where each dialect puts its prompt-cache figure (the part of the prompt it served from its
cache):

* OpenAI (and llama.cpp's server, which says it both ways): ``usage.prompt_tokens_details
  .cached_tokens``;
* DeepSeek: ``usage.prompt_cache_hit_tokens`` (beside ``prompt_cache_miss_tokens``; the two
  add up to the prompt);
* gateways in front of Anthropic's cache: OpenRouter the OpenAI field (with
  ``cache_write_tokens`` beside it), LiteLLM the OpenAI field and, at the top of the usage,
  Anthropic's own ``cache_read_input_tokens`` (beside ``cache_creation_input_tokens``: what
  was written, billed 1.25×, not cached);
* llama.cpp: ``timings.cache_n`` on the chunk that ends the reply, and ``tokens_cached`` in
  its native completion answers (read from the usage or the chunk, wherever it comes).

A server that says none of these reported no cache figure: ``cached_tokens`` is None ("not
reported"), never 0. Every figure goes through :func:`agent.log.usage_figures.token_figure`
(a whole number, finite, 0 to a sane cap): a server's numbers are data. A usage whose prompt
or output figure the server sent but is not one (``10**400``, ``1e400``, ``NaN``, ``-1``,
``"12"``) is not reported at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.log.events import Usage
from agent.log.usage_figures import token_figure


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
    """A token count as the server gave it, or None when it is not one (:func:`token_figure`)."""
    return token_figure(value)


def chunk_cache_figure(chunk: Any) -> int | None:
    """A cache figure a llama.cpp chunk carries beside the usage (``timings.cache_n`` or a
    top-level ``tokens_cached``), or None."""
    found = count(field_of(field_of(chunk, "timings"), "cache_n"))
    return found if found is not None else count(field_of(chunk, "tokens_cached"))


def parse_usage(raw: Any, chunk_cached: int | None = None) -> Usage | None:
    """The usage ``raw`` (an SDK usage object or a mapping) reports, or None when a prompt or
    output figure it holds is not a token count; ``chunk_cached`` is
    :func:`chunk_cache_figure` of the chunks around it, used when the usage itself names no
    cache figure."""
    hit = count(field_of(raw, "prompt_cache_hit_tokens"))
    miss = count(field_of(raw, "prompt_cache_miss_tokens"))
    sent_prompt = field_of(raw, "prompt_tokens")
    prompt = count(sent_prompt)
    if sent_prompt is None:
        prompt = count((hit or 0) + (miss or 0))
    sent_output = field_of(raw, "completion_tokens")
    output = 0 if sent_output is None else count(sent_output)
    if prompt is None or output is None:
        return None
    cached = count(field_of(field_of(raw, "prompt_tokens_details"), "cached_tokens"))
    anthropic = count(field_of(raw, "cache_read_input_tokens"))
    for other in (hit, anthropic, count(field_of(raw, "tokens_cached")), chunk_cached):
        if cached is None:
            cached = other
        elif other is not None:
            # DeepSeek also fills the OpenAI field, with 0 (its documented example does):
            # its own figure is the one that counts.
            cached = max(cached, other)
    reasoning = count(field_of(field_of(raw, "completion_tokens_details"), "reasoning_tokens"))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=output,
        cached_tokens=None if cached is None else min(cached, prompt),
        reasoning_tokens=reasoning or 0,
    )
