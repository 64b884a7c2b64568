"""Cache breakpoints: where a request to an Anthropic-style cache says a cached prefix ends.

Claude models (directly, or behind an OpenAI-compatible gateway such as OpenRouter or
LiteLLM) cache a prefix only where the request marks one: a content part carrying
``cache_control: {"type": "ephemeral"}``. A marked prefix seen before is read at a tenth of
the input price; a new one is written at 1.25×. At most :data:`MAX_BREAKPOINTS` marks go in
one request, on these messages (each counted once):

1. the system prompt: with the tools before it, the first cached block;
2. the checkpoint a compaction left (:attr:`ChatRequest.checkpoint`): what every request
   until the next compaction starts with;
3. the newest message: the next request repeats everything up to it, so this request writes
   the prefix that request reads;
4. the newest message before the newest assistant message: where the previous request
   ended (the newest assistant message is its reply), so this request reads that prefix
   exactly, whatever a provider's look-back reaches.

Messages after :attr:`ChatRequest.prefix_end` (a summary request's instruction, which no
later request repeats) are never marked: writing them would cost 1.25× for nothing. A
message with no text (an assistant message with tool calls only) cannot carry a mark: the
nearest earlier one with text does.

Marks are a property of the wire request only: the request's messages (shared with the log's
cache) are never changed; the marked ones are copies.

OpenAI-compatible servers get the other hint a cache takes, ``prompt_cache_key`` (the
session's id: OpenAI routes requests with one key to machines that hold its prefixes). A
server that does not know the field and refuses it (:func:`refuses_cache_key`) is asked
again without it, and never sent it again in that session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent.llm.chat import ChatRequest
from agent.llm.errors import BadRequest, LLMError
from agent.llm.prompt_cache import MAX_BREAKPOINTS

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
"""The mark: a prefix cached for the provider's default TTL (5 minutes at Anthropic)."""


KEY_REFUSED = (
    "The model server refused prompt_cache_key ({detail}): reefline asks again without it and "
    "does not send it for the rest of this session."
)


def refuses_cache_key(error: LLMError) -> bool:
    """Whether ``error`` is a server refusing ``prompt_cache_key``: a 400 (or 422) that names
    it ("Unrecognized request argument", "extra fields not permitted"...)."""
    return isinstance(error, BadRequest) and "prompt_cache_key" in error.detail


def breakpoints(request: ChatRequest) -> list[int]:
    """The indices in ``request.messages`` to mark, in order, at most :data:`MAX_BREAKPOINTS`."""
    messages = request.messages
    end = len(messages) if request.prefix_end is None else min(request.prefix_end, len(messages))
    chosen: list[int | None] = []
    if end and messages[0].get("role") == "system":
        chosen.append(_with_text(messages, 0))
    if request.checkpoint is not None and 0 <= request.checkpoint < end:
        chosen.append(_with_text(messages, request.checkpoint))
    newest = _with_text(messages, end - 1)
    chosen.append(newest)
    reply = next(
        (i for i in range(end - 1, -1, -1) if messages[i].get("role") == "assistant"), None
    )
    if reply is not None:
        chosen.append(_with_text(messages, reply - 1))
    return sorted({i for i in chosen if i is not None})[-MAX_BREAKPOINTS:]


def marked(request: ChatRequest) -> list[dict[str, Any]]:
    """``request.messages`` as the wire carries them to an Anthropic-style cache: the
    messages of :func:`breakpoints` copied with their text as content parts, the last part
    marked; every other message as it is."""
    out = list(request.messages)
    for index in breakpoints(request):
        out[index] = {**out[index], "content": _marked_content(out[index]["content"])}
    return out


def marks(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many ``cache_control`` marks ``messages`` carry (for checks and the benches)."""
    count = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            count += sum(
                1 for part in content if isinstance(part, Mapping) and "cache_control" in part
            )
    return count


def _with_text(messages: Sequence[Mapping[str, Any]], index: int) -> int | None:
    """``index``, or the nearest earlier message that has text to carry a mark."""
    for i in range(index, -1, -1):
        if _has_text(messages[i].get("content")):
            return i
    return None


def _has_text(content: object) -> bool:
    if isinstance(content, str):
        return bool(content)
    if isinstance(content, list):
        return any(_is_text_part(part) for part in content)
    return False


def _is_text_part(part: object) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "text" and bool(part.get("text"))


def _marked_content(content: str | list[Any]) -> list[Any]:
    """``content`` as parts, the last text part marked."""
    if isinstance(content, str):
        return [{"type": "text", "text": content, "cache_control": EPHEMERAL}]
    parts = list(content)
    last = max(i for i, part in enumerate(parts) if _is_text_part(part))
    parts[last] = {**parts[last], "cache_control": EPHEMERAL}
    return parts
