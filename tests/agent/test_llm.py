"""The OpenAI-compatible client against a real local HTTP server (tests/openai_server.py).

Nothing here patches the SDK or our code: every case goes through sockets, SSE and the
openai SDK exactly as a real provider would.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import openai
import pytest

from agent.llm.chat import ChatRequest, collect
from agent.llm.client import OpenAICompatible, ToolCall, Usage, known_context_window
from agent.llm.errors import (
    OVERFLOW_PHRASES,
    AuthError,
    ConnectionFailed,
    ContextOverflow,
    LLMError,
    MalformedResponse,
    ProviderTimeout,
    RateLimited,
    ServerError,
    StreamIncomplete,
    context_limit,
    is_context_overflow,
)
from agent.llm.replies import (
    Completed,
    ReasoningDelta,
    Reply,
    Retrying,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from agent.llm.retry import RetryPolicy
from agent.secret import Secret
from tests.openai_server import OpenAIServer

KEY_TEXT = "sk-test-SECRET-0123456789"
KEY = Secret(KEY_TEXT)
FAST = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=1.0, jitter=0.1)
BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}


def request(**kw: Any) -> ChatRequest:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    return ChatRequest(model=kw.pop("model", "gpt-4o"), messages=messages, **kw)


@pytest.fixture
async def model(openai_server: OpenAIServer) -> AsyncIterator[OpenAICompatible]:
    client = OpenAICompatible(
        base_url=openai_server.base_url,
        api_key=KEY,
        provider="openai",
        retry=FAST,
        request_timeout=5.0,
    )
    yield client
    await client.aclose()


async def run(model: OpenAICompatible, req: ChatRequest | None = None) -> list[StreamEvent]:
    async with aclosing(model.stream(req or request())) as stream:
        return [event async for event in stream]


async def run_failing(
    model: OpenAICompatible, error: type[LLMError]
) -> tuple[list[StreamEvent], LLMError]:
    seen: list[StreamEvent] = []
    with pytest.raises(error) as info:
        async with aclosing(model.stream(request())) as stream:
            async for event in stream:
                seen.append(event)
    return seen, info.value


def final(events: list[StreamEvent]) -> Reply:
    assert isinstance(events[-1], Completed), events[-1]
    assert not any(isinstance(e, Completed) for e in events[:-1])
    return events[-1].reply


# --- successful streams -------------------------------------------------------------------


async def test_text_arrives_as_several_deltas(model: OpenAICompatible, openai_server) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    openai_server.push({"text": text, "chunk_size": 5, "model": "gpt-4o-2024-08-06"})
    events = await run(model)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) >= 3
    assert "".join(deltas) == text
    reply = final(events)
    assert (reply.text, reply.finish_reason, reply.tool_calls) == (text, "stop", [])
    assert reply.reasoning is None
    assert reply.model == "gpt-4o-2024-08-06"


@pytest.mark.parametrize("repeat_id", [False, True])
async def test_tool_calls_are_reassembled(
    model: OpenAICompatible, openai_server, repeat_id: bool
) -> None:
    first = {"command": "ls -la /tmp && echo done"}
    second = {"command": "grep -rn 'needle' src/"}
    openai_server.push(
        {
            "text": "Let me look.",
            "tool_calls": [
                {"id": "call_a", "name": "bash", "arguments": first},
                {"id": "call_b", "name": "bash", "arguments": second},
            ],
            "chunk_size": 4,
            "repeat_id": repeat_id,
        }
    )
    events = await run(model, request(tools=[BASH]))
    pieces = [e for e in events if isinstance(e, ToolCallDelta)]
    assert {e.index for e in pieces} == {0, 1}
    assert len(pieces) > 6  # the arguments really were fragmented
    assert [(e.index, e.id, e.name) for e in pieces if e.name] == [
        (0, "call_a", "bash"),
        (1, "call_b", "bash"),
    ]
    reply = final(events)
    assert reply.finish_reason == "tool_calls"
    assert reply.text == "Let me look."
    assert reply.tool_calls == [
        ToolCall(id="call_a", name="bash", arguments=json.dumps(first)),
        ToolCall(id="call_b", name="bash", arguments=json.dumps(second)),
    ]


async def test_usage_chunk_is_read(model: OpenAICompatible, openai_server) -> None:
    usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 57,
        "prompt_tokens_details": {"cached_tokens": 1024},
        "completion_tokens_details": {"reasoning_tokens": 12},
    }
    openai_server.push({"text": "ok", "usage": usage})
    reply = final(await run(model))
    assert reply.usage == Usage(
        prompt_tokens=1200, completion_tokens=57, cached_tokens=1024, reasoning_tokens=12
    )


async def test_deepseek_cache_hits_count_as_cached(model, openai_server) -> None:
    usage = {"prompt_tokens": 900, "completion_tokens": 5, "prompt_cache_hit_tokens": 640}
    openai_server.push({"text": "ok", "usage": usage})
    reply = final(await run(model))
    assert reply.usage == Usage(prompt_tokens=900, completion_tokens=5, cached_tokens=640)


async def test_missing_usage_chunk_is_normal(model: OpenAICompatible, openai_server) -> None:
    openai_server.push({"text": "no usage here", "usage": False})
    reply = final(await run(model))
    assert reply.text == "no usage here"
    assert reply.usage is None


async def test_reasoning_content_is_surfaced(model: OpenAICompatible, openai_server) -> None:
    thought = "The user greets me; a greeting back is enough."
    openai_server.push({"reasoning": thought, "text": "Hello!", "chunk_size": 6})
    events = await run(model, request(model="deepseek-reasoner"))
    kinds = [type(e) for e in events if isinstance(e, ReasoningDelta | TextDelta)]
    assert kinds.index(TextDelta) > kinds.index(ReasoningDelta)  # thinking streams first
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == thought
    reply = final(events)
    assert (reply.reasoning, reply.text) == (thought, "Hello!")


async def test_request_body(model: OpenAICompatible, openai_server) -> None:
    await run(model, request(tools=[BASH], max_tokens=256, temperature=0.2))
    await run(model, request())
    with_tools, without_tools = openai_server.requests
    assert with_tools["stream"] is True
    assert with_tools["stream_options"] == {"include_usage": True}
    assert with_tools["tools"] == [BASH]
    assert with_tools["max_completion_tokens"] == 256  # OpenAI's spelling
    assert with_tools["temperature"] == 0.2
    assert with_tools["messages"][0] == {"role": "system", "content": "be brief"}
    assert "tools" not in without_tools
    assert "max_tokens" not in without_tools and "temperature" not in without_tools
    assert openai_server.headers[0]["authorization"] == f"Bearer {KEY_TEXT}"


async def test_other_providers_get_max_tokens(openai_server: OpenAIServer) -> None:
    local = OpenAICompatible(openai_server.base_url, None, "local", retry=FAST)
    try:
        await collect(local.stream(request(max_tokens=99)))
    finally:
        await local.aclose()
    body = openai_server.requests[0]
    assert body["max_tokens"] == 99 and "max_completion_tokens" not in body
    assert "authorization" not in openai_server.headers[0]  # no key: no header at all


# --- retries and typed errors -------------------------------------------------------------


async def test_rate_limit_then_success_honours_retry_after(model, openai_server) -> None:
    openai_server.push({"status": 429, "message": "Slow down", "retry_after": "0.2"})
    openai_server.push({"text": "second time lucky"})
    started = time.monotonic()
    events = await run(model)
    elapsed = time.monotonic() - started
    retries = [e for e in events if isinstance(e, Retrying)]
    assert len(retries) == 1
    assert retries[0].attempt == 1
    assert retries[0].delay_s == pytest.approx(0.2)
    assert "429" in retries[0].error and "Slow down" in retries[0].error
    assert elapsed >= 0.2
    assert final(events).text == "second time lucky"
    assert len(openai_server.requests) == 2


async def test_retry_after_is_capped(openai_server: OpenAIServer) -> None:
    policy = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.1)
    client = OpenAICompatible(openai_server.base_url, KEY, "openai", retry=policy)
    openai_server.push({"status": 429, "retry_after": "3600"}, {"text": "ok"})
    try:
        events = [e async for e in client.stream(request())]
    finally:
        await client.aclose()
    assert [e.delay_s for e in events if isinstance(e, Retrying)] == [0.1]


async def test_server_errors_until_retries_run_out(model, openai_server) -> None:
    for _ in range(3):
        openai_server.push({"status": 500, "message": "upstream exploded", "type": "server"})
    events, error = await run_failing(model, ServerError)
    assert len(openai_server.requests) == FAST.max_attempts == 3
    assert [e.attempt for e in events if isinstance(e, Retrying)] == [1, 2]
    assert "upstream exploded" in error.user_message
    assert error.status == 500


async def test_auth_error_is_not_retried_and_hides_the_key(model, openai_server) -> None:
    openai_server.push(
        {
            "status": 401,
            "message": f"Incorrect API key provided: {KEY_TEXT}.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    )
    events, error = await run_failing(model, AuthError)
    assert events == []
    assert len(openai_server.requests) == 1
    for text in (str(error), error.user_message, repr(error), error.detail):
        assert KEY_TEXT not in text
    assert "OPENAI_API_KEY" in error.user_message
    assert "--api-key-env" in error.user_message


async def test_auth_error_names_the_configured_variable(openai_server) -> None:
    client = OpenAICompatible(
        openai_server.base_url, KEY, "deepseek", retry=FAST, api_key_env="MY_DS_KEY"
    )
    openai_server.push({"status": 403, "message": "forbidden"})
    with pytest.raises(AuthError) as info:
        await collect(client.stream(request()))
    await client.aclose()
    assert "MY_DS_KEY" in info.value.user_message


@pytest.mark.parametrize(
    ("status", "body", "limit"),
    [
        (  # OpenAI
            400,
            {
                "message": "This model's maximum context length is 128000 tokens. However, your "
                "messages resulted in 131072 tokens. Please reduce the length of the messages.",
                "code": "context_length_exceeded",
            },
            128000,
        ),
        (  # vLLM
            400,
            {
                "message": "This model's maximum context length is 4096 tokens. However, you "
                "requested 5000 tokens (4000 in the messages, 1000 in the completion).",
                "type": "BadRequestError",
            },
            4096,
        ),
        (  # llama.cpp server
            400,
            {
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
            },
            None,
        ),
        (
            413,
            {"message": "Prompt is too long for this endpoint", "type": "request_too_large"},
            None,
        ),
    ],
)
async def test_context_overflow(model, openai_server, status, body, limit) -> None:
    openai_server.push({"status": status, **body})
    _, error = await run_failing(model, ContextOverflow)
    assert len(openai_server.requests) == 1  # never retried: only compaction can help
    assert isinstance(error, ContextOverflow) and error.limit == limit
    assert "/compact" in error.user_message


async def test_other_client_errors_are_bad_requests(model, openai_server) -> None:
    openai_server.push(
        {"status": 404, "message": "The model `gpt-9` does not exist", "code": "model_not_found"}
    )
    _, error = await run_failing(model, LLMError)
    assert type(error).__name__ == "BadRequest"
    assert "gpt-9" in error.user_message and "--model" in error.user_message


async def test_dropped_stream_is_retried_then_incomplete(model, openai_server) -> None:
    for _ in range(3):
        openai_server.push(
            {"text": "partial answer that never ends", "chunk_size": 4, "cut_after": 3}
        )
    events, error = await run_failing(model, StreamIncomplete)
    assert len(openai_server.requests) == 3
    kinds = [type(e).__name__ for e in events]
    # Partial text, then the retry notice that voids it, twice; then the error.
    assert kinds.count("Retrying") == 2
    assert kinds.index("TextDelta") < kinds.index("Retrying")
    assert "cut off" in error.user_message


async def test_dropped_stream_then_success(model, openai_server) -> None:
    openai_server.push({"text": "abandoned reply", "chunk_size": 3, "cut_after": 2})
    openai_server.push({"text": "full reply"})
    events = await run(model)
    assert sum(isinstance(e, Retrying) for e in events) == 1
    assert final(events).text == "full reply"


async def test_stream_without_finish_reason_is_an_error(model, openai_server) -> None:
    for _ in range(3):
        openai_server.push({"text": "looks complete", "finish_reason": ""})
    _, error = await run_failing(model, StreamIncomplete)
    assert "finish reason" in str(error)


async def test_error_event_mid_stream_is_retried(model, openai_server) -> None:
    openai_server.push(
        {"text": "half an", "error_after": 2, "message": "upstream provider crashed"},
        {"text": "whole answer"},
    )
    events = await run(model)
    retries = [e for e in events if isinstance(e, Retrying)]
    assert len(retries) == 1 and "upstream provider crashed" in retries[0].error
    assert final(events).text == "whole answer"


async def test_overflow_reported_mid_stream(model, openai_server) -> None:
    message = "This endpoint's maximum context length is 65536 tokens."
    openai_server.push({"text": "x", "error_after": 1, "message": message})
    _, error = await run_failing(model, ContextOverflow)
    assert isinstance(error, ContextOverflow) and error.limit == 65536
    assert len(openai_server.requests) == 1


async def test_stall_mid_stream_times_out_and_is_retried(openai_server) -> None:
    policy = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.05)
    client = OpenAICompatible(
        openai_server.base_url, KEY, "openai", retry=policy, request_timeout=0.3
    )
    stall = {"text": "thinking very slowly", "stall_after": 2, "stall_s": 60}
    openai_server.push(stall, stall)
    seen: list[StreamEvent] = []
    started = time.monotonic()
    with pytest.raises(ProviderTimeout) as info:
        async for event in client.stream(request()):
            seen.append(event)
    await client.aclose()
    assert time.monotonic() - started < 30  # the timeouts ended it, not the stalls
    assert sum(isinstance(e, Retrying) for e in seen) == 1
    assert len(openai_server.requests) == 2
    assert "0.3 s" in str(info.value)


async def test_malformed_chunk_is_a_clear_error(model, openai_server) -> None:
    openai_server.push({"text": "fine so far", "malformed_after": 2})
    _, error = await run_failing(model, MalformedResponse)
    assert len(openai_server.requests) == 1
    assert "not valid JSON" in error.user_message
    assert "Traceback" not in error.user_message
    assert "/v1" in error.user_message  # says where to look


async def test_unreachable_server_names_the_url() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    client = OpenAICompatible(url, KEY, "local", retry=FAST, request_timeout=2)
    seen: list[StreamEvent] = []
    with pytest.raises(ConnectionFailed) as info:
        async for event in client.stream(request()):
            seen.append(event)
    await client.aclose()
    assert url in info.value.user_message
    assert "--base-url" in info.value.user_message
    assert sum(isinstance(e, Retrying) for e in seen) == 1  # connect_attempts = 2


async def test_connect_that_hangs_is_a_connection_failure() -> None:
    # A listener whose accept queue is full drops further SYNs, like a firewalled host.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = [socket.socket() for _ in range(3)]
        for filler in fillers:
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
        url = f"http://127.0.0.1:{port}/v1"
        policy = RetryPolicy(max_attempts=1)
        client = OpenAICompatible(url, None, "local", retry=policy, request_timeout=0.3)
        started = time.monotonic()
        with pytest.raises(ConnectionFailed) as info:
            await collect(client.stream(request()))
        await client.aclose()
        for filler in fillers:
            filler.close()
    assert time.monotonic() - started < 30  # the timeout ended the wait (a bound, not a speed)
    assert url in info.value.user_message


async def test_cancelling_the_consumer_closes_the_response(model, openai_server) -> None:
    openai_server.push({"words": 400, "chunk_size": 4, "delay_s": 0.02})
    first = asyncio.Event()

    async def consume() -> None:
        async for event in model.stream(request()):
            if isinstance(event, TextDelta):
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = time.monotonic() + 3
    while openai_server.disconnects == 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert openai_server.disconnects == 1  # the server saw the connection go away
    # The client is still usable afterwards.
    openai_server.push({"text": "still here"})
    assert (await collect(model.stream(request()))).text == "still here"


# --- collect() ----------------------------------------------------------------------------


async def test_collect_returns_the_reply(model, openai_server) -> None:
    openai_server.push({"status": 503, "retry_after": "0"}, {"text": "summary text"})
    reply = await collect(model.stream(request()))
    assert reply.text == "summary text"


async def test_collect_without_completed_is_incomplete() -> None:
    async def nothing() -> AsyncIterator[StreamEvent]:
        yield TextDelta("half")

    with pytest.raises(StreamIncomplete):
        await collect(nothing())


async def test_collect_propagates_errors(model, openai_server) -> None:
    for _ in range(3):
        openai_server.push({"status": 429, "retry_after": "0"})
    with pytest.raises(RateLimited):
        await collect(model.stream(request()))


# --- pure parts ---------------------------------------------------------------------------

OVERFLOW_EXAMPLES = {
    "maximum context length": "This model's maximum context length is 8192 tokens.",
    "context length exceeded": "Context length exceeded: 9000 > 8192",
    "context_length_exceeded": "error code: context_length_exceeded",
    "context window exceeded": "Context window exceeded for model",
    "exceeds the context window": "Your input exceeds the context window of this model.",
    "exceeds the available context size": "the request exceeds the available context size",
    "exceed_context_size": "exceed_context_size_error: request (5000 tokens) too big",
    "prompt is too long": "prompt is too long: 210000 tokens > 200000 maximum",
    "prompt too long": "Prompt too long for model",
    "too many tokens": "Too many tokens in the request",
    "input is too long": "Input is too long for requested model.",
    "reduce the length of the messages": "Please reduce the length of the messages.",
    "too large for model with": "Prompt contains 40000 tokens, too large for model with 32768 "
    "maximum context length",
    "exceeds the maximum number of tokens allowed": "The input token count (1200000) exceeds "
    "the maximum number of tokens allowed (1048576).",
    "`inputs` tokens + `max_new_tokens` must be": "Input validation error: `inputs` tokens + "
    "`max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 500 `max_new_tokens`",
    "exceed context window of": "Requested tokens (6004) exceed context window of 6000",
}


def test_every_overflow_phrase_has_an_example() -> None:
    assert set(OVERFLOW_EXAMPLES) == set(OVERFLOW_PHRASES)


@pytest.mark.parametrize("phrase", OVERFLOW_PHRASES)
def test_overflow_phrase_matches(phrase: str) -> None:
    assert is_context_overflow(OVERFLOW_EXAMPLES[phrase])


@pytest.mark.parametrize(
    "message",
    [
        "Rate limit reached for requests",
        "The model `gpt-9` does not exist",
        "Invalid schema for function 'bash'",
        "max_tokens is too large",
    ],
)
def test_other_errors_are_not_overflow(message: str) -> None:
    assert not is_context_overflow(message)


def test_overflow_by_code_or_type_alone() -> None:
    assert is_context_overflow("bad request", code="context_length_exceeded")
    assert is_context_overflow("bad request", kind="exceed_context_size_error")


@pytest.mark.parametrize(
    ("message", "limit"),
    [
        (OVERFLOW_EXAMPLES["maximum context length"], 8192),
        (OVERFLOW_EXAMPLES["prompt is too long"], 200000),
        (OVERFLOW_EXAMPLES["too large for model with"], 32768),
        (OVERFLOW_EXAMPLES["exceeds the maximum number of tokens allowed"], 1048576),
        (OVERFLOW_EXAMPLES["`inputs` tokens + `max_new_tokens` must be"], 4096),
        (OVERFLOW_EXAMPLES["exceed context window of"], 6000),
        ("request (5000 tokens) exceeds the available context size (4096 tokens)", 4096),
        ("Your input exceeds the context window of this model.", None),
        # A number no window has is no limit (it would become the window).
        ("maximum context length is " + "9" * 400 + " tokens", None),
        ("tokens > , maximum context length", None),
    ],
)
def test_context_limit_is_parsed(message: str, limit: int | None) -> None:
    assert context_limit(message) == limit


def test_backoff_grows_with_jitter_and_caps() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=30.0, jitter=0.25)
    for attempt, base in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0)]:
        for _ in range(20):
            assert base * 0.75 <= policy.delay(attempt) <= base * 1.25
    assert all(policy.delay(10) <= 30.0 for _ in range(20))
    assert policy.delay(1, retry_after_s=7.0) == 7.0
    assert policy.delay(1, retry_after_s=99.0) == 30.0
    assert RetryPolicy(jitter=0).delay(2) == 2.0


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o", 128_000),
        ("gpt-4o-2024-08-06", 128_000),
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4.1-2025-04-14", 1_047_576),
        ("gpt-5", 400_000),
        ("o3-mini-2025-01-31", 200_000),
        ("o1-preview", 128_000),
        ("deepseek-chat", 128_000),
        ("deepseek-reasoner", 128_000),
        ("openai/gpt-4o", 128_000),
        ("llama3.1:8b", 131_072),
        ("meta-llama/Llama-3.3-70B-Instruct", 131_072),
        ("Qwen/Qwen2.5-7B-Instruct", 32_768),
        ("my-finetune", None),
        ("gpt-4", None),  # would be a guess: 8k or 128k depending on the snapshot
        ("gpt-4oops", None),  # prefixes only match at a separator
    ],
)
def test_known_context_windows(model: str, window: int | None) -> None:
    assert known_context_window(model) == window


def test_context_window_overrides(openai_server: OpenAIServer) -> None:
    client = OpenAICompatible(
        openai_server.base_url,
        None,
        "local",
        context_windows={"my-finetune": 8192, "gpt-4o": 64_000},
    )
    assert client.context_window("my-finetune") == 8192
    assert client.context_window("gpt-4o") == 64_000  # override beats the table
    assert client.context_window("gpt-4o-2024-08-06") == 64_000
    assert client.context_window("gpt-4.1") == 1_047_576
    assert client.context_window("mystery") is None
    assert known_context_window("mystery", {"mystery": 1000}) == 1000


def test_server_runs_as_a_process(tmp_path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "scripted hello"}]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.openai_server", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert proc.stdout is not None
        word, port = proc.stdout.readline().split()
        assert word == "PORT"
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x")
        answer = client.chat.completions.create(model="m", messages=[])
        assert answer.choices[0].message.content == "scripted hello"
        client.close()
    finally:
        proc.kill()
        proc.wait()


async def test_a_host_name_that_does_not_resolve_is_said_so() -> None:
    """A DNS failure is not "is the server running?": the host name could not be resolved."""
    url = "http://no-such-host.invalid:8000/v1"
    client = OpenAICompatible(url, None, "local", retry=RetryPolicy(max_attempts=1))
    with pytest.raises(ConnectionFailed) as info:
        await collect(client.stream(request()))
    await client.aclose()
    message = info.value.user_message
    assert "'no-such-host.invalid' could not be resolved" in message
    assert "host name in --base-url" in message
    assert "server is running" not in message
