"""The token meter: how full the next request's context is, kept up to date incrementally.

:class:`TokenMeter` observes a :class:`~agent.log.session.Session` and folds each appended event
once. Surface nodes are immutable, so each is priced once with the :class:`Estimator` when it
appears; a running surface total and a per-category breakdown are adjusted by signed deltas
(an append adds its price; a replace subtracts the prices of the nodes it shadowed and adds
its own). :meth:`TokenMeter.measure` is therefore O(1) in the length of the session.

Provider usage, when a reply reports it, is the best figure there is: the meter *anchors* on
it and adds only the growth of the surface since. An anchor is valid only for the request
header (provider, model, system prompt, tools) it was taken under; any change falls back to a
full estimate. A provider figure below our own estimate of the same request is not trusted
(a server that reports partial usage would make compaction fire too late): the estimate is
used instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.envelope import Envelope
from agent.llm.windows import WindowBook
from agent.log.events import (
    AssistantMessage,
    ContextMessage,
    Event,
    RequestHeader,
    RequestHeaderData,
    SteeringMessage,
    SurfaceReplace,
    SurfaceRestore,
    SurfaceRevise,
    ToolResult,
    UserMessage,
)
from agent.log.messages import event_message
from agent.log.session import Session
from agent.measurement import Measurement
from agent.tokens import Estimator, tools_json
from agent.usage_totals import UsageFold, UsageTotals

__all__ = ["TokenMeter"]

_SURFACE_CATEGORIES = ("checkpoints", "user", "assistant", "tool_results")

# The parts of a request header that change what the model is sent. Sampling params are left
# out on purpose: a temperature change does not change the prompt's size.
HeaderKey = tuple[str, str, str, str]


SETTLE_SLICE = 1_000
"""Events folded between two yields to the event loop in :meth:`TokenMeter.settle`."""

WARM_AT_MESSAGES = 100
"""A surface this long is a session long enough for the tokenizer to pay for its load."""


@dataclass(frozen=True)
class _Anchor:
    total: int
    surface: int
    key: HeaderKey | None
    measured: bool


def _header_key(provider: str, model: str, system: str, tools: list[dict[str, Any]]) -> HeaderKey:
    return (provider, model, system, tools_json(tools))


def _category(event: Event) -> str | None:
    if isinstance(event, UserMessage):
        return "checkpoints" if event.data.source == "compact" else "user"
    if isinstance(event, ContextMessage | SteeringMessage):
        return "user"
    if isinstance(event, AssistantMessage):
        return "assistant"
    if isinstance(event, ToolResult):
        return "tool_results"
    return None


class TokenMeter:
    """Keeps a session's context size current; see the module docstring.

    Args:
        session: the session to observe. Events already in its log are folded once, at
            construction; later appends are folded as they happen.
        estimator: prices text. It is called once per surface node and once per distinct
            system prompt / tool set, never per :meth:`measure`.
        context_window: the window owner (:class:`~agent.llm.windows.WindowBook`) shared with
            the loop, or a fixed figure (None: unknown).
    """

    def __init__(
        self,
        session: Session,
        estimator: Estimator,
        context_window: int | WindowBook | None = None,
    ) -> None:
        self.session = session
        self.estimator = estimator
        self.windows = (
            context_window
            if isinstance(context_window, WindowBook)
            else WindowBook.fixed(context_window)
        )
        self._prices: dict[int, int] = {}
        self._unrevised: dict[int, int] = {}
        """Revising event seq -> the price its node had before it (what an undo brings back)."""
        self._categories: dict[int, str] = {}
        self._surface_tokens = 0
        self._by_category = dict.fromkeys(_SURFACE_CATEGORIES, 0)
        self._header: RequestHeaderData | None = None
        self._header_key: HeaderKey | None = None
        self._header_parts = (0, 0)  # (system, tools) tokens of the latest logged header
        self._system_prices: dict[str, int] = {}
        self._tools_prices: dict[str, int] = {}
        self._anchor: _Anchor | None = None
        self._usage = UsageFold()
        self._consumed = 0
        if estimator.ready:
            self._catch_up()
        self._unsubscribe: Callable[[], None] | None = session.subscribe(self._on_event)

    def close(self) -> None:
        """Stop observing the session. Idempotent."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    # --- folding ------------------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        # Observers see appends in order; catching up from the log also covers an event we
        # somehow missed and ignores one we already folded. Until the tokenizer has loaded,
        # folding waits for the first reading (the log is the queue): see :meth:`bound`.
        if not self.estimator.ready:
            return
        if event.seq == self._consumed:
            self._fold(event)
        else:
            self._catch_up()

    def _catch_up(self) -> None:
        events = self.session.events
        while self._consumed < len(events):
            self._fold(events[self._consumed])

    async def settle(self) -> None:
        """Fold every event not folded yet, yielding to the event loop every
        :data:`SETTLE_SLICE` events. The first reading of a long resumed session prices every
        node of its surface (seconds for 100,000 events): awaited before it, this keeps a
        cancel or a signal handler from waiting for that."""
        events = self.session.events
        while self._consumed < len(events):
            stop = min(len(events), self._consumed + SETTLE_SLICE)
            while self._consumed < stop:
                self._fold(events[self._consumed])
            await asyncio.sleep(0)

    def _fold(self, event: Event) -> None:
        self._consumed = event.seq + 1
        self._usage.feed(event)
        if isinstance(event, RequestHeader):
            data = event.data
            self._header = data
            self._header_key = _header_key(data.provider, data.model, data.system, data.tools)
            self._header_parts = self._header_price(self._header_key, data.tools)
            return
        if isinstance(event.surface_op, SurfaceRevise):
            self._revise(event.seq, event.surface_op)
            return
        if isinstance(event.surface_op, SurfaceRestore):
            self._restore(event.surface_op.replacement)
            return
        category = _category(event)
        if category is None:
            return
        price = self._price_event(event)
        self._prices[event.seq] = price
        self._categories[event.seq] = category
        delta = price
        if isinstance(event.surface_op, SurfaceReplace):
            for old in self.session.shadowed(event.seq):
                old_price = self._prices.get(old, 0)
                delta -= old_price
                old_category = self._categories.get(old)
                if old_category is not None:
                    self._by_category[old_category] -= old_price
        self._by_category[category] += price
        self._surface_tokens += delta
        if isinstance(event, AssistantMessage):
            self._on_reply(event)

    def _revise(self, seq: int, op: SurfaceRevise) -> None:
        """A node given new text: its price becomes the new text's (priced from the event,
        not the surface, which a late fold may find revised again)."""
        message = event_message(self.session.events[op.target])
        new = (
            0
            if message is None
            else self.estimator.message_tokens({**message, "content": op.content})
        )
        self._reprice(op.target, new, keep=seq)

    def _reprice(self, node: int, price: int, keep: int | None = None) -> None:
        old = self._prices.get(node, 0)
        if keep is not None:
            self._unrevised[keep] = old
        self._prices[node] = price
        self._surface_tokens += price - old
        if (category := self._categories.get(node)) is not None:
            self._by_category[category] += price - old

    def _restore(self, replacement: int) -> None:
        """An undone compaction: the replacement leaves, what it shadowed comes back. An
        undone revision: its node's price before it comes back."""
        if (revision := self.session.revision(replacement)) is not None:
            self._reprice(revision[0], self._unrevised.get(replacement, 0))
            return
        for seq, sign in [(replacement, -1)] + [(s, 1) for s in self.session.shadowed(replacement)]:
            price = self._prices.get(seq, 0)
            self._surface_tokens += sign * price
            if (category := self._categories.get(seq)) is not None:
                self._by_category[category] += sign * price

    def _price_event(self, event: Event) -> int:
        message = event_message(event)
        return 0 if message is None else self.estimator.message_tokens(message)

    def _on_reply(self, event: AssistantMessage) -> None:
        usage = event.data.usage
        if usage is None:
            # No usage (e.g. llama.cpp when streaming): keep the previous anchor, which stays
            # correct by adding surface growth; without one, measure() estimates in full.
            return
        # The request held the surface as it was before this reply; the reply joined it right
        # after. So "surface now" pairs with prompt + completion.
        provider = usage.prompt_tokens + usage.completion_tokens
        heuristic = sum(self._header_parts) + self._surface_tokens
        measured = provider >= heuristic
        self._anchor = _Anchor(
            total=provider if measured else heuristic,
            surface=self._surface_tokens,
            key=self._header_key,
            measured=measured,
        )

    # --- header pricing -----------------------------------------------------------------------

    def _header_price(self, key: HeaderKey, tools: list[dict[str, Any]]) -> tuple[int, int]:
        """(system, tools) tokens of a header; each part is priced once per distinct value."""
        _, _, system, schema = key
        sys_tokens = self._system_prices.get(system)
        if sys_tokens is None:
            sys_tokens = self._system_prices[system] = self.estimator.system_tokens(system)
        tool_tokens = self._tools_prices.get(schema)
        if tool_tokens is None:
            tool_tokens = self._tools_prices[schema] = self.estimator.tools_tokens(tools)
        return sys_tokens, tool_tokens

    # --- reading ------------------------------------------------------------------------------

    @property
    def header(self) -> RequestHeaderData | None:
        """The latest logged request header, if any."""
        self._catch_up()
        return self._header

    @property
    def session_usage(self) -> UsageTotals:
        """Provider usage summed over every model call in the log, summarizer calls
        included (:mod:`agent.usage_totals`): what the session billed."""
        self._catch_up()
        return self._usage.totals

    def price(self, seq: int) -> int:
        """The estimated price of surface node ``seq`` (on the surface or shadowed since);
        0 for an event that is not a surface type.

        Raises KeyError for a seq the log does not hold.
        """
        self._catch_up()
        if seq < 0 or seq >= len(self.session.events):
            raise KeyError(seq)
        return self._prices.get(seq, 0)

    def measure(
        self,
        envelope: Envelope | None = None,
        *,
        system: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> Measurement:
        """The context size of the next request.

        With an ``envelope`` (or some of ``system``/``tools``/``model``), measure as if the
        next request carried it (parts left out come from the latest logged header);
        otherwise use the latest logged header, or no header at all before the first
        request. Provider-anchored while that header equals the one of the anchoring reply;
        a full estimate otherwise.
        """
        self._catch_up()
        logged = self._header
        if envelope is not None:
            system, tools, model = envelope.system, envelope.tools, envelope.model
        if system is None and tools is None and model is None:
            key = self._header_key
            sys_tokens, tool_tokens = self._header_parts
        else:
            provider = logged.provider if logged is not None else ""
            eff_model = model if model is not None else (logged.model if logged else "")
            eff_system = system if system is not None else (logged.system if logged else "")
            eff_tools = tools if tools is not None else (logged.tools if logged else [])
            key = _header_key(provider, eff_model, eff_system, eff_tools)
            sys_tokens, tool_tokens = self._header_price(key, eff_tools)
        header = sys_tokens + tool_tokens
        surface = self._surface_tokens
        anchor = self._anchor
        if anchor is not None and anchor.key == key:
            total = max(0, anchor.total + surface - anchor.surface)
            measured = anchor.measured
        else:
            total = header + surface
            measured = False
        breakdown = {"system": sys_tokens, "tools": tool_tokens, **self._by_category}
        return Measurement(
            total=total,
            surface=surface,
            header=header,
            measured=measured,
            context_window=self.context_window,
            breakdown=breakdown,
            window=self.windows.current,
        )

    def bound(self, envelope: Envelope, *, warm_at: int = 0) -> int:
        """At least ``measure(envelope).total``, without waiting for the tokenizer.

        Once the tokenizer is loaded this is the measurement itself. Before, it is the byte
        bound of the envelope's header and of every message on the surface (nothing has been
        priced or anchored yet: any pricing loads the tokenizer), so a caller that only needs
        to know the context is below a mark (the pre-step check) need not wait for it on a
        short history. Once the bound reaches ``warm_at`` the tokenizer starts loading in the
        background, to be ready when the mark comes near, and so it does once the surface
        holds more than :data:`WARM_AT_MESSAGES` messages; below both, a short run (``-p``
        on a small task) never spends the load (about 0.2 s of CPU)."""
        if self.estimator.ready:
            return self.measure(envelope).total
        surface = self.session.surface
        total = self.estimator.header_bound(envelope.system, envelope.tools)
        for seq in surface:
            message = self.session.node_message(seq)
            if message is not None:
                total += self.estimator.message_bound(message)
        # A long surface warms it too: this walk is linear, the measurement is not.
        if total >= warm_at or len(surface) > WARM_AT_MESSAGES:
            self.estimator.warm()
        return total

    @property
    def context_window(self) -> int | None:
        """The window of the model in use (read from the shared :class:`WindowBook`)."""
        return self.windows.current.tokens

    @context_window.setter
    def context_window(self, tokens: int | None) -> None:
        self.windows.configured = tokens

    def estimate_messages(self, messages: list[dict[str, Any]]) -> int:
        """Estimated tokens of chat messages, framing included (no header)."""
        return self.estimator.messages_tokens(messages)

    def __repr__(self) -> str:
        return f"TokenMeter(surface={self._surface_tokens}, window={self.context_window})"
