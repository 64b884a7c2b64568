"""Replies asked for whole: after an empty 200, after a stream refused for its tools, and
what is said when the whole answer is itself an error or not an API reply at all."""

from __future__ import annotations

import json

import pytest

from agent.llm.chat import ChatRequest
from agent.llm.client import OpenAICompatible
from agent.llm.errors import BadRequest, EmptyReply, MalformedResponse
from agent.llm.replies import Notice, TextDelta
from agent.llm.retry import RetryPolicy
from tests.wire import Exchange, ReplayServer

CHAT = "/v1/chat/completions"
TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def chat(status: int, content_type: str, body: str) -> Exchange:
    return Exchange("POST", CHAT, None, status, content_type, [body] if body else [])


def whole(text: str) -> Exchange:
    reply = {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2},
    }
    return chat(200, "application/json", json.dumps(reply))


def request(tools: bool) -> ChatRequest:
    return ChatRequest("m", [{"role": "user", "content": "hi"}], tools=TOOLS if tools else [])


async def run(server: ReplayServer, *requests: ChatRequest) -> list[list[object]]:
    model = OpenAICompatible(server.base_url, None, "local", retry=RetryPolicy(max_attempts=3))
    return [[event async for event in model.stream(r)] for r in requests]


async def test_an_empty_stream_without_tools_is_asked_whole_and_remembered() -> None:
    with ReplayServer([chat(200, "text/event-stream", ""), whole("hello"), whole("again")]) as s:
        first, second = await run(s, request(False), request(False))
        asked = s.chat_requests()
    assert "".join(e.text for e in first if isinstance(e, TextDelta)) == "hello"
    (notice,) = [e for e in first if isinstance(e, Notice)]
    assert "does not stream replies at all" in notice.text
    assert first[-1].reply.usage.prompt_tokens == 7  # type: ignore[attr-defined]
    assert not any(isinstance(e, Notice) for e in second)
    assert [("stream" in body) for body in asked] == [True, False, False]


async def test_a_stream_refused_for_its_tools_is_asked_whole() -> None:
    refusal = json.dumps({"error": {"message": "Automatic streaming tool choice is not supported"}})
    with ReplayServer([chat(500, "application/json", refusal), whole("ok")]) as s:
        (events,) = await run(s, request(True))
        asked = s.chat_requests()
    assert any(isinstance(e, Notice) and "with tools" in e.text for e in events)
    assert len(asked) == 2 and asked[1]["tool_choice"] == "auto" and "stream" not in asked[1]


async def test_an_error_sent_with_200_is_reported_in_the_servers_words_and_not_retried() -> None:
    said = json.dumps({"error": {"message": "unsupported option: logit_bias"}})
    with ReplayServer(
        [chat(200, "text/event-stream", ""), chat(200, "application/json", said)]
    ) as s:
        with pytest.raises(EmptyReply) as caught:
            await run(s, request(True))
        assert len(s.chat_requests()) == 2  # never retried blindly
    assert "unsupported option: logit_bias" in caught.value.user_message
    assert "empty event stream" in caught.value.user_message


async def test_a_page_that_is_not_an_api_says_where_to_look() -> None:
    page = "<html><body>Welcome to nginx!</body></html>"
    pages = [chat(200, "text/html", page), chat(200, "text/html", page)]
    with ReplayServer(pages) as s, pytest.raises(MalformedResponse) as caught:
        await run(s, request(False))
    assert "Welcome to nginx" in caught.value.user_message
    assert "/v1" in caught.value.user_message


async def test_the_whole_reply_is_refused_like_a_streamed_one() -> None:
    said = json.dumps({"error": {"message": "model not found", "type": "not_found"}})
    with (
        ReplayServer(
            [chat(200, "text/event-stream", ""), chat(404, "application/json", said)]
        ) as s,
        pytest.raises(EmptyReply) as caught,
    ):
        await run(s, request(False))
    assert "model not found" in caught.value.user_message
    assert isinstance(caught.value, EmptyReply) and not isinstance(caught.value, BadRequest)
