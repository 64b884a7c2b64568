"""The compaction timeline: a pure fold of the session log into one record per compaction,
per prune batch or per undo. Every front end (the TUI panel, the headless report, the
Markdown export) and the tests read this one projection.

* a **compaction** is the ``compact/start … compact/end`` bracket with the same
  ``compaction_id``: each ``compact/progress`` one summarizer call (chunks done, usage, what
  went wrong), ``compact/summary`` the shadowed items and tokens, the replacement
  ``user/message`` the checkpoint seq, ``compact/end`` the outcome;
* a **prune batch** is a run of consecutive ``compact/prune`` events, each followed by its
  replacement ``tool/result``, with nothing else in between
  (:mod:`compact.reports.prune_batches` folds them);
* an **edit** is one ``compact/edit``: the person corrected a checkpoint's summary;
* an **undo** is one ``compact/undo`` (the compaction or edit it reversed gets ``undone_by``).

Status of a compaction: ``done`` (``compact/end`` without error, after a summary),
``failed`` (``compact/end`` with an error; ``discarded``: an unused summary written ahead),
``interrupted`` (no end, and a ``session/resume`` after the start: the process died
mid-compaction, an inert crash orphan) and ``running`` (no end and no resume yet). A live
fold learns a bracket is an orphan only from a later ``session/resume``; a viewer that knows
no process writes the log any more calls :meth:`TimelineFold.close` (``timeline(closed=True)``).

Events without a ``compaction_id`` (legacy logs) are ignored, as
are brackets that reference an id that never started: the fold never raises on what it reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from agent.log.events import Event, SessionResume, SurfaceReplace, ToolResult, UserMessage
from compact.contract.events import (
    CompactEdit,
    CompactEnd,
    CompactProgress,
    CompactPrune,
    CompactStart,
    CompactSummary,
    CompactUndo,
)
from compact.reports import records
from compact.reports.prune_batches import PruneBatches
from compact.reports.records import MISSING_SUMMARY, PricedEvent, TimelineRecord


class TimelineFold:
    """Incremental timeline: :meth:`feed` each event in log order (e.g. from a session
    observer) and read :attr:`records`. Folding every event of a log gives exactly what
    :func:`timeline` returns for it. Cost per event is O(1) apart from the records it edits.

    ``price`` optionally prices a prune replacement ``tool/result`` so prune records get a
    ``tokens_after``; it must be deterministic for the incremental and full folds to agree.
    """

    def __init__(self, price: PricedEvent | None = None) -> None:
        self._records: list[TimelineRecord] = []
        self._by_id: dict[str, int] = {}
        self._edits: dict[int, int] = {}
        """``compact/edit`` seq -> record index (an undo names the edit by its seq)."""
        self._open: dict[str, int] = {}
        """Compactions without ``compact/end`` yet: id -> record index."""
        self._batches = PruneBatches(self._records, price)

    @property
    def records(self) -> list[TimelineRecord]:
        """The records so far, oldest first (a new list; records are immutable)."""
        return list(self._records)

    def record(self, compaction_id: str) -> TimelineRecord | None:
        """The record of one compaction, or None."""
        index = self._by_id.get(compaction_id)
        return None if index is None else self._records[index]

    def batch(self, start_seq: int) -> TimelineRecord | None:
        """The record of the prune batch whose first ``compact/prune`` is ``start_seq``."""
        return self._batches.record(start_seq)

    def batch_open(self, start_seq: int) -> bool:
        """Whether the prune batch starting at ``start_seq`` may still grow."""
        return self._batches.open(start_seq)

    def feed_all(self, events: Iterable[Event]) -> bool:
        """Feed several events; True when any of them changed the records."""
        return any([self.feed(event) for event in events])  # a list: every event is fed

    def feed(self, event: Event) -> bool:
        """Fold one event (the next in log order). True when the records changed."""
        changed = self._batches.before(event)
        if isinstance(event, (CompactPrune, ToolResult)):
            return self._batches.feed(event) or changed
        if isinstance(event, CompactStart):
            return self._start(event) or changed
        if isinstance(event, CompactProgress):
            return self._progress(event) or changed
        if isinstance(event, CompactSummary):
            return self._summary(event) or changed
        if isinstance(event, UserMessage):
            return self._checkpoint(event) or changed
        if isinstance(event, CompactEnd):
            return self._end(event) or changed
        if isinstance(event, SessionResume):
            return self._orphan_all() or changed
        if isinstance(event, CompactUndo):
            return self._undo(event)
        if isinstance(event, CompactEdit):
            return self._edit(event)
        return changed

    def close(self) -> bool:
        """Declare the log finished (no process writes it any more): every bracket still
        open is a crash orphan and becomes ``interrupted``. True when records changed."""
        changed = self._batches.close()
        return self._orphan_all() or changed

    def _set(self, index: int, record: TimelineRecord) -> bool:
        return records.put(self._records, index, record)

    def _start(self, event: CompactStart) -> bool:
        data = event.data
        cid = data.compaction_id
        if not cid or cid in self._by_id:
            return False  # no id (legacy) or a repeated start: not a bracket we can trust
        index = len(self._records)
        self._records.append(
            TimelineRecord(
                number=index + 1,
                kind="compaction",
                compaction_id=cid,
                trigger=data.trigger,
                status="running",
                started_at=event.time,
                ended_at=None,
                items_before=data.items or 0,
                items_after=0,
                tokens_before=data.tokens or 0,
                tokens_after=None,
                focus=data.focus,
                turn=data.turn,
                start_seq=event.seq,
                source_command_id=data.source_command_id,
                why=records.Why.of(data),
            )
        )
        self._by_id[cid] = index
        self._open[cid] = index
        return True

    def _progress(self, event: CompactProgress) -> bool:
        data = event.data
        index = self._open.get(data.compaction_id or "")
        if index is None:
            return False
        old = self._records[index]
        note = None if data.status == "ok" else data.reason
        if data.status == "cut":
            # Short: it shares a status line with the trigger and the elapsed time.
            cap = f" {data.max_tokens} tokens" if data.max_tokens else " the output cap"
            note = f"cut off at{cap}; asking for a terser one"
        return self._set(
            index,
            dataclasses.replace(
                old,
                calls=old.calls + 1,
                chunks=data.chunks,
                chunks_done=data.chunk if data.status == "ok" else old.chunks_done,
                note=note,
                usage=data.usage.plus(old.usage) if data.usage else old.usage,
                model=data.model or old.model,
            ),
        )

    def _summary(self, event: CompactSummary) -> bool:
        data = event.data
        index = self._open.get(data.compaction_id or "")
        if index is None:
            return False
        old = self._records[index]
        return self._set(
            index,
            dataclasses.replace(
                old,
                summary=data.summary,
                items_before=len(data.shadowed_seqs),
                tokens_before=data.shadowed_tokens,
                tokens_after=data.summary_tokens,
                model=data.model,
                usage=data.usage or old.usage,
                shadowed_seqs=list(data.shadowed_seqs),
                fallback_reason=data.fallback_reason,
                note=None,
            ),
        )

    def _checkpoint(self, event: UserMessage) -> bool:
        if event.data.source != "compact" or not isinstance(event.surface_op, SurfaceReplace):
            return False
        index = self._open.get(event.data.compaction_id or "")
        if index is None:
            # A checkpoint without an id: the bracket it belongs to is the one it cites.
            cited = set(event.source_event_seqs or ())
            for candidate in self._open.values():
                if self._records[candidate].start_seq in cited:
                    index = candidate
                    break
        if index is None:
            return False
        old = self._records[index]
        return self._set(index, dataclasses.replace(old, replacement_seq=event.seq, items_after=1))

    def _end(self, event: CompactEnd) -> bool:
        data = event.data
        index = self._open.pop(data.compaction_id or "", None)
        if index is None:
            return False
        old = self._records[index]
        error = data.error
        if error is None and old.summary is None:
            error = MISSING_SUMMARY
        return self._set(
            index,
            dataclasses.replace(
                old,
                status="done" if error is None else "discarded" if data.discarded else "failed",
                ended_at=event.time,
                end_seq=event.seq,
                error=error,
                turn=old.turn if old.turn is not None else data.turn,
                reread_tokens=data.reread_tokens,
            ),
        )

    def _edit(self, event: CompactEdit) -> bool:
        index = len(self._records)
        edited = self._by_id.get(event.data.compaction_id)
        self._edits[event.seq] = index
        self._records.append(
            records.edit_record(index + 1, None if edited is None else edited + 1, event)
        )
        return True

    def _undo(self, event: CompactUndo) -> bool:
        number = len(self._records) + 1
        undone = self._edits.get(event.data.replacement_seq)
        if undone is None:
            undone = self._by_id.get(event.data.compaction_id)
        if undone is not None:
            old = self._records[undone]
            self._records[undone] = dataclasses.replace(old, undone_by=number)
        undoes = None if undone is None else undone + 1
        self._records.append(records.undo_record(number, undoes, event))
        return True

    def _orphan_all(self) -> bool:
        changed = False
        for index in self._open.values():
            changed = (
                self._set(index, dataclasses.replace(self._records[index], status="interrupted"))
                or changed
            )
        self._open.clear()
        return changed


def timeline(
    events: Iterable[Event], *, closed: bool = False, price: PricedEvent | None = None
) -> list[TimelineRecord]:
    """The timeline of a whole log: :class:`TimelineFold` fed every event.

    ``closed``: no process writes this log any more (a viewer found it unlocked), so a
    bracket still open at its end is a crash orphan (``interrupted``), not ``running``.
    """
    fold = TimelineFold(price)
    fold.feed_all(events)
    if closed:
        fold.close()
    return fold.records
