"""The summary request as a continuation of the conversation: the prompt cache pays for it.

A provider bills the longest prefix of a request that an earlier request already sent at
about a tenth of the input price. The conversation's next request would be the system
prompt, the tools and the surface's messages; a summary request that is exactly that, byte
for byte, and then one more user message (the instruction) is a cache hit on everything but
that message. Reading the range alone, with originals where the surface shows placeholders,
would be a new prompt from the first placeholder on.

What the surface shows only as a placeholder or an excerpt (a pruned result) cannot be
changed inside the prefix without losing the hit, so its original goes *after* it, in the
final message, labelled with the call it belongs to and the place it held, oldest first.
The request stops before the newest step (the assistant message whose results the model
acts on next, and what follows it): that step stays verbatim after the compaction, so the
summary need not cover it, and what came before it is exactly what the last step request
sent — all of it a cache hit. Reading the newest step too would read its outputs uncached
twice, once here and once in the request after the rewrite. Everything older is read, the
retained tail's older steps included: the checkpoint carries their outputs too, which is
what lets the backend fold them out of view in the same rewrite (:mod:`compact.basic`).
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.log.events import AssistantMessage, ToolResult
from agent.log.messages import ChatMessage, checkpoint_index, event_message
from agent.log.session import Session
from compact.basic.reading import RangeReader
from compact.basic.selection import newest_step
from compact.contract.events import CompactPrune
from compact.parts.originals import command_text, original

APPENDIX_HEAD = (
    "Some tool outputs above are shown only as placeholders or excerpts. Here they are as "
    "they originally were (long ones cut at the middle), oldest first; each one belongs at "
    "the place of the tool result with that call id, and is older than everything after it."
)


@dataclass(frozen=True)
class Continuation:
    """The conversation as its next request would carry it, and what to say after it."""

    messages: list[ChatMessage]
    """The surface's messages up to the newest step: a prefix of the request's messages
    after the system prompt, byte for byte."""
    appendix: str | None
    """The originals of pruned results, for the final message (None: there are none)."""
    prefix_tokens: int
    """Estimated tokens of ``messages``."""
    tokens: int
    """Estimated tokens of ``messages`` and ``appendix``."""
    checkpoint: int | None = None
    """The index in ``messages`` of the checkpoint an earlier compaction left, if any."""


def continuation(
    reader: RangeReader, span: list[int], *, read_newest: bool = False
) -> Continuation:
    """The surface of ``reader``'s session as a summary request of ``span`` continues it:
    up to the newest step, or to the end of ``span`` where it reaches further. ``read_newest``:
    the whole surface, the newest step too — the request of a step already sent, which a
    summary written ahead continues (:mod:`compact.basic.ahead`)."""
    session = reader.session
    nodes = session.surface
    upto = len(nodes) if read_newest else reading_end(session, span)
    count = sum(1 for seq in nodes[:upto] if event_message(session.events[seq]) is not None)
    messages = session.derive_messages()[:count]
    if reader.price is not None:
        prefix = sum(reader.price(seq) for seq in nodes[:upto])
    else:
        prefix = reader.estimator.messages_tokens(messages)
    originals: list[str] = []
    commands: dict[str, str] = {}
    for seq in nodes[:upto]:
        event = session.events[seq]
        if isinstance(event, AssistantMessage):
            for call in event.data.tool_calls:
                commands[call.id] = command_text(call.name, call.arguments)
            continue
        if not isinstance(event, ToolResult):
            continue
        if original(session, event).seq == seq or _carried(session, event):
            continue  # shown as it was first appended, or a checkpoint in the prefix has it
        message, as_is = reader.message(seq)
        if as_is or message is None:
            continue
        command = commands.get(event.data.call_id, event.data.name)
        originals.append(
            f"### Output of `{command}` (tool call {event.data.call_id})\n{message['content']}"
        )
    appendix = None
    tokens = prefix
    if originals:
        appendix = "\n\n".join([APPENDIX_HEAD, *originals])
        tokens += reader.estimator.count(appendix)
    checkpoint = checkpoint_index(nodes[:upto], session.events)
    return Continuation(messages, appendix, prefix, tokens, checkpoint)


def reading_end(session: Session, span: list[int]) -> int:
    """How many surface nodes a summary request of ``span`` reads: those before the newest
    step (:func:`compact.basic.selection.newest_step`), and never fewer than ``span`` needs."""
    nodes = session.surface
    last = nodes.index(span[-1]) + 1 if span and span[-1] in nodes else len(nodes)
    return max(newest_step(session), last)


def _carried(session: Session, event: ToolResult) -> bool:
    """Whether a checkpoint read ``event``'s original before it was masked: its content is
    in that checkpoint, which the prefix holds (or a newer one that merged it)."""
    sources = event.source_event_seqs or ()
    prune = session.events[sources[0]] if sources else None
    return isinstance(prune, CompactPrune) and prune.data.carried_by is not None
