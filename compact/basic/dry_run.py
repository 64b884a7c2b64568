"""The basic backend's previews, nothing sent or written:

- the dry run: the range ``/compact`` would replace now, chosen exactly as it chooses it
  (:func:`compact.basic.selection.select_range` with no retained tail beyond the newest
  indivisible unit), priced with the meter;
- the forecast: the automatic compaction the mark would run, as if it ran now (the range
  with the retained tail it keeps, its older outputs masked after it when the summary
  reads them).

Both say what the compaction would cost (:class:`compact.contract.service.CostFigures`): what
its summary call reads (:meth:`compact.basic.condense.Condenser.reads`) and writes (about
the checkpoint, :meth:`compact.basic.schedule.Schedule.checkpoint_tokens`), and what the
next request reads anew after it, priced as the schedule prices it
(:func:`compact.basic.schedule.rewrite_reread`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from agent.envelope import Envelope
from agent.log.events import ToolResult
from agent.log.session import Session
from agent.meter import TokenMeter
from compact.basic.condense import Condenser, Header
from compact.basic.schedule import Schedule, header_cached, rewrite_reread
from compact.basic.selection import MIN_MANUAL_TOKENS, new_tokens, newest_step, select_range
from compact.contract.policy import CompactionSettings
from compact.contract.service import CostFigures, DryRun
from compact.parts.originals import MASK_PREFIX

MASKED_TOKENS = 40
"""About what the placeholder of a masked output costs (command, exit code, lines, file)."""


@dataclass(frozen=True)
class Preview:
    """One session's previews (see the module docstring). ``folds``: an automatic
    compaction masks the retained tail's older outputs its summary read."""

    session: Session
    meter: TokenMeter
    settings: CompactionSettings
    schedule: Schedule
    condenser: Condenser
    folds: bool

    def dry_run(self, envelope: Envelope) -> DryRun:
        """What a manual compaction would replace and keep now; nothing is sent or written."""
        session, price = self.session, self.meter.price
        total = self.meter.measure(envelope).total
        span = select_range(session, price, 0) or []
        if span and new_tokens(session, span, price) < MIN_MANUAL_TOKENS:
            span = []
        chosen = set(span)
        kept = [seq for seq in session.surface if seq not in chosen]
        kinds = Counter(session.events[seq].type for seq in span)
        return DryRun(
            summarized=span,
            summarized_tokens=sum(price(s) for s in span),
            kinds=dict(kinds),
            kept=kept,
            kept_tokens=sum(price(s) for s in kept),
            total=total,
            window=envelope.window,
            cost=self.figures(envelope, span, masks=False) if span else None,
        )

    def forecast(self, envelope: Envelope) -> CostFigures | None:
        """The automatic compaction at the mark, as if it ran now (None: auto off, the
        window unknown, or too little to compact)."""
        window = envelope.window
        if window is None or not self.settings.auto:
            return None
        threshold = self.settings.threshold(window)
        mark = self.schedule.mark(window)
        # As the service keeps it: in proportion to the mark when that comes first.
        retain = self.settings.retain(window) * min(mark, threshold) // threshold
        span = select_range(self.session, self.meter.price, retain)
        if span is None or new_tokens(self.session, span, self.meter.price) < MIN_MANUAL_TOKENS:
            return None
        return self.figures(envelope, span, masks=self.folds)

    def figures(self, envelope: Envelope, span: list[int], *, masks: bool) -> CostFigures:
        """What compacting ``span`` now would cost and leave; ``masks``: the retained tail's
        older outputs are masked after it, when the summary reads them."""
        measured = self.meter.measure(envelope)
        header = Header.of(envelope, measured.header, self.settings.summarizer_model)
        price = self.meter.price
        shadowed = sum(price(s) for s in span)
        prefix, new, whole = self.condenser.reads(header, span, shadowed)
        masks = masks and whole  # only what the summary read leaves the view
        checkpoint = self.schedule.checkpoint_tokens(shadowed, envelope.window)
        nodes = self.session.surface
        chosen = set(span)
        newest = newest_step(self.session)
        kept = fresh = 0
        for position, seq in enumerate(nodes):
            if seq in chosen:
                continue
            tokens = price(seq)
            if position >= newest:
                fresh += tokens
            elif masks and self._maskable(seq):
                tokens = min(tokens, MASKED_TOKENS)
            kept += tokens
        after = measured.header + checkpoint + kept
        window = envelope.window
        return CostFigures(
            summarizer=header.model,
            model=envelope.model,
            prefix=prefix,
            new=new,
            output=checkpoint,
            reread=checkpoint + kept,
            reread_extra=rewrite_reread(after=after, fresh=fresh, header=measured.header),
            before=measured.total,
            after=after,
            mark=self.schedule.mark(window) if window is not None and self.settings.auto else None,
            growth=self.schedule.steps.growth(),
            header_reread=not header_cached(measured.header),
        )

    def _maskable(self, seq: int) -> bool:
        event = self.session.events[seq]
        return isinstance(event, ToolResult) and not event.data.content.startswith(MASK_PREFIX)
