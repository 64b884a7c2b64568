"""What a request costs at an Anthropic-style cache: one that caches only up to marks.

Anthropic's models (directly, or behind a gateway) cache a prefix only where the request
marks one (``cache_control`` on a content part, :mod:`agent.llm.cache_marks`). The request
is compared as :mod:`tests.bench.economy` compares it: the header (tools and the system
message), then each message, as JSON without the marks. Then:

* a marked prefix of at least :data:`MIN_CACHED_TOKENS` tokens is written to the cache;
* the request reads the longest prefix that an earlier request wrote, looked up at each of
  its marks and up to :data:`LOOKBACK` units before it (Anthropic's look-back);
* from there to its last mark it writes, billed :data:`WRITE_PRICE` × the input price;
  everything after its last mark is read in full.

Without marks nothing is cached: every request is billed in full. A request refused as over
the window is counted as sent and writes nothing. Expiry (the TTL) is not modelled: the
benches have no clock.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from agent.llm.cache_marks import marked, marks
from agent.llm.chat import ChatRequest
from tests.bench.economy import Counter, Priced, PromptCache, units

MIN_CACHED_TOKENS = 1_024
"""A marked prefix shorter than this is not cached (Claude Sonnet's and Opus's minimum)."""
LOOKBACK = 20
"""Units before a mark where an earlier entry is still found (Anthropic: about 20 blocks)."""
WRITE_PRICE = 1.25
"""Writing a prefix to the cache, as a share of the input price (the 5-minute cache)."""


@dataclass
class MarkedCache:
    """The Anthropic-style cache of one run, and its totals. ``breakpoints``: the requests
    carry reefline's cache marks (as its client sends them); False: none."""

    counter: Counter
    breakpoints: bool
    prompt_tokens: int = 0
    cached_tokens: int = 0
    written_tokens: int = 0
    most_marks: int = 0
    """The most marks one request carried."""
    reference: PromptCache | None = None
    """Prices every request as well, as a cache of every prefix (OpenAI's, DeepSeek's) would:
    the most any marks can read."""
    _entries: set[bytes] = field(default_factory=set)

    def price(self, request: ChatRequest, *, limit: int | None = None) -> Priced:
        """Price ``request`` against the prefixes this run wrote, and count it."""
        if self.reference is not None:
            self.reference.price(request, limit=limit)
        sent = units(self.counter, request)
        flags = self._marked_units(request)
        chains: list[bytes] = []
        ends: list[int] = []
        chain, total = b"", 0
        for key, tokens in sent:
            chain = hashlib.blake2b(chain + key.encode(), digest_size=16).digest()
            total += tokens
            chains.append(chain)
            ends.append(total)
        refused = limit is not None and total > limit
        read = written = 0
        marked_at = [i for i, flag in enumerate(flags) if flag]
        if marked_at:
            reach = {j for m in marked_at for j in range(max(0, m - LOOKBACK), m + 1)}
            read = max((ends[j] for j in reach if chains[j] in self._entries), default=0)
            last = marked_at[-1]
            if not refused and ends[last] >= MIN_CACHED_TOKENS:
                written = ends[last] - read
                self._entries.update(chains[m] for m in marked_at if ends[m] >= MIN_CACHED_TOKENS)
        self.prompt_tokens += total
        self.cached_tokens += read
        self.written_tokens += written
        return Priced(total, read, refused)

    def _marked_units(self, request: ChatRequest) -> list[bool]:
        """Per unit of :func:`units` (the header, then each message after the system one):
        whether the wire request marks it."""
        if not self.breakpoints:
            return [False] * (len(request.messages) + 1)
        wire = marked(request)
        self.most_marks = max(self.most_marks, marks(wire))
        flags = [marks([m]) > 0 for m in wire]
        if wire and wire[0].get("role") == "system":
            return flags  # the system message's flag is the header's
        return [False, *flags]

    def billed(self, cache_price: float) -> float:
        """The run's input billed at ``cache_price`` for a read and :data:`WRITE_PRICE` for a
        write, in full-price tokens."""
        full = self.prompt_tokens - self.cached_tokens - self.written_tokens
        return full + cache_price * self.cached_tokens + WRITE_PRICE * self.written_tokens

    @property
    def hit_rate(self) -> float:
        """Share of the run's prompt tokens read from the cache."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0
