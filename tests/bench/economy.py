"""What a request costs at a provider that caches prompts: the prefix-cache model of the benches.

Providers that cache prompts (Anthropic, DeepSeek, OpenAI, llama.cpp's slots) serve the
longest *prefix* of a request that an earlier request already sent from cache and bill it at
a fraction of the input price; from the first token that differs on, everything is read (and
billed) in full. This model compares the serialized request: the header (tools and the system
message) first, then each message in order, as JSON. A request's cached tokens are the
tokens of its longest common prefix with some earlier request of the same run — every whole
unit (header, message) that matches, and then the common prefix of the first one that
differs, up to its first differing character (counted by the estimator on that much of its
JSON) — rounded down to whole :data:`CACHE_STEP_TOKENS` steps (OpenAI caches in 128-token
increments, DeepSeek in 64-token units), and count only from :data:`MIN_CACHED_TOKENS` on, as
providers do. So a message that only *extends* one sent before (a checkpoint that keeps the
previous one as its first part) is a hit on the part it repeats; a message that differs from
its first byte is a miss from there, as before.

Linear in what is sent: each request hashes its cumulative prefixes (a hash chain over the
units) and the run keeps the set of chains it has seen, with the units sent after each, so a
prefix is looked up in O(1) and only the first differing unit is compared character-wise.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.llm.chat import ChatRequest
from agent.tokens import Estimator

MIN_CACHED_TOKENS = 1_024
"""A shorter matching prefix is not cached (OpenAI's and DeepSeek's minimum)."""
CACHE_STEP_TOKENS = 128
"""Cached tokens come in whole steps of this many (OpenAI's increment)."""
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
        # Interned: the cache keeps every distinct unit it saw, once however often it is sent.
        key = sys.intern(json.dumps(message, sort_keys=True))
        out.append((key, counter.message(key, message)))
    return out


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (a binary search of slice
    comparisons, each done in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


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

    def __init__(
        self,
        counter: Counter,
        min_cached: int = MIN_CACHED_TOKENS,
        step: int = CACHE_STEP_TOKENS,
    ) -> None:
        self.counter = counter
        self.min_cached = min_cached
        self.step = step
        self._seen: set[bytes] = set()
        self._after: dict[bytes, set[str]] = {}
        """For each chain seen, the units sent right after it."""
        self.prompt_tokens = 0
        self.cached_tokens = 0

    def price(self, request: ChatRequest, *, limit: int | None = None) -> Priced:
        """Price ``request`` against what this run sent before, and count it. A request of
        more than ``limit`` tokens is refused by the provider: it is counted as sent, but
        warms nothing for the requests after it."""
        sent = units(self.counter, request)
        total = sum(tokens for _, tokens in sent)
        refused = limit is not None and total > limit
        chains: list[tuple[bytes, bytes, str]] = []
        chain = b""
        cached = 0
        matching = True
        for key, tokens in sent:
            parent = chain
            chain = hashlib.blake2b(chain + key.encode(), digest_size=16).digest()
            chains.append((parent, chain, key))
            if not matching:
                continue
            if chain in self._seen:
                cached += tokens
                continue
            # A chain covers every unit before it: once one misses, all longer ones do. The
            # one that misses is still a hit up to its first character no earlier unit at
            # this place shares.
            matching = False
            shared = max(
                (common_prefix(key, seen) for seen in self._after.get(parent, ())), default=0
            )
            if shared:
                cached += min(tokens, self.counter.estimator.count(key[:shared]))
        if not refused:
            for parent, chain, key in chains:
                self._seen.add(chain)
                self._after.setdefault(parent, set()).add(key)
        cached -= cached % self.step
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


class ExpiringPromptCache(PromptCache):
    """The prefix cache of a provider whose prefixes expire: one not used for ``ttl_s``
    seconds on ``clock`` (the bench's, which its pauses move on) is gone, and a request
    that would have hit it reads it in full. Used like :class:`PromptCache`."""

    def __init__(
        self,
        counter: Counter,
        clock: Callable[[], float],
        ttl_s: float,
        min_cached: int = MIN_CACHED_TOKENS,
        step: int = CACHE_STEP_TOKENS,
    ) -> None:
        super().__init__(counter, min_cached, step)
        self.clock = clock
        self.ttl_s = ttl_s
        self._used: dict[bytes, tuple[float, bytes, str]] = {}
        """For each chain seen: when it was last sent, its parent and its last unit."""

    def price(self, request: ChatRequest, *, limit: int | None = None) -> Priced:
        now = self.clock()
        for chain, (used, parent, key) in list(self._used.items()):
            if now - used > self.ttl_s:
                del self._used[chain]
                self._seen.discard(chain)
                self._after.get(parent, set()).discard(key)
        priced = super().price(request, limit=limit)
        if not priced.refused:
            chain = b""
            for key, _ in units(self.counter, request):
                parent = chain
                chain = hashlib.blake2b(chain + key.encode(), digest_size=16).digest()
                self._used[chain] = (now, parent, key)
        return priced
