"""The growth of a step as the session's log shows it: what a process that has just begun
knows before it has measured a step itself.

Each ``-p`` turn of a session is a process of its own, and so is each ``--continue``: the
growth measured at checkpoints (:class:`compact.basic.schedule.StepSizes`) starts empty in
each, so the summary written ahead (:mod:`compact.basic.ahead`) could not start at a turn's
first checkpoint. The log holds what the earlier steps added: a step that called tools grew
the context by its reply and the results of its calls, priced as they were written (a mask
applied since does not count: the next step's results will not be masked either).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from agent.log.events import AssistantMessage, Event, ToolResult, UserMessage
from agent.log.messages import event_message
from agent.log.session import Session
from agent.tokens import Estimator

STEPS = 8
"""The newest steps the growth is the median of (as
:class:`compact.basic.schedule.StepSizes` keeps)."""
SCAN = 4_000
"""The newest events read for them: older steps say little of the coming ones, and a long
log without tool calls is not walked whole at every checkpoint."""


def logged_growth(events: Sequence[Event], price: Callable[[Event], int]) -> int | None:
    """The median growth of the newest :data:`STEPS` steps that called tools (a reply with
    calls and the results that answered them) among the newest :data:`SCAN` events, each
    event priced by ``price``; None with fewer than two such steps there."""
    sizes: list[int] = []
    results = 0
    for event in reversed(events[-SCAN:]):
        if isinstance(event, ToolResult):
            results += price(event)
        elif isinstance(event, AssistantMessage):
            if event.data.tool_calls and results:
                sizes.append(price(event) + results)
                if len(sizes) == STEPS:
                    break
            results = 0
        elif isinstance(event, UserMessage):
            results = 0
    return int(statistics.median(sizes)) if len(sizes) >= 2 else None


class LoggedGrowth:
    """:func:`logged_growth` of one session, priced with the tokenizer once it is loaded (and
    then kept), before that with a byte bound (at least the growth, so a reading that uses it
    is measured early enough; not kept)."""

    def __init__(self, session: Session, estimator: Estimator) -> None:
        self.session = session
        self.estimator = estimator
        self._kept: tuple[int | None] | None = None

    def __call__(self) -> int | None:
        if self._kept is not None:
            return self._kept[0]
        estimator = self.estimator
        ready = estimator.ready

        def price(event: Event) -> int:
            message = event_message(event)
            if message is None:
                return 0
            return estimator.message_tokens(message) if ready else estimator.message_bound(message)

        growth = logged_growth(self.session.events, price)
        if ready:
            self._kept = (growth,)
        return growth
