"""The benchmarks' prefix cache with expiry (the cold-cache bench): a prefix sent within the
TTL is a hit, one last sent longer ago is read in full."""

from __future__ import annotations

from agent.llm.chat import ChatRequest
from agent.tokens import Estimator
from tests.bench.economy import Counter, ExpiringPromptCache

SYSTEM = {"role": "system", "content": "You are a bench."}


def test_a_prefix_expires_the_ttl_after_its_last_use() -> None:
    counter = Counter(Estimator())
    now = [1_000.0]
    cache = ExpiringPromptCache(counter, lambda: now[0], ttl_s=300)
    old = {"role": "user", "content": "old " + "lorem " * 1_500}
    first = ChatRequest("m", [SYSTEM, old])
    assert cache.price(first).cached == 0
    now[0] += 299
    warm = cache.price(ChatRequest("m", [SYSTEM, old, {"role": "user", "content": "more"}]))
    assert warm.cached >= 1_024
    now[0] += 301  # 301 s since the request just priced, which used the prefix again
    cold = cache.price(first)
    assert cold.cached == 0
    assert cache.price(first).cached > 0  # and the cold read cached it anew
