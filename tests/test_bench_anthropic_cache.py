"""The breakpoints bench's Anthropic-style cache model, checked on every test run: nothing is
cached without a mark, a marked prefix is written once and read after."""

from __future__ import annotations

from typing import Any

from agent.llm.chat import ChatRequest
from agent.tokens import Estimator
from tests.bench.anthropic_cache import WRITE_PRICE, MarkedCache
from tests.bench.economy import Counter

SYSTEM = {"role": "system", "content": "You are a bench."}


def user(tag: str, words: int = 1500) -> dict[str, Any]:
    return {"role": "user", "content": f"{tag} " + "lorem " * words}


def reply(tag: str) -> dict[str, Any]:
    return {"role": "assistant", "content": f"Noted {tag}."}


def test_marks_write_a_prefix_once_and_the_next_request_reads_it() -> None:
    counter = Counter(Estimator())
    first = ChatRequest("m", [SYSTEM, user("a")])
    second = ChatRequest("m", [SYSTEM, user("a"), reply("a"), user("b")])
    marked, bare = MarkedCache(counter, True), MarkedCache(counter, False)
    for cache in (marked, bare):
        one, two = cache.price(first), cache.price(second)
        assert two.prompt > one.prompt > 1_024
    assert bare.cached_tokens == bare.written_tokens == 0
    assert bare.billed(0.1) == bare.prompt_tokens
    # The first request wrote its whole prompt; the second read it and wrote what follows.
    assert marked.cached_tokens == counter.request(first)
    assert marked.written_tokens == marked.prompt_tokens - marked.cached_tokens
    full = marked.prompt_tokens - marked.cached_tokens - marked.written_tokens
    assert full == 0 and marked.most_marks == 3  # system, the newest, the previous end
    assert marked.billed(0.1) == 0.1 * marked.cached_tokens + WRITE_PRICE * marked.written_tokens


def test_a_request_over_the_window_writes_nothing() -> None:
    counter = Counter(Estimator())
    cache = MarkedCache(counter, True)
    request = ChatRequest("m", [SYSTEM, user("a")])
    assert cache.price(request, limit=100).refused
    assert cache.price(request).cached == 0  # nothing was written by the refused one
