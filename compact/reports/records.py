"""One timeline record: a compaction or a prune batch, as the log tells it (what the
timeline fold builds and every front end shows)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from agent.log.events import Event, SurfaceReplace, ToolResult, TurnEnd, Usage
from compact.contract.events import CompactStartData

Kind = Literal["compaction", "prune", "undo", "edit"]
Status = Literal["running", "done", "failed", "interrupted", "discarded"]

PricedEvent = Callable[[Event], int]
"""Prices one surface event in tokens (a meter's estimator); used for prune replacements."""

MISSING_SUMMARY = "the compaction ended without recording a summary"
MISSING_REPLACEMENT = "a pruned tool result was announced but its replacement was never written"


def put(timeline: list[TimelineRecord], index: int, record: TimelineRecord) -> bool:
    """Set ``timeline[index]`` to ``record``; True when that changed it (records are
    immutable: a fold edits one by putting its replacement)."""
    if timeline[index] == record:
        return False
    timeline[index] = record
    return True


def undo_record(number: int, undoes: int | None, event: Event) -> TimelineRecord:
    """The record of one ``compact/undo`` (a :class:`compact.contract.events.CompactUndoData`)."""
    data: Any = event.data
    return TimelineRecord(
        number=number,
        kind="undo",
        compaction_id=data.compaction_id,
        trigger="undo",
        status="done",
        started_at=event.time,
        ended_at=event.time,
        items_before=1,
        items_after=len(data.restored_seqs),
        tokens_before=data.checkpoint_tokens,
        tokens_after=data.restored_tokens,
        start_seq=event.seq,
        end_seq=event.seq,
        replacement_seq=data.replacement_seq,
        shadowed_seqs=[data.replacement_seq],
        source_command_id=data.source_command_id,
        undoes=undoes,
    )


def edit_record(number: int, edits: int | None, event: Event) -> TimelineRecord:
    """The record of one ``compact/edit`` (a :class:`compact.contract.events.CompactEditData`):
    its ``replacement_seq`` is the edit itself (what an undo names), its one shadowed seq the
    checkpoint whose text it corrected."""
    data: Any = event.data
    return TimelineRecord(
        number=number,
        kind="edit",
        compaction_id=data.compaction_id,
        trigger="edit",
        status="done",
        started_at=event.time,
        ended_at=event.time,
        items_before=1,
        items_after=1,
        tokens_before=data.tokens_before,
        tokens_after=data.tokens_after,
        summary=data.summary,
        start_seq=event.seq,
        end_seq=event.seq,
        replacement_seq=event.seq,
        shadowed_seqs=[data.checkpoint_seq],
        source_command_id=data.source_command_id,
        edits=edits,
    )


@dataclass(frozen=True)
class Why:
    """A compaction's occasion: the context when it started, the automatic mark it reached
    (None for the other triggers) and what stayed verbatim after the checkpoint."""

    context_tokens: int
    mark: int | None
    kept_items: int
    kept_tokens: int

    @classmethod
    def of(cls, data: CompactStartData) -> Why | None:
        if data.context_tokens is None or data.kept_items is None or data.kept_tokens is None:
            return None
        return cls(data.context_tokens, data.mark, data.kept_items, data.kept_tokens)


@dataclass(frozen=True)
class TimelineRecord:
    """One compaction or one prune batch, as the log tells it.

    ``items_before``/``tokens_before`` price what left the surface (the shadowed nodes).
    ``items_after`` is 1 for a landed checkpoint (0 until it lands); for a prune batch it is
    the number of results actually replaced (they stay on the surface as placeholders).
    ``tokens_after`` is the checkpoint's price (``summary_tokens``); for a prune batch it is
    the sum of the replacements' prices when the fold was given a pricer, else None.
    """

    number: int
    """1-based position in the timeline."""
    kind: Kind
    compaction_id: str | None
    """None for a prune batch."""
    trigger: str
    """``auto``/``manual``/``overflow``/``region``; for a prune batch ``pressure``/``overflow``."""
    status: Status
    started_at: float
    ended_at: float | None
    items_before: int
    items_after: int
    tokens_before: int
    tokens_after: int | None
    summary: str | None = None
    """The raw summary (``compact/summary``), not the framed checkpoint."""
    focus: str | None = None
    model: str | None = None
    """Summarizer model; ``fallback`` for the model-free checkpoint; None for prunes."""
    usage: Usage | None = None
    error: str | None = None
    turn: int | None = None
    """The turn the compaction ran in; None between turns (``/compact``) and for prunes."""
    start_seq: int = 0
    replacement_seq: int | None = None
    """Seq of the checkpoint ``user/message`` (the last replacement for a prune batch)."""
    shadowed_seqs: list[int] = field(default_factory=list)
    """Read-only. The records of one prune batch share this list, which grows while the
    batch runs (records of a batch differ in their counts, never only in this list)."""
    end_seq: int | None = None
    source_command_id: str | None = None
    calls: int = 0
    """Summarizer calls made so far (``compact/progress`` records)."""
    chunks: int = 0
    """Chunks the range is read in (0 until the first call reports)."""
    chunks_done: int = 0
    """Chunks summarized so far."""
    note: str | None = None
    """The latest thing that went wrong with a call (a cut, a failure), while running."""
    fallback_reason: str | None = None
    """Why the model-free checkpoint took the model's place (``model`` is ``fallback``)."""
    reread_tokens: int | None = None
    """What the compaction cost a prompt cache: tokens the next request read uncached."""
    why: Why | None = None
    """What set a compaction off and what it kept verbatim (None in older logs)."""
    undone_by: int | None = None
    """For a compaction: the number of the undo record that reversed it."""
    edits: int | None = None
    """For an edit: the number of the compaction whose summary it corrected."""
    undoes: int | None = None
    """For an undo: the number of the compaction it reversed (items and tokens before are
    the checkpoint's, after are what came back)."""

    @property
    def duration_s(self) -> float | None:
        """Seconds from the first to the last event; None while running or if interrupted."""
        if self.ended_at is None:
            return None
        return max(0.0, self.ended_at - self.started_at)

    @property
    def saved_tokens(self) -> int | None:
        """Tokens taken off the surface: ``before - after`` when both are known.

        For a prune batch without a pricer this is ``tokens_before``, an upper bound (the
        placeholders themselves cost a few tokens). None when nothing is known yet.
        """
        if self.tokens_after is not None:
            return self.tokens_before - self.tokens_after
        if self.kind == "prune":
            return self.tokens_before
        return None

    def elapsed(self, now: float) -> float:
        """Seconds since the start, up to the end if it ended (for a live "running" label)."""
        end = self.ended_at if self.ended_at is not None else now
        return max(0.0, end - self.started_at)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values for every field (``usage`` as a dict)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Usage):
                value = value.model_dump()
            elif isinstance(value, Why):
                value = dataclasses.asdict(value)
            elif isinstance(value, list):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TimelineRecord:
        """Inverse of :meth:`to_dict`; keys that are not fields (derived values) are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        usage = kwargs.get("usage")
        if isinstance(usage, dict):
            kwargs["usage"] = Usage.reported(usage)
        if isinstance(why := kwargs.get("why"), dict):
            kwargs["why"] = Why(**why)
        return cls(**kwargs)


def repair_closer(event: Event) -> bool:
    """Could ``event`` have been written by crash repair (:mod:`agent.log.repair`)?"""
    if isinstance(event, TurnEnd):
        return event.data.reason == "interrupted"
    if isinstance(event, ToolResult):
        return event.data.is_error and not isinstance(event.surface_op, SurfaceReplace)
    return event.type == "step/end"
