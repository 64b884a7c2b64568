"""The summarizers: the model's checkpoint, and the model-free one that takes its place.

**The model summarizer** writes one checkpoint per :class:`~compact.parts.checkpoint.SummaryJob`,
asked of a chat model and accepted only when it really is one. The request replays the
conversation's system prompt and tools (a provider's prefix cache still applies) with
``tool_choice: "none"``, then the messages and the instruction. A server that refuses
``tool_choice`` (HTTP 400 naming it) is asked again without tools, and is not offered them
again by this summarizer. A reply is accepted only when it ended naturally (``stop``) with
text and no tool call. Anything else raises :class:`~compact.parts.checkpoint.SummaryRejected` with
the reason; a reply cut at its output cap is marked ``cut`` (the backend then asks once for a
terser one).

**The model-free checkpoint** is used when an automatic or overflow compaction cannot get a
summary from the model. Weak local models often fail to summarize (they ramble past the
output cap, call a tool, or the request overflows the window that just overflowed). It is
built from the messages alone: the user's messages verbatim within a budget, the commands run
with their exit codes, the last error lines seen, and the file paths mentioned, merged with
the sections of an earlier checkpoint (or of the model's checkpoint so far) when one leads.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agent.formatting import one_line
from agent.llm.chat import ChatModel, ChatRequest, collect
from agent.llm.errors import BadRequest, LLMError
from agent.llm.replies import Notice, Reply, Retrying
from agent.tokens import Estimator
from compact.contract.policy import MIN_SUMMARY_TOKENS
from compact.parts.checkpoint import Call, Summary, SummaryJob, SummaryRejected, checkpoint_sections
from compact.parts.originals import command_text
from tools import footer
from tools.edit.call import path_of


class ModelSummarizer:
    """Asks ``model`` for checkpoints. ``notice`` hears, once, that tools are dropped, and
    each failed request that is retried (an HTTP 500 mid-compaction is said on the headless
    stderr and in the app, not waited through in silence)."""

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
        return ChatRequest(
            job.model,
            messages,
            tools,
            max_tokens=max_tokens,
            tool_choice=choice,
            # Cache breakpoints as in the step requests (the conversation's own prefix is
            # read from the cache), none on the instruction, which no request repeats.
            checkpoint=None if job.checkpoint is None else 1 + job.checkpoint,
            prefix_end=len(messages) - 1,
        )

    async def _ask(self, request: ChatRequest) -> Reply:
        try:
            return await collect(self.model.stream(request), self._retrying, self._told)
        except BadRequest as exc:
            if not request.tools or not refuses_tool_choice(exc):
                raise
        self.without_tools = True
        self.notice(
            "The model server refused tool_choice; summaries are requested without tools for "
            "the rest of this session."
        )
        return await collect(
            self.model.stream(dataclasses.replace(request, tools=[], tool_choice=None)),
            self._retrying,
            self._told,
        )

    def _told(self, notice: Notice) -> None:
        self.notice(notice.text)

    def _retrying(self, retry: Retrying) -> None:
        self.notice(
            f"Summarizer request retry {retry.attempt} in {retry.delay_s:.1f}s: {retry.error}"
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


# --- the model-free checkpoint ---------------------------------------------------------------

MODEL = "fallback"
_PATH = re.compile(
    r"(?<![\w/.-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+\.\w{1,8}\b"
    r"|\b[\w-]+\.(?:py|md|txt|toml|json|ya?ml|js|ts|rs|go|c|h|cpp|sh|cfg|ini|lock)\b"
)
_ERROR = re.compile(r"error|Error|ERROR|failed|FAILED|Traceback|exception|Exception")
EARLIER_BULLETS = 12
"""Bullets kept per section from an earlier checkpoint being merged."""


def fallback_summary(messages: Sequence[Mapping[str, Any]], budget_chars: int = 6000) -> str:
    """An extractive checkpoint in the usual sections, at most about ``budget_chars``.

    One pass over the messages fills every section at once; split, each part would walk the
    messages again.
    """
    requests: list[str] = []
    commands: list[str] = []
    errors: list[str] = []
    paths: dict[str, None] = {}
    pending: dict[str, str] = {}
    earlier: dict[str, list[str]] = {}
    for message in messages:
        role = message.get("role")
        content = message.get("content") or ""
        text = content if isinstance(content, str) else json.dumps(content)
        if role == "user" and "<compacted-summary>" in text:
            # An earlier checkpoint (or the model's checkpoint so far): merged, not quoted.
            for heading, bullets in checkpoint_sections(text).items():
                earlier.setdefault(heading, []).extend(bullets)
            continue
        if role == "user":
            requests.append(text.strip())
        for call in message.get("tool_calls") or ():
            fn = call.get("function", {})
            arguments = fn.get("arguments", "")
            pending[call.get("id", "")] = command_text(fn.get("name", "tool"), arguments, limit=120)
            # The file a call names (an edit's): named even without a known extension.
            if isinstance(arguments, str) and (named := path_of(arguments)) is not None:
                paths.setdefault(named, None)
        if role == "tool":
            command = pending.pop(message.get("tool_call_id", ""), "tool call")
            code = footer.last_exit(text)
            commands.append(f"`{command}` → exit {code}" if code is not None else f"`{command}`")
            errors += [line.strip() for line in text.splitlines() if _ERROR.search(line)]
        for match in _PATH.findall(text):
            paths.setdefault(match, None)

    share = budget_chars // 2
    kept: list[str] = []
    used = 0
    for request in reversed(requests):  # the newest requests matter most
        piece = request if len(request) <= share - used else request[: max(0, share - used)] + "…"
        if used >= share:
            break
        kept.insert(0, piece)
        used += len(piece)
    sections = {
        "Primary request and intent": [f"User: {r}" for r in kept] or ["(none recorded)"],
        "Key technical concepts": ["(not extracted: model-free checkpoint)"],
        "Files and code": list(paths)[-20:] or ["(none seen)"],
        "Errors and fixes": errors[-8:] or ["(none seen)"],
        "Pending tasks": ["(unknown: review the last request)"],
        "Current work": commands[-15:] or ["(no commands run)"],
        "Next step": ["Continue with the user's latest request."],
        "Critical context": [
            "This checkpoint was built without a model (the model could not summarize); "
            "re-read files or re-run commands for exact details."
        ],
    }
    out = []
    for heading, items in sections.items():
        older = earlier.get(heading.lower(), [])[-EARLIER_BULLETS:]
        out.append(f"## {heading}")
        out += [f"- {one_line(item, 1500)}" for item in dict.fromkeys([*older, *items])]
        out.append("")
    return "\n".join(out).strip()[: budget_chars + 2000]
