"""Time to first token: our client against a plain openai SDK loop, same local server.

Both sides stream the same scripted reply from one in-process server, alternating run by run
(and swapping who goes first) so load and warm-up hit them alike. The figure is the median
time from issuing the request to the first text delta.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any, cast

import openai
from openai.types.chat import ChatCompletionMessageParam

from agent.llm.chat import ChatRequest
from agent.llm.client import OpenAICompatible
from agent.llm.replies import TextDelta
from agent.secret import Secret
from tests.bench.report import Figure
from tests.openai_server import OpenAIServer, ScriptedResponse

RUNS = 30
WARMUP = 3
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "hello"},
]


async def _ours(model: OpenAICompatible) -> float:
    started = time.perf_counter()
    first: float | None = None
    async for event in model.stream(ChatRequest(model="bench", messages=MESSAGES)):
        if first is None and isinstance(event, TextDelta):
            first = time.perf_counter() - started
    assert first is not None
    return first


async def _plain(client: openai.AsyncOpenAI) -> float:
    started = time.perf_counter()
    first: float | None = None
    stream = await client.chat.completions.create(
        model="bench",
        messages=cast(list[ChatCompletionMessageParam], MESSAGES),
        stream=True,
        stream_options={"include_usage": True},
    )
    async for chunk in stream:
        if first is None and chunk.choices and chunk.choices[0].delta.content:
            first = time.perf_counter() - started
    assert first is not None
    return first


async def _measure() -> tuple[float, float]:
    with OpenAIServer() as server:
        server.default = ScriptedResponse(text="The answer is forty-two, as always. " * 4)
        ours = OpenAICompatible(server.base_url, Secret("bench"), "local", request_timeout=10)
        plain = openai.AsyncOpenAI(base_url=server.base_url, api_key="bench", max_retries=0)
        try:
            for _ in range(WARMUP):
                await _ours(ours)
                await _plain(plain)
            ours_ms: list[float] = []
            plain_ms: list[float] = []
            for i in range(RUNS):
                if i % 2:
                    ours_ms.append(await _ours(ours) * 1000)
                    plain_ms.append(await _plain(plain) * 1000)
                else:
                    plain_ms.append(await _plain(plain) * 1000)
                    ours_ms.append(await _ours(ours) * 1000)
        finally:
            await ours.aclose()
            await plain.close()
    return statistics.median(ours_ms), statistics.median(plain_ms)


def run() -> list[Figure]:
    ours, plain = asyncio.run(_measure())
    return [
        Figure(
            group="LLM client",
            name="time to first token",
            value=ours,
            unit="ms",
            baseline_name="plain openai SDK loop",
            baseline_value=plain,
            target="ratio ≤ 1.2",
            ok=ours / plain <= 1.2,
        )
    ]
