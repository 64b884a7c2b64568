"""The demo model itself: a :class:`~agent.llm.client.ChatModel` that answers as the explorer or
as the summarizer, streamed in small pieces."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator

from agent.llm.chat import ChatRequest
from agent.llm.replies import (
    Completed,
    ReasoningDelta,
    Reply,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from agent.log.events import ToolCall, Usage
from agent.tokens import Estimator
from tui.demo.explorer import _answer, _next_command, _scene
from tui.demo.reading import LABEL, MODEL_NAME, PROVIDER, is_summary_request
from tui.demo.summarizer import _checkpoint, _shrink

# --- the model --------------------------------------------------------------------------------


class ScriptedModel:
    """A deterministic offline :class:`~agent.llm.client.ChatModel` (see the module docstring).

    ``delay_s`` is slept between streamed chunks so a UI shows streaming; 0 streams at once.
    """

    provider = PROVIDER
    model = MODEL_NAME
    label = LABEL

    def __init__(
        self, estimator: Estimator, *, context_window: int = 16_000, delay_s: float = 0.0
    ) -> None:
        self.estimator = estimator
        self.window = context_window
        self.delay_s = delay_s

    def context_window(self, model: str) -> int | None:
        """The same window whatever the model name: there is only one scripted model."""
        return self.window

    def reply(self, request: ChatRequest) -> Reply:
        """The complete reply to ``request``; a pure function of it."""
        messages = [m for m in request.messages if m.get("role") != "system"]
        calls: list[ToolCall] = []
        reasoning: str | None = None
        if messages and is_summary_request(messages[-1]):
            text = _checkpoint(messages[:-1])
            if request.max_tokens is not None:
                limit = request.max_tokens
                text = _shrink(text, lambda t: self.estimator.count(t) <= limit)
        else:
            scene = _scene(messages)
            bash = request.tool_choice != "none" and any(
                (t.get("function") or t).get("name") == "bash" for t in request.tools or ()
            )
            command = _next_command(scene) if bash and scene.request else None
            if command is None:
                text = _answer(scene, bash)
                reasoning = "Enough seen; answering from the tool results."
            else:
                n = len(scene.obs) + 1
                seed = f"{scene.anchor}\x00{scene.request}".encode()
                call_id = f"call_{hashlib.sha1(seed).hexdigest()[:10]}_{n}"
                args = json.dumps({"command": command})
                calls.append(ToolCall(id=call_id, name="bash", arguments=args))
                text, reasoning = "", f"Step {n}: run `{command}`."
        finish = "tool_calls" if calls else "stop"
        if request.max_tokens is not None and self.estimator.count(text) > request.max_tokens:
            text, finish = self._clip(text, request.max_tokens), "length"
        completion = self.estimator.message_tokens(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [{"function": c.model_dump()} for c in calls],
            }
        ) + self.estimator.count(reasoning or "")
        prompt = self.estimator.messages_tokens(request.messages)
        prompt += self.estimator.tools_tokens(request.tools)
        usage = Usage(prompt_tokens=prompt, completion_tokens=completion)
        return Reply(
            text=text,
            reasoning=reasoning,
            tool_calls=calls,
            finish_reason=finish,
            usage=usage,
            model=MODEL_NAME,
        )

    def _clip(self, text: str, max_tokens: int) -> str:
        while text and self.estimator.count(text) > max(0, max_tokens):
            text = text[: int(len(text) * 0.9)]
        return text

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Stream :meth:`reply` in small pieces, then ``Completed``."""
        reply = self.reply(request)
        if reply.reasoning:
            yield ReasoningDelta(reply.reasoning)
            await self._pause()
        words = re.findall(r"\s*\S+\s*", reply.text) or ([reply.text] if reply.text else [])
        for i in range(0, len(words), 3):
            yield TextDelta("".join(words[i : i + 3]))
            await self._pause()
        for index, call in enumerate(reply.tool_calls):
            yield ToolCallDelta(index, call.id, call.name, "")
            for i in range(0, len(call.arguments), 16):
                yield ToolCallDelta(index, None, None, call.arguments[i : i + 16])
                await self._pause()
        yield Completed(reply)

    async def aclose(self) -> None:
        """Nothing to release: the demo model holds no connection."""

    async def _pause(self) -> None:
        if self.delay_s > 0:
            await asyncio.sleep(self.delay_s)
