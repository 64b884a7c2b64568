"""The ``compact/*`` session events, registered into a session's event registry by
:func:`register_events` (the core does not know them).

A compaction is a bracket in the log::

    compact/start    log-only; acquires the lock
    compact/progress log-only, one per summarizer call (a chunk, a terser retry, a failure)
    compact/summary  log-only; raw summary, shadowed range and seqs, their token price
    user/message     surface_op replace: the framed checkpoint takes the range's place
    compact/end      log-only; releases the lock (with ``error`` when the attempt failed)

and a prune is ``compact/prune`` followed by the replacement ``tool/result`` it announces.
An undone compaction is one ``compact/undo`` (durable), whose ``restore`` surface op puts
back what the checkpoint shadowed: one line, so a crash leaves the surface before or after
it, never in between. A corrected checkpoint is one ``compact/edit`` (durable), whose
``revise`` surface op gives the checkpoint node the person's text; a ``compact/undo`` naming
it brings back the text before it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from agent.log.events import Data, Event, ReportedUsage
from agent.log.registry import EventRegistry

Trigger = Literal["auto", "manual", "overflow", "region"]
PruneTrigger = Literal["pressure", "overflow"]
"""Why a prune ran: the context is filling up, or the server said it overflowed."""
PruneKind = Literal["trim", "mask"]
"""How a prune shrinks a result: trimmed to its head and tail, or masked whole."""


class Range(Data):
    """A positional surface range: the seqs at its first and last position."""

    start: int
    end: int


class CompactStartData(Data):
    compaction_id: str
    trigger: Trigger
    turn: int | None = None
    focus: str | None = None
    source_command_id: str | None = None
    items: int | None = None
    """How many surface items the attempt would replace, and their price: a failed attempt
    says what it tried (None in logs written before they were recorded)."""
    tokens: int | None = None
    ahead: bool = False
    """The summary was written in the background, before the checkpoint this bracket was
    logged at (its calls are logged inside the bracket all the same)."""
    context_tokens: int | None = None
    """What set it off: the context's size when it started, and for an automatic one the
    mark it reached (None in older logs)."""
    mark: int | None = None
    kept_items: int | None = None
    """What stays verbatim after the checkpoint: the surface items after the range, and
    their price."""
    kept_tokens: int | None = None


class CompactSummaryData(Data):
    compaction_id: str
    summary: str
    """The raw summary as the summarizer wrote it (the checkpoint frames it)."""
    shadowed_range: Range
    shadowed_seqs: list[int]
    """Every shadowed seq, in surface order."""
    shadowed_tokens: int
    """Estimated price of the shadowed nodes."""
    summary_tokens: int = 0
    """Estimated price of the framed checkpoint that replaces them."""
    model: str
    """The summarizer model, or ``fallback`` for the model-free checkpoint."""
    usage: ReportedUsage = None
    """Summed over every summarizer call of the compaction (see ``compact/progress``)."""
    max_tokens: int | None = None
    fallback_reason: str | None = None
    """Why the model-free checkpoint took the model's place (None: it did not)."""


class CompactProgressData(Data):
    """One summarizer call inside a compaction's bracket (log-only): a chunk read, a terser
    retry after a cut, or a failure the model-free checkpoint then covered."""

    compaction_id: str
    chunk: int = Field(ge=1)
    """Which chunk of the range this call read (1-based, oldest first)."""
    chunks: int = Field(ge=1)
    """How many chunks the range was planned in."""
    items: int = Field(ge=0)
    """Surface items of the range this chunk covers."""
    input_tokens: int = Field(ge=0)
    """Estimated tokens of what the call read (originals of pruned results included)."""
    cached_prefix_tokens: int | None = Field(default=None, ge=0)
    """Of those, the tokens that repeat the conversation's own request byte for byte (a
    provider's prompt cache serves them); None: the call read a range of its own."""
    status: Literal["ok", "cut", "failed"]
    """``cut``: the reply hit its output cap (a terser retry follows, or the failure)."""
    reason: str | None = None
    model: str | None = None
    usage: ReportedUsage = None
    max_tokens: int | None = None
    elapsed_s: float = Field(default=0.0, ge=0)


class CompactEndData(Data):
    compaction_id: str
    turn: int | None = None
    error: str | None = None
    discarded: bool = False
    """A summary written ahead that was never used (its range changed, it failed, the turn
    ended first): the calls it made were spent all the same."""
    reread_tokens: int | None = None
    """What the rewrite cost a prompt cache: the estimated tokens of the conversation from
    the checkpoint on, which the next request reads uncached (None: it failed, or an older
    log)."""


class CompactPruneData(Data):
    """The shadow price of one pruned tool result (followed by its replacement)."""

    shadowed_range: Range
    shadowed_seqs: list[int]
    shadowed_tokens: int
    kind: PruneKind = "mask"
    trigger: PruneTrigger = "pressure"
    replacement_tokens: int | None = None
    """The estimated price of the replacement that follows, so every view of the log
    states the same saving (None in logs written before it was recorded)."""
    carried_by: str | None = None
    """The compaction whose checkpoint read this result before it was masked (its content
    is carried there); None: no checkpoint did (a prune of its own, or an older log)."""


class CompactUndoData(Data):
    """A compaction undone: its checkpoint leaves the surface, what it shadowed comes back.
    Or an edit undone (``replacement_seq`` is the ``compact/edit``): the checkpoint's text
    before it comes back (``restored_seqs`` is the checkpoint)."""

    compaction_id: str
    replacement_seq: int
    restored_seqs: list[int]
    restored_tokens: int
    """Estimated price of what came back (the checkpoint's own price is taken off)."""
    checkpoint_tokens: int
    source_command_id: str | None = None


class CompactEditData(Data):
    """The newest checkpoint's summary, corrected by the person: the checkpoint node keeps
    its place; the model reads ``summary`` (framed as before) from the next request on."""

    compaction_id: str
    """The compaction whose checkpoint it corrects."""
    checkpoint_seq: int
    summary: str
    """The corrected raw summary (the ``revise`` op carries it framed)."""
    tokens_before: int
    """Estimated price of the checkpoint before the edit, and after it."""
    tokens_after: int
    source_command_id: str | None = None


class CompactEdit(Event):
    durable: ClassVar[bool] = True
    type: Literal["compact/edit"] = "compact/edit"
    data: CompactEditData


class CompactUndo(Event):
    durable: ClassVar[bool] = True
    type: Literal["compact/undo"] = "compact/undo"
    data: CompactUndoData


class CompactStart(Event):
    type: Literal["compact/start"] = "compact/start"
    data: CompactStartData


class CompactSummary(Event):
    type: Literal["compact/summary"] = "compact/summary"
    data: CompactSummaryData


class CompactEnd(Event):
    durable: ClassVar[bool] = True
    type: Literal["compact/end"] = "compact/end"
    data: CompactEndData


class CompactPrune(Event):
    type: Literal["compact/prune"] = "compact/prune"
    data: CompactPruneData


class CompactProgress(Event):
    type: Literal["compact/progress"] = "compact/progress"
    data: CompactProgressData


COMPACT_EVENTS: tuple[type[Event], ...] = (
    CompactStart,
    CompactProgress,
    CompactSummary,
    CompactEnd,
    CompactPrune,
    CompactUndo,
    CompactEdit,
)


def register_events(registry: EventRegistry) -> EventRegistry:
    """Add the ``compact/*`` types to ``registry`` (idempotent); returns it."""
    for model in COMPACT_EVENTS:
        registry.register(model)
    return registry
