"""The prune batches of the compaction timeline (:mod:`compact.reports.timeline`): a run of
consecutive ``compact/prune`` events, each followed by its replacement ``tool/result``, with
nothing else in between, folded into one record.

A batch is ``running`` while an announced result still waits for its replacement, ``done``
once every one has it, ``failed`` when something else follows first (the replacement append
failed), and ``interrupted`` when only crash-repair closers and then ``session/resume``
follow.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from agent.log.events import Event, SessionResume, SurfaceReplace, ToolResult
from compact.contract.events import CompactPrune
from compact.reports import records
from compact.reports.records import MISSING_REPLACEMENT, PricedEvent, TimelineRecord


@dataclass
class _Batch:
    """The prune batch being folded: its record index and the seqs awaiting a replacement."""

    index: int
    pending: set[int] = field(default_factory=set)
    logged: set[int] = field(default_factory=set)
    """Pending seqs whose replacement price the ``compact/prune`` recorded."""


class PruneBatches:
    """The prune half of a :class:`~compact.reports.timeline.TimelineFold`: it appends and
    edits batch records in ``timeline`` (the fold's list, which also holds the compactions
    and undos, in log order). The fold calls :meth:`before` with every event, then
    :meth:`feed` with the prune events and tool results."""

    def __init__(self, timeline: list[TimelineRecord], price: PricedEvent | None) -> None:
        self._records = timeline
        self._price = price
        self._batch: _Batch | None = None
        self._by_start: dict[int, int] = {}
        """Prune batches: the seq of their first ``compact/prune`` -> record index."""
        self._suspect: int | None = None
        """A batch just settled as failed (a replacement missing) that a crash repair could
        still explain: if only repair closers follow and then ``session/resume``, the process
        died mid-batch and the verdict becomes ``interrupted``."""

    def record(self, start_seq: int) -> TimelineRecord | None:
        """The record of the prune batch whose first ``compact/prune`` is ``start_seq``."""
        index = self._by_start.get(start_seq)
        return None if index is None else self._records[index]

    def open(self, start_seq: int) -> bool:
        """Whether the prune batch starting at ``start_seq`` may still grow."""
        batch = self._batch
        return batch is not None and self._records[batch.index].start_seq == start_seq

    def before(self, event: Event) -> bool:
        """Settle what ``event`` (the next in log order) ends: the open batch when it does
        not continue it, a suspect failure when it is a resume or not a repair closer. True
        when records changed."""
        changed = False
        if self._batch is not None and not self._continues_batch(event):
            changed = self._close_batch(interrupted=isinstance(event, SessionResume))
        if self._suspect is not None:
            if isinstance(event, SessionResume):
                old = self._records[self._suspect]
                interrupted = dataclasses.replace(old, status="interrupted", error=None)
                changed = records.put(self._records, self._suspect, interrupted) or changed
                self._suspect = None
            elif not records.repair_closer(event):
                self._suspect = None
        return changed

    def feed(self, event: CompactPrune | ToolResult) -> bool:
        """Fold a ``compact/prune`` or a tool result (a replacement, when it is one). True
        when records changed."""
        if isinstance(event, CompactPrune):
            return self._prune(event)
        return self._prune_replacement(event)

    def close(self) -> bool:
        """The log is finished: a batch still open was interrupted."""
        return self._batch is not None and self._close_batch(interrupted=True)

    def _set(self, index: int, record: TimelineRecord) -> bool:
        return records.put(self._records, index, record)

    def _continues_batch(self, event: Event) -> bool:
        return isinstance(event, CompactPrune) or self._is_replacement(event)

    def _is_replacement(self, event: Event) -> bool:
        return (
            self._batch is not None
            and isinstance(event, ToolResult)
            and isinstance(event.surface_op, SurfaceReplace)
            and event.surface_op.start in self._batch.pending
        )

    def _prune(self, event: CompactPrune) -> bool:
        data = event.data
        shadowed = list(data.shadowed_seqs) or [data.shadowed_range.start]
        if self._batch is None:
            index = len(self._records)
            self._records.append(
                TimelineRecord(
                    number=index + 1,
                    kind="prune",
                    compaction_id=None,
                    trigger=data.trigger,
                    status="running",
                    started_at=event.time,
                    ended_at=event.time,
                    items_before=0,
                    items_after=0,
                    tokens_before=0,
                    tokens_after=0 if self._price is not None else None,
                    start_seq=event.seq,
                )
            )
            self._batch = _Batch(index)
            self._by_start[event.seq] = index
        batch = self._batch
        batch.pending.update(shadowed)
        old = self._records[batch.index]
        old.shadowed_seqs.extend(shadowed)  # one list for the batch's records: a copy each is n²
        tokens_after = old.tokens_after
        if data.replacement_tokens is not None:
            batch.logged.update(shadowed)
            tokens_after = (tokens_after or 0) + data.replacement_tokens
        self._set(
            batch.index,
            dataclasses.replace(
                old,
                status="running",
                ended_at=event.time,
                items_before=old.items_before + len(shadowed),
                tokens_before=old.tokens_before + data.shadowed_tokens,
                tokens_after=tokens_after,
            ),
        )
        return True

    def _prune_replacement(self, event: ToolResult) -> bool:
        if self._batch is None or not self._is_replacement(event):
            return False
        assert isinstance(event.surface_op, SurfaceReplace)
        batch = self._batch
        batch.pending.discard(event.surface_op.start)
        old = self._records[batch.index]
        tokens_after = old.tokens_after
        logged = event.surface_op.start in batch.logged
        if self._price is not None and tokens_after is not None and not logged:
            tokens_after += self._price(event)
        return self._set(
            batch.index,
            dataclasses.replace(
                old,
                # Done once every announced result has its replacement; a batch that closes
                # with one missing is settled by _close_batch.
                status="running" if batch.pending else "done",
                ended_at=event.time,
                items_after=old.items_after + 1,
                tokens_after=tokens_after,
                replacement_seq=event.seq,
            ),
        )

    def _close_batch(self, *, interrupted: bool) -> bool:
        batch = self._batch
        assert batch is not None
        self._batch = None
        if not batch.pending:
            return False
        old = self._records[batch.index]
        if interrupted:
            return self._set(batch.index, dataclasses.replace(old, status="interrupted"))
        self._suspect = batch.index
        return self._set(
            batch.index, dataclasses.replace(old, status="failed", error=MISSING_REPLACEMENT)
        )
