"""What a session's provider does with a repeated prompt prefix: the cache plan.

Providers bill the longest prefix of a request that an earlier request sent at a fraction
of the input price, but each in its own way:

* OpenAI and DeepSeek cache every prefix of 1,024 tokens or more on their own. OpenAI
  routes a request to a machine by its prefix and, where it is given, ``prompt_cache_key``:
  a stable key keeps one session's requests on machines that hold its prefix.
* Anthropic's models (Claude, directly or behind an OpenAI-compatible gateway such as
  OpenRouter or LiteLLM) cache nothing unless the request marks where a cached prefix ends
  (``cache_control`` on a content part, at most four per request); writing a marked prefix
  costs 1.25× the input price, reading it 0.1×.
* A local server (llama.cpp, Ollama, vLLM) reuses its KV cache for as long as the slot
  holds the conversation.

Caches expire: a prefix not read for the TTL is gone, and the next request reads it in full.
The TTLs below are the providers' documented defaults; ``cache_ttl_s`` overrides them.
"""

from __future__ import annotations

import math
import urllib.parse
from dataclasses import dataclass
from typing import Literal

CacheBreakpoints = Literal["auto", "anthropic", "off"]
"""``cache_breakpoints``: ``auto`` marks requests for Claude models and Anthropic-compatible
endpoints only, ``anthropic`` always, ``off`` never."""

MAX_BREAKPOINTS = 4
"""Anthropic takes at most four ``cache_control`` marks in one request."""

DEFAULT_TTL_S: dict[str, float] = {
    "openai": 300.0,
    "deepseek": 3600.0,
    "local": math.inf,
    "scripted": math.inf,
}
"""Seconds a prefix stays cached after its last use, by provider name: OpenAI documents
"5 to 10 minutes of inactivity" (the shorter is taken), DeepSeek clears its disk cache
"within a few hours to a few days" (an hour is taken), a local server keeps its slot until
another conversation takes it. Any other server: :data:`OTHER_TTL_S`."""

OTHER_TTL_S = 300.0
"""An unknown OpenAI-compatible server (a gateway, most often): Anthropic's default 5
minutes, the shortest of the hosted caches."""

ANTHROPIC_HOSTS = ("api.anthropic.com",)
"""Hosts that speak Anthropic's cache dialect whatever the model is called."""


@dataclass(frozen=True)
class CachePlan:
    """How requests to one provider are shaped for its prompt cache, and how long a prefix
    it was sent stays cached."""

    breakpoints: bool
    """Mark the request's cache breakpoints (``cache_control``)."""
    ttl_s: float
    """Seconds a prefix stays cached after its last use (``math.inf``: as long as the
    server keeps it)."""

    def cold(self, idle_s: float | None) -> bool:
        """Whether a prefix last sent ``idle_s`` seconds ago has expired (None: nothing was
        sent yet, so nothing is cached)."""
        return idle_s is None or idle_s > self.ttl_s


def anthropic_style(model: str, base_url: str | None) -> bool:
    """Whether requests to ``model`` at ``base_url`` need ``cache_control`` marks to be
    cached: a Claude model name (``claude-…``, ``anthropic/claude-…``) or Anthropic's host."""
    if "claude" in model.lower():
        return True
    if not base_url:
        return False
    try:
        host = urllib.parse.urlsplit(base_url).hostname or ""
    except ValueError:
        return False
    return host in ANTHROPIC_HOSTS


def cache_plan(
    name: str,
    model: str,
    base_url: str | None,
    *,
    breakpoints: CacheBreakpoints = "auto",
    ttl_s: float | None = None,
) -> CachePlan:
    """The plan for provider ``name`` (openai, deepseek, local, openai-compatible, scripted)
    serving ``model`` at ``base_url``, with the ``cache_breakpoints`` and ``cache_ttl_s``
    settings (None: the provider's default, :data:`DEFAULT_TTL_S`)."""
    marked = breakpoints == "anthropic" or (
        breakpoints == "auto" and name != "scripted" and anthropic_style(model, base_url)
    )
    if ttl_s is None:
        ttl_s = 300.0 if marked else DEFAULT_TTL_S.get(name, OTHER_TTL_S)
    return CachePlan(breakpoints=marked, ttl_s=ttl_s)
