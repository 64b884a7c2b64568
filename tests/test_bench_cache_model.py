"""The benchmarks' prefix-cache model and scripted summarizer, checked on every test run: the
fidelity bench's billed input and facts are only as right as they are."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent.llm.chat import ChatRequest, collect
from agent.tokens import Estimator
from tests.bench.economy import CACHE_STEP_TOKENS, MIN_CACHED_TOKENS, Counter, PromptCache
from tests.bench.fidelity_model import BenchModel, Shape, plant

SYSTEM = {"role": "system", "content": "You are a bench."}


@pytest.fixture(scope="module")
def counter() -> Counter:
    return Counter(Estimator())


def text_of(counter: Counter, tokens: int, tag: str) -> dict[str, Any]:
    """A user message of about ``tokens`` tokens, distinct by ``tag``."""
    message = {"role": "user", "content": f"{tag} " + "lorem " * tokens}
    assert abs(counter.request(ChatRequest("m", [message])) - tokens) < 20
    return message


def request(*messages: dict[str, Any]) -> ChatRequest:
    return ChatRequest("m", [SYSTEM, *messages])


def whole_steps(tokens: int) -> int:
    return tokens - tokens % CACHE_STEP_TOKENS


def test_a_shared_prefix_of_2000_tokens_is_cached_whole_in_128_token_steps(
    counter: Counter,
) -> None:
    cache = PromptCache(counter)
    a = text_of(counter, 1_200, "a")
    b = text_of(counter, 800, "b")
    first = cache.price(request(a, b))
    assert first.cached == 0
    assert first.prompt >= 2_000
    second = cache.price(request(a, b, text_of(counter, 300, "c")))
    hit = whole_steps(first.prompt)
    assert second.cached == hit and first.prompt - CACHE_STEP_TOKENS < hit
    assert second.prompt > first.prompt
    assert cache.prompt_tokens == first.prompt + second.prompt
    assert cache.cached_tokens == hit
    assert cache.billed(0.1) == pytest.approx(first.prompt + second.prompt - 0.9 * hit)
    assert cache.hit_rate == pytest.approx(hit / (first.prompt + second.prompt))


def test_a_prefix_under_1024_tokens_is_not_cached(counter: Counter) -> None:
    cache = PromptCache(counter)
    short = text_of(counter, 600, "a")
    first = cache.price(request(short))
    assert first.prompt < MIN_CACHED_TOKENS
    second = cache.price(request(short, text_of(counter, 2_000, "b")))
    assert second.cached == 0
    assert cache.cached_tokens == 0


def test_a_changed_message_in_the_middle_caches_only_up_to_its_first_change(
    counter: Counter,
) -> None:
    cache = PromptCache(counter)
    a, b, c = (text_of(counter, 1_500, tag) for tag in "abc")
    cache.price(request(a, b, c))
    alone = PromptCache(counter).price(request(a)).prompt
    # Changed from its first byte: a hit up to it, as if the message were not there.
    other = {**b, "content": "x" + b["content"]}
    assert cache.price(request(a, other, c)).cached == whole_steps(alone)
    # Changed at its end: a hit on all of it up to the change, never on what follows it
    # (the same messages after a change are not a hit: a prefix starts at the head).
    changed = {**b, "content": b["content"] + " (masked)"}
    second = cache.price(request(a, changed, c))
    through_b = PromptCache(counter).price(request(a, b)).prompt
    assert whole_steps(through_b) - CACHE_STEP_TOKENS <= second.cached <= through_b
    assert second.cached < second.prompt - counter.request(request(c))


def test_a_message_that_extends_an_earlier_one_is_a_hit_on_what_it_repeats(
    counter: Counter,
) -> None:
    """A checkpoint that begins with the previous one byte for byte (and adds a section)
    is served from cache up to where it adds; the serialized prefix is compared, not
    whole messages."""
    cache = PromptCache(counter)
    old = text_of(counter, 2_000, "checkpoint")
    cache.price(request(old, text_of(counter, 500, "tail")))
    extended = {**old, "content": old["content"] + "\n\nContinued: " + "ipsum " * 300}
    second = cache.price(request(extended, text_of(counter, 500, "new tail")))
    upto = PromptCache(counter).price(request(old)).prompt
    assert whole_steps(upto) - CACHE_STEP_TOKENS <= second.cached <= upto
    assert second.cached >= MIN_CACHED_TOKENS


def test_the_header_is_part_of_the_prefix_and_a_refused_request_warms_nothing(
    counter: Counter,
) -> None:
    cache = PromptCache(counter)
    a = text_of(counter, 2_000, "a")
    assert cache.price(request(a), limit=1_000).refused
    assert cache.price(request(a)).cached == 0
    other_tools = ChatRequest("m", [SYSTEM, a], tools=[{"type": "function", "function": {}}])
    assert cache.price(other_tools).cached == 0
    assert cache.price(request(a, text_of(counter, 10, "b"))).cached > 0


def summarize(model: BenchModel, messages: list[dict[str, Any]], final: str) -> str:
    req = ChatRequest("m", [SYSTEM, *messages, {"role": "user", "content": final}])
    req.tool_choice = "none"
    req.max_tokens = 4_000
    reply = asyncio.run(collect(model.stream(req)))
    assert reply.finish_reason == "stop"
    return reply.text


def test_the_scripted_summarizer_keeps_the_newest_value_by_where_an_original_stands(
    counter: Counter,
) -> None:
    shape = Shape(turns=4, steps=12, window=16_000, output_tokens=1_500)
    facts = plant(shape)
    port = next(f for f in facts if f.old_key)
    model = BenchModel("silent", counter, shape, facts, shape.window)
    checkpoint = {"role": "user", "content": f"<compacted-summary>\n- {port.old_sentence}\n"}
    call = {"id": "call-3-1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    messages: list[dict[str, Any]] = [
        checkpoint,
        {"role": "assistant", "content": "Step 1.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call-3-1", "content": "[output pruned: `cat`]"},
    ]
    # The newer value is only in the appendix, as the original of a placeholder that comes
    # after the checkpoint: it is the newest, although the appendix is read last.
    final = (
        "Originals, oldest first.\n\n### Output of `cat out-3-1.log` (tool call call-3-1)\n"
        f"NOTE {port.sentence}\n\n---\n\nWrite a checkpoint summary."
    )
    text = summarize(model, messages, final)
    assert port.key in text and port.old_key not in text
    # And an original the messages do not place counts as older than all of them.
    messages[-1] = {**messages[-1], "tool_call_id": "call-other"}
    text = summarize(model, messages, final)
    assert port.old_key in text and port.key not in text
    assert model.summary_calls == 2
