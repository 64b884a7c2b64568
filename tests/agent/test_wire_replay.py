"""The client against real wire bytes: exchanges recorded from real servers by
``make conformance`` (llama.cpp's llama-server, llama-cpp-python) and, for the dialects no
server here can run, written from their public documentation (DeepSeek, vLLM, Ollama).

Each test serves a recording byte for byte from a real HTTP server on 127.0.0.1 and checks
what the client made of it against what the recording itself says (its usage chunk, its
tool-call pieces, its error text), never against numbers typed in here.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.llm.chat import ChatRequest
from agent.llm.client import OpenAICompatible
from agent.llm.discovery import ask_window
from agent.llm.errors import ContextOverflow
from agent.llm.replies import (
    Completed,
    Notice,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from agent.llm.retry import RetryPolicy
from tests.wire import FIXTURES, Exchange, Recording, ReplayServer, fixture

BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}


def sse_chunks(exchange: Exchange) -> list[dict]:
    """The JSON chunks of a recorded event stream (comments and [DONE] left out)."""
    chunks = []
    for line in exchange.body.splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            chunks.append(json.loads(line[5:]))
    return chunks


def recorded_usage(exchange: Exchange) -> dict | None:
    usage = [c["usage"] for c in sse_chunks(exchange) if c.get("usage")]
    return usage[-1] if usage else None


def recorded_calls(exchange: Exchange) -> dict[int, dict[str, str]]:
    """Tool calls as the recorded deltas spell them, joined by index."""
    calls: dict[int, dict[str, str]] = {}
    for chunk in sse_chunks(exchange):
        for choice in chunk.get("choices") or []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                entry = calls.setdefault(call["index"], {"name": "", "arguments": ""})
                fn = call.get("function") or {}
                entry["name"] += fn.get("name") or ""
                entry["arguments"] += fn.get("arguments") or ""
    return calls


async def events_of(model: OpenAICompatible, request: ChatRequest) -> list[StreamEvent]:
    stream: AsyncIterator[StreamEvent] = model.stream(request)
    return [event async for event in stream]


def client(base_url: str) -> OpenAICompatible:
    return OpenAICompatible(base_url, None, "local", retry=RetryPolicy(max_attempts=1))


def request(model: str = "smollm2") -> ChatRequest:
    return ChatRequest(model=model, messages=[{"role": "user", "content": "hi"}], tools=[BASH])


# --- written from documentation ----------------------------------------------------------------


async def test_deepseek_reasoning_is_shown_and_kept_apart_from_the_answer() -> None:
    rec = fixture("documented", "deepseek-reasoning")
    (chat,) = rec.chats()
    with ReplayServer(rec.exchanges) as server:
        events = await events_of(client(server.base_url), request("deepseek-reasoner"))
    thought = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    reply = events[-1].reply  # type: ignore[union-attr]
    deltas = [c["choices"][0]["delta"] for c in sse_chunks(chat) if c["choices"]]
    assert thought == "".join(d.get("reasoning_content") or "" for d in deltas)
    assert text == "".join(d.get("content") or "" for d in deltas)
    assert reply.reasoning == thought and reply.text == text
    usage = recorded_usage(chat)
    assert usage is not None and reply.usage is not None
    assert reply.usage.reasoning_tokens == usage["completion_tokens_details"]["reasoning_tokens"]
    assert reply.usage.cached_tokens == usage["prompt_cache_hit_tokens"]


async def test_vllm_max_model_len_and_its_overflow_wording() -> None:
    rec = fixture("documented", "vllm-overflow")
    listing = json.loads(rec.exchanges[0].body)
    served = listing["data"][0]
    with ReplayServer(rec.exchanges) as server:
        answer = await ask_window(server.base_url, served["id"])
        with pytest.raises(ContextOverflow) as caught:
            await events_of(client(server.base_url), request(served["id"]))
    assert answer is not None and answer.tokens == served["max_model_len"]
    assert caught.value.limit == served["max_model_len"]  # the limit the message states


async def test_ollama_tool_call_in_one_delta_usage_chunk_and_num_ctx() -> None:
    rec = fixture("documented", "ollama-tools")
    first = rec.chats()[0]
    show = json.loads(next(e for e in rec.exchanges if e.path == "/api/show").body)
    with ReplayServer(rec.exchanges) as server:
        answer = await ask_window(server.base_url, "qwen2.5:7b")
        events = await events_of(client(server.base_url), request("qwen2.5:7b"))
    assert answer is not None
    assert f"num_ctx {answer.tokens}" in " ".join(show["parameters"].split())
    reply = events[-1].reply  # type: ignore[union-attr]
    (call,) = recorded_calls(first).values()
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [(call["name"], call["arguments"])]
    assert reply.finish_reason == "tool_calls"
    usage = recorded_usage(first)
    assert usage is not None and reply.usage is not None
    assert reply.usage.prompt_tokens == usage["prompt_tokens"]


async def test_a_claude_model_at_a_gateway_gets_its_cache_breakpoints_and_reports_the_hit() -> None:
    """The request reefline sends a Claude model behind OpenRouter, byte for byte as the
    fixture holds it: the system prompt, the checkpoint, the previous request's end and the
    newest message carry ``cache_control`` as content parts (no more than four), the
    assistant message with tool calls only none; the cached figure is read from the usage."""
    rec = fixture("documented", "openrouter-claude-cache")
    (chat,) = rec.chats()
    sent = chat.request
    messages = [
        {**m, "content": "".join(p["text"] for p in m["content"])}
        if isinstance(m["content"], list)
        else m
        for m in sent["messages"]
    ]
    with ReplayServer(rec.exchanges) as server:
        model = OpenAICompatible(
            server.base_url.replace("/v1", "/api/v1"),
            None,
            "openai-compatible",
            retry=RetryPolicy(max_attempts=1),
            breakpoints=True,
            cache_key=sent["prompt_cache_key"],
        )
        request = ChatRequest(
            model=rec.model,
            messages=messages,
            tools=sent["tools"],
            max_tokens=sent["max_tokens"],
            checkpoint=1,
        )
        events = await events_of(model, request)
        asked = server.chat_requests()[0]
    assert json.dumps(asked) == json.dumps(sent)
    marked = [i for i, m in enumerate(sent["messages"]) if isinstance(m["content"], list)]
    assert marked == [0, 1, 5, 7]
    assert request.messages == messages  # the marks are the wire's, not the request's
    usage = recorded_usage(chat)
    reply = events[-1].reply  # type: ignore[union-attr]
    assert usage is not None and reply.usage is not None
    assert reply.usage.cached_tokens == usage["prompt_tokens_details"]["cached_tokens"]
    assert reply.usage.prompt_tokens == usage["prompt_tokens"]


# --- recorded from real servers ----------------------------------------------------------------


def recordings(server: str) -> list[Path]:
    return sorted((FIXTURES / server).glob("*.json"))


def test_the_recordings_of_real_servers_are_present() -> None:
    """``make conformance`` records them; they are committed so this run replays them."""
    assert recordings("llama-server"), "run make conformance to record llama-server"


async def test_llama_server_tool_call_deltas_usage_and_window_replayed() -> None:
    rec = Recording.load(FIXTURES / "llama-server" / "tool-call.json")
    chat = next(e for e in rec.chats() if recorded_calls(e))
    props = [e for e in rec.exchanges if e.path in ("/v1/models", "/props") and e.status == 200]
    with ReplayServer([chat, *props]) as server:
        events = await events_of(client(server.base_url), request())
        answer = await ask_window(server.base_url, "smollm2")
        asked = server.chat_requests()[0]
    reply = events[-1].reply  # type: ignore[union-attr]
    want = recorded_calls(chat)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        (w["name"], w["arguments"]) for w in want.values()
    ]
    pieces = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(pieces) > 1  # llama.cpp splits the arguments over several deltas
    usage = recorded_usage(chat)
    assert usage is not None and reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )
    meta = json.loads(next(e for e in props if e.path == "/v1/models").body)["data"][0]["meta"]
    assert answer is not None and answer.tokens == meta["n_ctx"]
    assert asked["tool_choice"] == "auto" == chat.request["tool_choice"]
    assert isinstance(events[-1], Completed)


async def test_llama_server_overflow_body_gives_the_limit() -> None:
    rec = Recording.load(FIXTURES / "llama-server" / "overflow.json")
    refused = next(e for e in rec.chats() if e.status == 400)
    message = json.loads(refused.body)["error"]["message"]
    with ReplayServer([refused]) as server, pytest.raises(ContextOverflow) as caught:
        await events_of(client(server.base_url), request())
    assert caught.value.limit is not None and f"({caught.value.limit} tokens)" in message


async def test_llama_cpp_python_empty_200_is_asked_again_whole_and_classified() -> None:
    rec = Recording.load(FIXTURES / "llama-cpp-python" / "empty-200.json")
    empty, refused = rec.chats()[:2]
    assert (empty.status, empty.body, refused.status) == (200, "", 400)
    with ReplayServer([empty, refused]) as server:
        model = OpenAICompatible(server.base_url, None, "local")  # default retries
        with pytest.raises(ContextOverflow) as caught:
            await events_of(model, request())
        asked = server.chat_requests()
    said = json.loads(refused.body)["error"]["message"]
    assert caught.value.limit is not None and f"is {caught.value.limit} tokens" in said
    assert len(asked) == 2  # once streamed, once whole: never retried blindly
    assert asked[0]["stream"] is True and "stream" not in asked[1]


async def test_llama_cpp_python_tools_go_whole_for_the_rest_of_the_session() -> None:
    rec = Recording.load(FIXTURES / "llama-cpp-python" / "tools-not-streamed.json")
    empty, whole, later = rec.chats()[:3]
    message = json.loads(whole.body)["choices"][0]["message"]
    with ReplayServer([empty, whole, later]) as server:
        model = client(server.base_url)
        events = await events_of(model, request())
        again = await events_of(model, request())
        asked = server.chat_requests()
    notices = [e for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and "whole replies" in notices[0].text
    assert not any(isinstance(e, Notice) for e in again)  # said once
    reply = events[-1].reply  # type: ignore[union-attr]
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        (c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]
    ]
    assert reply.usage is not None
    assert reply.usage.prompt_tokens == json.loads(whole.body)["usage"]["prompt_tokens"]
    assert [("stream" in body) for body in asked] == [True, False, False]


async def test_llama_server_props_is_asked_when_the_listing_says_nothing() -> None:
    """With its /v1/models answer gone, the recorded /props alone gives the window."""
    rec = Recording.load(FIXTURES / "llama-server" / "window.json")
    props = next(e for e in rec.exchanges if e.path == "/props")
    listing = json.loads(next(e for e in rec.exchanges if e.path == "/v1/models").body)
    with ReplayServer([props]) as server:
        answer = await ask_window(server.base_url, "smollm2")
    assert answer is not None and answer.detail == "llama.cpp /props n_ctx"
    assert answer.tokens == listing["data"][0]["meta"]["n_ctx"]  # the two agree


async def test_deepseek_reasoning_is_never_sent_back(tmp_path: Path) -> None:
    from agent.log.session import Session
    from agent.loop import Agent

    rec = fixture("documented", "deepseek-reasoning")
    (chat,) = rec.chats()
    session = Session.create(tmp_path / "home", cwd=str(tmp_path))
    with ReplayServer([chat, chat]) as server:
        agent = Agent(session, client(server.base_url), "deepseek-reasoner", [])
        await agent.run_turn("what is 2+2?")
        await agent.run_turn("and 3+3?")
        second = server.chat_requests()[1]
    session.close()
    logged = [e.data for e in session.events if e.type == "assistant/message"]
    assert logged[0].reasoning  # kept in the log, shown to the user
    sent = json.dumps(second["messages"])
    assert "reasoning_content" not in sent and logged[0].reasoning not in sent
    assert logged[0].text in sent  # the answer itself is history
