"""Providers' prompt-cache figures, in each wire shape, through the real client and a real
loopback server: OpenAI's ``prompt_tokens_details.cached_tokens``, DeepSeek's
``prompt_cache_hit_tokens``/``prompt_cache_miss_tokens``, llama.cpp's ``timings.cache_n``
and ``tokens_cached``, and a server that reports none ("not reported", never 0). The
recordings of real servers (tests/fixtures/wire) are replayed too: what the client made of
them is checked against what the recording says."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest

from agent.llm.chat import ChatRequest
from agent.llm.client import OpenAICompatible
from agent.llm.replies import Completed, Reply, StreamEvent
from agent.llm.retry import RetryPolicy
from agent.log.events import Usage
from agent.log.registry import EventRegistry
from agent.log.session import Session
from agent.loop import Agent
from tests.agent.test_llm import BASH
from tests.openai_server import OpenAIServer
from tests.wire import FIXTURES, Recording, ReplayServer


@pytest.fixture
async def model(openai_server: OpenAIServer) -> AsyncIterator[OpenAICompatible]:
    client = OpenAICompatible(
        openai_server.base_url, None, "local", retry=RetryPolicy(max_attempts=1)
    )
    yield client
    await client.aclose()


async def reply_of(model: OpenAICompatible, **kw: Any) -> Reply:
    request = ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}], **kw)
    async with aclosing(model.stream(request)) as stream:
        events: list[StreamEvent] = [event async for event in stream]
    assert isinstance(events[-1], Completed)
    return events[-1].reply


SHAPES: dict[str, tuple[dict[str, Any], dict[str, Any], int | None]] = {
    # name: (usage, more fields of the usage chunk, the cached figure expected)
    "openai": (
        {"prompt_tokens": 2000, "completion_tokens": 40,
         "prompt_tokens_details": {"cached_tokens": 1536}},
        {}, 1536,
    ),
    "deepseek": (
        {"prompt_tokens": 900, "completion_tokens": 5, "prompt_cache_hit_tokens": 640,
         "prompt_cache_miss_tokens": 260},
        {}, 640,
    ),
    "deepseek, also the OpenAI field at 0": (
        {"prompt_tokens": 900, "completion_tokens": 5, "prompt_tokens_details":
         {"cached_tokens": 0}, "prompt_cache_hit_tokens": 640, "prompt_cache_miss_tokens": 260},
        {}, 640,
    ),
    "llama.cpp timings beside the usage": (
        {"prompt_tokens": 762, "completion_tokens": 58},
        {"timings": {"cache_n": 660, "prompt_n": 102, "predicted_n": 58}}, 660,
    ),
    "llama.cpp tokens_cached": (
        {"prompt_tokens": 762, "completion_tokens": 58}, {"tokens_cached": 700}, 700,
    ),
    "no cache figure": ({"prompt_tokens": 443, "completion_tokens": 18}, {}, None),
    "a figure that is no count": (
        {"prompt_tokens": 443, "completion_tokens": 18,
         "prompt_tokens_details": {"cached_tokens": "lots"}},
        {"timings": {"cache_n": -3}}, None,
    ),
    "more cached than the prompt": (
        {"prompt_tokens": 100, "completion_tokens": 1,
         "prompt_tokens_details": {"cached_tokens": 5000}},
        {}, 100,
    ),
}  # fmt: skip


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_cache_figure_of_each_wire_shape_streamed(
    shape: str, model: OpenAICompatible, openai_server: OpenAIServer
) -> None:
    usage, chunk, cached = SHAPES[shape]
    openai_server.push({"text": "ok", "usage": usage, "usage_chunk": chunk})
    reply = await reply_of(model)
    assert reply.usage is not None
    assert reply.usage.cached_tokens == cached
    assert reply.usage.prompt_tokens == usage["prompt_tokens"]


@pytest.mark.parametrize("shape", ["openai", "deepseek", "llama.cpp timings beside the usage"])
async def test_cache_figure_of_a_whole_reply(
    shape: str, model: OpenAICompatible, openai_server: OpenAIServer
) -> None:
    """A server that refuses to stream with tools is asked again whole: the same figures."""
    usage, chunk, cached = SHAPES[shape]
    openai_server.push(
        {"status": 400, "message": "Cannot stream a reply with tools"},
        {"text": "ok", "usage": usage, "usage_chunk": chunk},
    )
    reply = await reply_of(model, tools=[BASH])
    assert "stream" not in openai_server.requests[-1]  # it really was the whole path
    assert reply.usage is not None and reply.usage.cached_tokens == cached


async def test_deepseek_prompt_from_hit_and_miss_when_no_total(
    model: OpenAICompatible, openai_server: OpenAIServer
) -> None:
    usage = {"completion_tokens": 5, "prompt_cache_hit_tokens": 640, "prompt_cache_miss_tokens": 60}
    openai_server.push({"text": "ok", "usage": usage})
    reply = await reply_of(model)
    assert reply.usage == Usage(prompt_tokens=700, completion_tokens=5, cached_tokens=640)


async def test_the_loop_logs_the_figure_and_none_when_not_reported(
    tmp_path: Path, model: OpenAICompatible, openai_server: OpenAIServer
) -> None:
    """What reaches the log: the cached figure, and no figure at all (not 0) when the server
    named none; the log loads again with both."""
    usage, chunk, _ = SHAPES["llama.cpp timings beside the usage"]
    openai_server.push({"text": "one", "usage": usage, "usage_chunk": chunk})
    openai_server.push({"text": "two", "usage": {"prompt_tokens": 10, "completion_tokens": 1}})
    session = Session.create(tmp_path / "home", cwd=str(tmp_path))
    agent = Agent(session, model, "m", [])
    await agent.run_turn("first")
    await agent.run_turn("second")
    session.close()
    lines = [json.loads(line) for line in session.path.read_text().splitlines()]
    logged = [e["data"]["usage"] for e in lines if e["type"] == "assistant/message"]
    assert logged[0]["cached_tokens"] == 660
    assert "cached_tokens" not in logged[1]
    again = Session.open(tmp_path / "home", session.id, readonly=True)
    replies = [e.data for e in again.events if e.type == "assistant/message"]
    assert [r.usage.cached_tokens for r in replies] == [660, None]  # type: ignore[attr-defined]


def test_a_log_written_before_the_figure_could_be_absent_still_loads(tmp_path: Path) -> None:
    line = {
        "seq": 3, "type": "assistant/message", "time": 1.0, "surface_op": {"op": "append"},
        "data": {"turn": 1, "step": 1, "text": "hi", "tool_calls": [], "finish_reason": "stop",
                 "usage": {"prompt_tokens": 10, "completion_tokens": 2, "cached_tokens": 0,
                           "reasoning_tokens": 0}, "model": "m"},
    }  # fmt: skip
    event = EventRegistry().parse(json.dumps(line).encode())
    assert event.data.usage == Usage(prompt_tokens=10, completion_tokens=2, cached_tokens=0)  # type: ignore[attr-defined]


# --- recorded from real servers ----------------------------------------------------------------


def _last_chunk_with_usage(body: str) -> dict[str, Any]:
    """The recorded chunk (or whole reply) that carries the usage."""
    if not body.startswith("data:"):
        return json.loads(body)  # a whole reply
    chunks = [
        json.loads(line[5:])
        for line in body.splitlines()
        if line.startswith("data:") and line[5:].strip() != "[DONE]"
    ]
    return [c for c in chunks if c.get("usage")][-1]


def _llama_server_chats() -> list[tuple[str, Any]]:
    found = []
    for path in sorted((FIXTURES / "llama-server").glob("*.json")):
        for n, chat in enumerate(Recording.load(path).chats()):
            if chat.status == 200 and '"usage"' in chat.body:
                found.append((f"{path.stem}-{n}", chat))
    return found


LLAMA = _llama_server_chats()


def client_of(server: ReplayServer) -> OpenAICompatible:
    return OpenAICompatible(server.base_url, None, "local", retry=RetryPolicy(max_attempts=1))


async def reply_of_recorded(client: OpenAICompatible, **kw: Any) -> Reply:
    try:
        return await reply_of(client, **kw)
    finally:
        await client.aclose()


def test_llama_server_recordings_are_there() -> None:
    assert len(LLAMA) >= 4, "run make conformance to record llama-server"


@pytest.mark.parametrize("chat", [c for _, c in LLAMA], ids=[n for n, _ in LLAMA])
async def test_llama_server_recordings_give_its_cache_figure(chat: Any) -> None:
    recorded = _last_chunk_with_usage(chat.body)
    with ReplayServer([chat]) as server:
        reply = await reply_of_recorded(client_of(server))
    assert reply.usage is not None
    assert reply.usage.cached_tokens == recorded["timings"]["cache_n"]
    assert reply.usage.cached_tokens == recorded["usage"]["prompt_tokens_details"]["cached_tokens"]


@pytest.mark.parametrize(
    ("scenario", "empty", "whole"), [("empty-200-first", 0, 1), ("tools-not-streamed", 0, 1)]
)
async def test_llama_cpp_python_recordings_report_no_cache_figure(
    scenario: str, empty: int, whole: int
) -> None:
    """llama-cpp-python sends usage without any cache figure: "not reported", not 0."""
    chats = Recording.load(FIXTURES / "llama-cpp-python" / f"{scenario}.json").chats()
    recorded = _last_chunk_with_usage(chats[whole].body)
    assert "timings" not in recorded and "prompt_tokens_details" not in recorded["usage"]
    with ReplayServer([chats[empty], chats[whole]]) as server:
        reply = await reply_of_recorded(client_of(server), tools=[BASH])
    assert reply.usage is not None
    assert reply.usage.prompt_tokens == recorded["usage"]["prompt_tokens"]
    assert reply.usage.cached_tokens is None
