"""What a request costs at a provider that caches prompts: the prefix-cache model of the benches.

Providers that cache prompts (Anthropic, DeepSeek, OpenAI, llama.cpp's slots) serve the
longest *prefix* of a request that an earlier request already sent from cache and bill it at
a fraction of the input price; from the first byte that differs on, everything is read (and
billed) in full. This model compares requests message by message: the header (tools and the
system message) is the first unit, then each message in order, each compared byte for byte on
its JSON. A request's cached tokens are the tokens of its longest prefix of units that some
earlier request of the same run sent, and count only from :data:`MIN_CACHED_TOKENS` on, as
providers do.

Linear in what is sent: each request hashes its cumulative prefixes (a hash chain over the
units) and the run keeps the set of chains it has seen, so a prefix is looked up in O(1).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.chat import ChatRequest
from agent.tokens import Estimator

MIN_CACHED_TOKENS = 1_024
"""A shorter matching prefix is not cached (OpenAI's and DeepSeek's minimum)."""
CACHE_PRICES = (0.1, 0.25)
"""Cached input as a share of the input price: about a tenth at Anthropic, DeepSeek and
current OpenAI models, a quarter at some older ones."""


class Counter:
    """Prices messages independently of the client, each distinct message (by its JSON) once,
    so a long uncompacted session does not cost quadratic tokenizing time."""

    def __init__(self, estimator: Estimator) -> None:
        self.estimator = estimator
        self._messages: dict[str, int] = {}
        self._tools: dict[str, int] = {}

    def message(self, key: str, message: Mapping[str, Any]) -> int:
        """The tokens of ``message``, whose JSON is ``key``."""
        price = self._messages.get(key)
        if price is None:
            price = self._messages[key] = self.estimator.message_tokens(message)
        return price

    def tools(self, key: str, tools: Sequence[Mapping[str, Any]]) -> int:
        price = self._tools.get(key)
        if price is None:
            price = self._tools[key] = self.estimator.tools_tokens(tools)
        return price

    def request(self, request: ChatRequest) -> int:
        """The prompt tokens of ``request``."""
        return sum(tokens for _, tokens in units(self, request))


def units(counter: Counter, request: ChatRequest) -> list[tuple[str, int]]:
    """The request as the cache compares it: (JSON, tokens) of the header (tools and the
    system message), then of each further message in order."""
    tools = json.dumps(request.tools, sort_keys=True)
    out: list[tuple[str, int]] = []
    header_tokens = counter.tools(tools, request.tools)
    rest = request.messages
    if rest and rest[0].get("role") == "system":
        system = json.dumps(rest[0], sort_keys=True)
        header_tokens += counter.message(system, rest[0])
        tools += system
        rest = rest[1:]
    out.append((tools, header_tokens))
    for message in rest:
        key = json.dumps(message, sort_keys=True)
        out.append((key, counter.message(key, message)))
    return out


@dataclass(frozen=True)
class Priced:
    """One request as the provider bills it."""

    prompt: int
    cached: int
    refused: bool = False
    """Over the model's window: the provider answered with an error."""

    def billed(self, cache_price: float) -> float:
        """Input tokens billed, in full-price tokens."""
        return self.prompt - self.cached + cache_price * self.cached


class PromptCache:
    """The prefix cache of one run (one conversation against one provider), and its totals."""

    def __init__(self, counter: Counter, min_cached: int = MIN_CACHED_TOKENS) -> None:
        self.counter = counter
        self.min_cached = min_cached
        self._seen: set[bytes] = set()
        self.prompt_tokens = 0
        self.cached_tokens = 0

    def price(self, request: ChatRequest, *, limit: int | None = None) -> Priced:
        """Price ``request`` against what this run sent before, and count it. A request of
        more than ``limit`` tokens is refused by the provider: it is counted as sent, but
        warms nothing for the requests after it."""
        sent = units(self.counter, request)
        total = sum(tokens for _, tokens in sent)
        refused = limit is not None and total > limit
        chain = b""
        upto = cached = 0
        matching = True
        for key, tokens in sent:
            chain = hashlib.blake2b(chain + key.encode(), digest_size=16).digest()
            upto += tokens
            if matching and chain in self._seen:
                cached = upto
            else:
                # A chain covers every unit before it: once one misses, all longer ones do.
                matching = False
                if not refused:
                    self._seen.add(chain)
        if cached < self.min_cached:
            cached = 0
        self.prompt_tokens += total
        self.cached_tokens += cached
        return Priced(total, cached, refused)

    def billed(self, cache_price: float) -> float:
        """The run's input billed at ``cache_price`` for cached tokens, in full-price tokens."""
        return self.prompt_tokens - self.cached_tokens + cache_price * self.cached_tokens

    @property
    def hit_rate(self) -> float:
        """Share of the run's prompt tokens served from cache."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0
