"""The model summarizer: one checkpoint per :class:`~compact.checkpoint.SummaryJob`, asked of
a chat model and accepted only when it really is one.

The request replays the conversation's system prompt and tools (a provider's prefix cache
still applies) with ``tool_choice: "none"``, then the messages and the instruction. A server
that refuses ``tool_choice`` (HTTP 400 naming it) is asked again without tools, and is not
offered them again by this summarizer.

A reply is accepted only when it ended naturally (``stop``) with text and no tool call.
Anything else raises :class:`~compact.checkpoint.SummaryRejected` with the reason; a reply
cut at its output cap is marked ``cut`` (the backend then asks once for a terser one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from agent.llm import BadRequest, ChatModel, ChatRequest, LLMError, Reply, collect
from agent.tokens import Estimator
from compact.checkpoint import Call, Summary, SummaryJob, SummaryRejected
from compact.policy import MIN_SUMMARY_TOKENS


class ModelSummarizer:
    """Asks ``model`` for checkpoints. ``notice`` hears, once, that tools are dropped."""

    def __init__(
        self, model: ChatModel, estimator: Estimator, notice: Callable[[str], None]
    ) -> None:
        self.model = model
        self.estimator = estimator
        self.notice = notice
        self.without_tools = False
        """The server refused ``tool_choice``: summaries are requested without tools."""

    async def __call__(self, job: SummaryJob) -> Summary:
        request = self.request(job)
        try:
            reply = await self._ask(request)
        except LLMError as exc:
            raise SummaryRejected(f"the summarizer failed: {exc}") from exc
        return accept(reply, request)

    def request(self, job: SummaryJob) -> ChatRequest:
        """The chat request for ``job``, its output cap clamped to what the window leaves."""
        messages = [
            {"role": "system", "content": job.system},
            *job.messages,
            {"role": "user", "content": job.instruction()},
        ]
        tools = [] if self.without_tools else list(job.tools)
        max_tokens = job.max_tokens
        if job.window is not None:
            prompt = self.estimator.messages_tokens(messages) + self.estimator.tools_tokens(tools)
            max_tokens = min(max_tokens, job.window - prompt)
            if max_tokens < MIN_SUMMARY_TOKENS:
                raise SummaryRejected(
                    "the history to summarize leaves no room in the window for a summary"
                )
        choice = "none" if tools else None
        return ChatRequest(job.model, messages, tools, max_tokens=max_tokens, tool_choice=choice)

    async def _ask(self, request: ChatRequest) -> Reply:
        try:
            return await collect(self.model.stream(request))
        except BadRequest as exc:
            if not request.tools or not refuses_tool_choice(exc):
                raise
        self.without_tools = True
        self.notice(
            "The model server refused tool_choice; summaries are requested without tools for "
            "the rest of this session."
        )
        return await collect(
            self.model.stream(dataclasses.replace(request, tools=[], tool_choice=None))
        )


def refuses_tool_choice(error: BadRequest) -> bool:
    """Does this 400 say the server does not take ``tool_choice`` (or tools at all)?"""
    text = str(error).lower()
    return "tool_choice" in text or "tool choice" in text


def accept(reply: Reply, request: ChatRequest) -> Summary:
    """``reply`` as a summary, or :class:`SummaryRejected` saying why it is not one."""
    call = Call(reply.model or request.model, reply.usage)
    if reply.tool_calls:
        names = ", ".join(sorted({c.name or "?" for c in reply.tool_calls}))
        raise SummaryRejected(
            f"the summarizer called a tool ({names}) instead of writing a summary", call
        )
    if reply.finish_reason == "length":
        raise SummaryRejected(
            f"the summary was cut off at its {request.max_tokens}-token limit", call, cut=True
        )
    if reply.finish_reason != "stop":
        raise SummaryRejected(
            f"the summarizer stopped before finishing (finish reason {reply.finish_reason!r})",
            call,
        )
    text = reply.text.strip()
    if not text:
        raise SummaryRejected("the summarizer returned no text", call)
    return Summary(text, reply.usage, call.model or request.model, request.max_tokens)
