"""The one fold of the log into what a person is shown (:mod:`tui.view.items`).

The transcript, the plain REPL, the headless printer and the Markdown export all read
"what happened" here, so a tool call's command, its exit code, a checkpoint's record and how
a turn ended are derived once. The fold reads the log, never the surface: nothing a person
has read disappears because it was compacted. A replacement ``tool/result`` (the pruner's
placeholder) is not a new run: it marks the run it shortens ``pruned``; a checkpoint's
replacement ``user/message`` is a :class:`Checkpoint`, never a prompt.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from agent.log.events import (
    AssistantMessage,
    CommandDone,
    ContextMessage,
    Event,
    LlmRetry,
    SessionFork,
    SessionResume,
    SessionStart,
    SteeringMessage,
    SurfaceReplace,
    ToolCall,
    ToolResult,
    ToolStart,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from compact.contract.events import CompactPrune
from compact.reports.records import PricedEvent, TimelineRecord
from compact.reports.timeline import TimelineFold
from tui.view.items import (
    Answer,
    Checkpoint,
    CommandOutcome,
    ContextSent,
    Prompt,
    PruneBatch,
    RetryPlanned,
    SessionForked,
    SessionOpened,
    SessionResumed,
    ToolRun,
    TurnClosed,
    TurnOpened,
    ViewItem,
)


@dataclass(frozen=True)
class Change:
    """One item an event added (``new``) or replaced, at ``index`` in :attr:`LogView.items`."""

    index: int
    item: ViewItem
    new: bool


@dataclass(frozen=True)
class Fed:
    """What one event did to the view: its item changes, and whether the timeline moved."""

    changes: list[Change]
    timeline: bool


class LogView:
    """Incremental: :meth:`feed` each event in log order and read :attr:`items`; folding a
    whole log gives the same items as feeding it event by event. Cost per event is O(1)
    apart from the records still running (a handful).

    ``price`` is handed to the :class:`~compact.reports.timeline.TimelineFold` it keeps
    (:attr:`timeline`), which front ends also read for the compaction panel and news.
    """

    def __init__(self, price: PricedEvent | None = None) -> None:
        self.items: list[ViewItem] = []
        self.timeline = TimelineFold(price)
        self._runs: dict[str, int] = {}
        """call id -> index of its :class:`ToolRun`."""
        self._calls: dict[str, ToolCall] = {}
        """Calls the model asked for that have no run yet."""
        self._unsettled: dict[str | int, int] = {}
        """Checkpoints (by compaction id) and prune batches (by first seq) whose record may
        still change -> item index."""

    def feed_all(self, events: Iterable[Event]) -> None:
        for event in events:
            self.feed(event)

    def feed(self, event: Event) -> Fed:
        """Fold one event (the next in log order)."""
        moved = self.timeline.feed(event)
        changes: list[Change] = []
        item = self._item(event)
        if isinstance(item, Change):
            self._put(changes, item.index, item.item)
        elif item is not None:
            self._put(changes, len(self.items), item)
        if moved:
            self._settle(changes)
        return Fed(changes, moved)

    def unstarted_calls(self) -> list[ToolCall]:
        """Calls the model asked for that never started and never got a result."""
        return list(self._calls.values())

    def run(self, call_id: str) -> ToolRun | None:
        index = self._runs.get(call_id)
        item = None if index is None else self.items[index]
        return item if isinstance(item, ToolRun) else None

    # --- one event ------------------------------------------------------------------------

    def _item(self, event: Event) -> ViewItem | Change | None:
        """The new item ``event`` makes, or the :class:`Change` it makes to an older one."""
        if isinstance(event, SessionStart):
            start = event.data
            return SessionOpened(event.seq, start.id, start.cwd, start.created_at)
        if isinstance(event, SessionFork):
            return SessionForked(event.seq, event.data.parent, event.data.at_seq)
        if isinstance(event, SessionResume):
            if self.items and isinstance(self.items[-1], SessionForked):
                return None  # opened right after it was forked: the fork says it all
            return SessionResumed(event.seq)
        if isinstance(event, TurnStart):
            return TurnOpened(event.seq, event.data.turn)
        if isinstance(event, UserMessage):
            if event.data.source == "compact":
                return self._checkpoint(event)
            return Prompt(event.seq, event.data.content)
        if isinstance(event, SteeringMessage):
            return Prompt(event.seq, event.data.content, steering=True)
        if isinstance(event, AssistantMessage):
            reply = event.data
            for call in reply.tool_calls:
                self._calls[call.id] = call
            return Answer(event.seq, reply.text, reply.reasoning, reply.finish_reason == "length")
        if isinstance(event, ToolStart):
            self._calls.pop(event.data.call_id, None)
            run = event.data
            self._runs[run.call_id] = len(self.items)
            return ToolRun(event.seq, run.call_id, run.name, run.arguments, event.time)
        if isinstance(event, ToolResult):
            return self._result(event)
        if isinstance(event, CompactPrune):
            record = self.timeline.batch(event.seq)
            if record is None:
                return None  # a prune that continues a batch already shown
            self._unsettled[event.seq] = len(self.items)
            return PruneBatch(event.seq, record)
        if isinstance(event, ContextMessage):
            return ContextSent(event.seq, event.data.content)
        if isinstance(event, LlmRetry):
            retry = event.data
            return RetryPlanned(event.seq, retry.error, retry.attempt, retry.delay_s)
        if isinstance(event, CommandDone):
            return CommandOutcome(event.seq, event.data.text, event.data.ok)
        if isinstance(event, TurnEnd):
            return TurnClosed(event.seq, event.data.turn, event.data.reason, event.data.error)
        return None

    def _checkpoint(self, event: UserMessage) -> Checkpoint:
        cid = event.data.compaction_id or f"seq-{event.seq}"
        self._unsettled[cid] = len(self.items)
        return Checkpoint(event.seq, cid, event.data.content, self.timeline.record(cid))

    def _result(self, event: ToolResult) -> ToolRun | Change | None:
        data = event.data
        index = self._runs.get(data.call_id)
        if isinstance(event.surface_op, SurfaceReplace):
            if index is None:
                return None
            run = self.items[index]
            assert isinstance(run, ToolRun)
            return Change(index, dataclasses.replace(run, pruned=True), new=False)
        if index is not None:
            run = self.items[index]
            assert isinstance(run, ToolRun)
            return Change(index, dataclasses.replace(run, result=data), new=False)
        # A result without tool/start: a call refused before it ran, or one crash repair
        # answered. Its arguments are the ones the model sent, when the log has them.
        call = self._calls.pop(data.call_id, None)
        self._runs[data.call_id] = len(self.items)
        arguments = call.arguments if call is not None else ""
        return ToolRun(event.seq, data.call_id, data.name, arguments, event.time, result=data)

    # --- bookkeeping ----------------------------------------------------------------------

    def _put(self, changes: list[Change], index: int, item: ViewItem) -> None:
        new = index == len(self.items)
        if new:
            self.items.append(item)
        else:
            self.items[index] = item
        changes.append(Change(index, item, new))

    def _settle(self, changes: list[Change]) -> None:
        """Give checkpoints and prune batches their latest timeline record."""
        for key, index in list(self._unsettled.items()):
            item = self.items[index]
            record = self._record(key)
            if record is None:
                continue
            if isinstance(item, Checkpoint | PruneBatch) and item.record != record:
                self._put(changes, index, dataclasses.replace(item, record=record))
            # A batch grows while prunes follow; a failed one may still turn out interrupted.
            growing = isinstance(key, int) and self.timeline.batch_open(key)
            if record.status in ("done", "interrupted") and not growing:
                del self._unsettled[key]

    def _record(self, key: str | int) -> TimelineRecord | None:
        return self.timeline.batch(key) if isinstance(key, int) else self.timeline.record(key)
