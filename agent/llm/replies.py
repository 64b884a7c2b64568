"""Replies and stream events: what a model's stream yields, and the fold of OpenAI chat
completion chunks (streamed) or of one whole completion (not streamed) into them.

Both paths go through :class:`ReplyBuilder`, so a non-streamed reply is parsed, bounded,
redacted and shown exactly like a streamed one (as one delta per part).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.llm.call_bounds import (
    MAX_ARGUMENT_CHARS,
    MAX_CALLS,
    MAX_TEXT_CHARS,
    text_cut_note,
    too_big,
)
from agent.llm.errors import MalformedResponse, StreamIncomplete
from agent.llm.wire_usage import chunk_cache_figure, parse_usage
from agent.log.events import ToolCall, Usage
from agent.redaction import StreamRedactor, redact

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionChunk


@dataclass
class Reply:
    """One complete assistant reply. ``reasoning`` is for display only: it is never sent back.
    ``model`` is the model the server says answered, else the one requested."""

    text: str
    reasoning: str | None
    tool_calls: list[ToolCall]
    finish_reason: str
    usage: Usage | None
    model: str
    refused: dict[str, str] = field(default_factory=dict)
    """Calls that are not to run, by id, with the error the model gets instead (arguments
    past :data:`~agent.llm.call_bounds.MAX_ARGUMENT_CHARS`; their text is not kept)."""
    dropped_calls: int = 0
    """Calls past :data:`~agent.llm.call_bounds.MAX_CALLS` that the reply asked for and that
    were not kept."""


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of tool call ``index`` (its position in ``Reply.tool_calls``). ``id`` and
    ``name`` arrive on the first piece, argument text on the later ones."""

    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True)
class Retrying:
    """Attempt number ``attempt`` (1-based) failed with ``error``; everything streamed for
    this request so far is void. The next attempt starts after ``delay_s`` seconds."""

    attempt: int
    error: str
    delay_s: float


@dataclass(frozen=True)
class Began:
    """The server's first chunk of a streamed reply arrived: it has read the whole prompt
    (a provider that caches prompts has it cached from now on). Not shown; it tells the
    loop's ``replying`` hooks."""


@dataclass(frozen=True)
class Completed:
    """The last item of every successful stream."""

    reply: Reply


@dataclass(frozen=True)
class Notice:
    """Something the user should know about how requests are made from now on (the server
    needs replies without streaming, the window was lowered...). Shown once; not logged."""

    text: str


@dataclass(frozen=True)
class ToolOutputDelta:
    """Output of the running tool call ``call_id`` as it arrives (cleaned text). For the
    person watching; the model and the log get the call's result."""

    call_id: str
    text: str


StreamEvent = (
    TextDelta
    | ReasoningDelta
    | ToolCallDelta
    | Retrying
    | Began
    | Completed
    | Notice
    | ToolOutputDelta
)


class _Part:
    """Reply text or reasoning as it streams: redacted (a key the model echoes is masked,
    also when split across deltas) and bounded (past :data:`MAX_TEXT_CHARS` the rest is
    dropped as it arrives, never held, and a note says so)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.pieces: list[str] = []
        self.size = 0
        self.cut = False
        self._redactor = StreamRedactor()

    def feed(self, piece: str) -> str:
        """What to show of ``piece`` (maybe nothing yet, or only the note)."""
        return "" if self.cut else self._keep(self._redactor.feed(piece))

    def flush(self) -> str:
        """What was held back, now that the part is complete."""
        return "" if self.cut else self._keep(self._redactor.flush())

    def _keep(self, shown: str) -> str:
        if self.size + len(shown) > MAX_TEXT_CHARS:
            # A cut may leave a key's start at the end: redact masks it.
            shown = redact(shown[: MAX_TEXT_CHARS - self.size]) + text_cut_note(self.kind)
            self.cut = True
        self.size += len(shown)
        if shown:
            self.pieces.append(shown)
        return shown

    @property
    def text(self) -> str:
        return "".join(self.pieces)


class ReplyBuilder:
    """Folds chunks into a Reply and turns each into the deltas to show."""

    def __init__(self, requested_model: str) -> None:
        self.model = requested_model
        self.text = _Part("reply")
        self.reasoning = _Part("reasoning")
        self.calls: list[dict[str, Any]] = []  # {"id", "name", "args": list[str]}
        self.slot_of_index: dict[int, int] = {}
        self.finish_reason: str | None = None
        self.raw_usage: Any = None
        self.chunk_cached: int | None = None
        """A cache figure llama.cpp sends beside the usage (``timings.cache_n``)."""
        self.chunks = 0
        self.dropped = 0
        self.dropped_indexes: set[int] = set()

    def feed(self, chunk: ChatCompletionChunk) -> list[StreamEvent]:
        self.chunks += 1
        events: list[StreamEvent] = []
        if chunk.model:
            self.model = chunk.model
        if (cached := chunk_cache_figure(chunk)) is not None:
            self.chunk_cached = cached
        if chunk.usage is not None:
            # Some servers repeat running usage on every chunk: the last one wins.
            self.raw_usage = chunk.usage
        for choice in chunk.choices or []:
            if choice.index not in (0, None):
                continue  # we never ask for n > 1
            delta = choice.delta
            extra = delta.model_extra or {}
            # DeepSeek and vLLM say reasoning_content; OpenRouter and others say reasoning.
            thought = extra.get("reasoning_content") or extra.get("reasoning")
            if isinstance(thought, str) and thought and (shown := self.reasoning.feed(thought)):
                events.append(ReasoningDelta(shown))
            for text in (delta.content, delta.refusal):
                if text and (shown := self.text.feed(text)):
                    events.append(TextDelta(shown))
            for call in delta.tool_calls or []:
                if (piece := self._tool_delta(call)) is not None:
                    events.append(piece)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        if self.finish_reason is not None:
            # The reply is complete: what the redactors held back for the next delta is shown.
            if shown := self.reasoning.flush():
                events.append(ReasoningDelta(shown))
            if shown := self.text.flush():
                events.append(TextDelta(shown))
        return events

    def _tool_delta(self, call: Any) -> ToolCallDelta | None:
        function = call.function
        name = function.name if function is not None else None
        args = _argument_text(function.arguments if function is not None else None)
        slot = self.slot_of_index.get(call.index)
        if slot is not None and call.id and self.calls[slot]["id"] not in (None, call.id):
            # A new id on a known index: a server that numbers every call 0. Treat it as the
            # next call instead of gluing two argument strings together.
            slot = None
        if slot is None:
            if len(self.calls) >= MAX_CALLS:
                # Past the bound: counted, not kept (and not shown).
                if call.index not in self.dropped_indexes or call.id:
                    self.dropped += 1
                    self.dropped_indexes.add(call.index)
                return None
            slot = len(self.calls)
            self.slot_of_index[call.index] = slot
            self.calls.append({"id": call.id, "name": name or "", "args": [], "size": 0})
        entry = self.calls[slot]
        if call.id and entry["id"] is None:
            entry["id"] = call.id
        if name and not entry["name"]:
            entry["name"] = name
        entry["size"] += len(args)
        if entry["size"] > MAX_ARGUMENT_CHARS:
            entry["args"] = []  # counted from here on, never held
            return None
        entry["args"].append(args)
        return ToolCallDelta(slot, call.id, name, args)

    @property
    def usage(self) -> Usage | None:
        """The usage the server reported (None: it sent none)."""
        if self.raw_usage is None:
            return None
        return parse_usage(self.raw_usage, self.chunk_cached)

    def reply(self) -> Reply:
        if self.finish_reason is None:
            raise StreamIncomplete(
                f"the stream ended after {self.chunks} chunks without a finish reason"
            )
        calls = []
        refused = {}
        for c in self.calls:
            # Some local servers omit call ids; tool results must still pair with their call.
            call_id = c["id"] or f"call_{uuid.uuid4().hex[:24]}"
            calls.append(ToolCall(id=call_id, name=c["name"], arguments="".join(c["args"])))
            if c["size"] > MAX_ARGUMENT_CHARS:
                refused[call_id] = too_big(c["size"])
        self.text.flush()
        self.reasoning.flush()
        return Reply(
            text=self.text.text,
            reasoning=self.reasoning.text or None,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            usage=self.usage,
            model=self.model,
            refused=refused,
            dropped_calls=self.dropped,
        )


def _argument_text(arguments: object) -> str:
    """A call's arguments as the JSON text the API specifies. Some compatible servers send
    the arguments as a JSON object instead of a string: that object is what the model meant,
    so it is accepted, written back as JSON text."""
    if arguments is None or isinstance(arguments, str):
        return arguments or ""
    try:
        return json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise MalformedResponse(f"tool call arguments that are not JSON text ({exc})") from exc


def whole_as_chunk(payload: dict[str, Any]) -> dict[str, Any]:
    """A whole (non-streamed) chat completion as the one stream chunk it amounts to, so that
    :meth:`ReplyBuilder.feed` gives it the same parsing, bounds, usage and deltas as a
    stream, one delta per part."""
    choices = []
    for choice in payload.get("choices") or []:
        message = dict(choice.get("message") or {})
        calls = [
            {**call, "index": i} for i, call in enumerate(message.pop("tool_calls", None) or [])
        ]
        message.pop("role", None)
        choices.append(
            {
                "index": choice.get("index", 0),
                "delta": {**message, "tool_calls": calls or None},
                "finish_reason": choice.get("finish_reason"),
            }
        )
    return {**payload, "object": "chat.completion.chunk", "choices": choices}
