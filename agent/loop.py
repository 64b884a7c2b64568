"""The ReAct loop: turns of steps, each step one model request and its tool calls.

::

    turn/start · user/message
    for step in 1..max_steps:
        system = system prompt
        await hooks.pre_step(..., signal)  # serial, awaited; compaction lands here
        context/message if the workspace context is not on the surface
        step/start
        steering/message for each queued steering text
        messages = session.derive_messages()
        request = hooks.request(request)   # pure transform (model switch...)
        request/header if it changed
        stream -> assistant/message        # ContextOverflow -> hooks.request_error
                                           # hooks.replying at its first streamed item
        tool/start -> run -> tool/result for each tool call
        step/end
        if no tool calls: break
    turn/end

The loop knows nothing about compaction: backends register listeners on :class:`Hooks`.
Everything the model sees is logged first ("model-visible means logged"): the request is
built from ``derive_messages()`` at dispatch and checked against it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable
from typing import Any

from agent import loop_guard
from agent.cache_expectation import expected_cache
from agent.closing import (
    answer_pending_calls,
    append_result,
    close_step,
    end_turn,
    keep_partial_reply,
)
from agent.envelope import Envelope
from agent.hooks import Hooks
from agent.llm.call_bounds import dropped_note
from agent.llm.chat import ChatModel
from agent.llm.errors import ContextOverflow, LLMError
from agent.llm.replies import Notice, Reply, StreamEvent
from agent.llm.windows import WindowBook
from agent.log.events import ContextMessage, ToolCall, TurnEndReason
from agent.log.session import Session
from agent.loop_settings import LoopSettings
from agent.requests import build_request
from agent.streaming import stream_reply
from agent.tool_calls import run_tool_call
from agent.toolbox import Toolbox, ToolSource
from agent.turns import Steering, StreamListener, TurnCancelled, TurnError, TurnResult, TurnState
from agent.workspace import workspace_context
from tools.base import Tool, ToolInterrupted, ToolNotStarted, ToolOutput


class Agent:
    """Drives one session: a model, tools, hooks, and a steering queue.

    Front ends observe the durable events through ``session.subscribe`` and the transient
    stream deltas through :meth:`listen` (a front end does both through
    :meth:`tui.runtime.runtime.Runtime.observe`).
    """

    def __init__(
        self,
        session: Session,
        model: ChatModel,
        model_name: str,
        tools: list[Tool],
        *,
        settings: LoopSettings | None = None,
        hooks: Hooks | None = None,
        context_window: int | WindowBook | None = None,
        estimate_tokens: Callable[[list[dict[str, Any]]], int] | None = None,
        bound_tokens: Callable[[list[dict[str, Any]]], int] | None = None,
    ) -> None:
        self.session = session
        self.model = model
        self.tools = {tool.name: tool for tool in tools}
        self.tool_sources: list[ToolSource] = []
        """Tools that come and go during the session (MCP servers), after :attr:`tools`."""
        self.settings = settings or LoopSettings()
        self.hooks = hooks or Hooks()
        self.windows = (
            context_window
            if isinstance(context_window, WindowBook)
            else WindowBook.fixed(context_window)
        )
        self.windows.select(model_name)
        self.estimate_tokens = estimate_tokens
        self.bound_tokens = bound_tokens
        self._stream_listeners: list[StreamListener] = []
        self._steering: list[Steering] = []
        self._running = False
        """Re-entrancy guard of :meth:`run_turn` (whether a turn is open is the log's to say)."""

    # --- public -------------------------------------------------------------------------------

    def steer(self, text: str, *, extend_turn: bool = True) -> None:
        """Queue a message typed while the turn runs; it is delivered at the next step.

        ``extend_turn``: when the model answers without tool calls while the message
        waits, one more step delivers it. Without it the turn ends as it would have and the
        message stays queued: the front end :meth:`take_steering` s it (to send it as the
        next message, say), rather than holding the person's text in a queue of its own.
        """
        self._steering.append(Steering(text, extend_turn))

    def listen(self, listener: StreamListener) -> Callable[[], None]:
        """Hear every stream item (deltas, retries, notices) from now on; returns the function
        that stops it."""
        self._stream_listeners.append(listener)

        def stop() -> None:
            if listener in self._stream_listeners:
                self._stream_listeners.remove(listener)

        return stop

    @property
    def pending_steering(self) -> list[str]:
        """The queued messages' texts, oldest first."""
        return [s.text for s in self._steering]

    def take_steering(self) -> list[str]:
        """Empty the queue; returns the texts no step delivered."""
        taken, self._steering = self._steering, []
        return [s.text for s in taken]

    @property
    def busy(self) -> bool:
        """A turn is open: answered from the log, which is what every observer reads."""
        return self.session.open_turn is not None

    @property
    def model_name(self) -> str:
        """The model the next request names (its owner is the :class:`WindowBook`)."""
        return self.windows.model

    @property
    def context_window(self) -> int | None:
        """The window of the model in use (read from the shared :class:`WindowBook`)."""
        return self.windows.current.tokens

    def envelope(self) -> Envelope:
        """The header the next request carries, as a value (see :mod:`agent.envelope`)."""
        return Envelope(
            provider=self.model.provider,
            model=self.model_name,
            system=self.system_prompt(),
            tools=self.tool_schemas(),
            window=self.context_window,
        )

    def tool_schemas(self) -> list[dict[str, Any]]:
        schemas = [tool.schema() for tool in self.tools.values()]
        for source in self.tool_sources:
            schemas += source.offered(self.context_window)
        return schemas

    def system_prompt(self) -> str:
        return self.settings.system_prompt

    def next_turn_number(self) -> int:
        for event in reversed(self.session.events):
            if event.type == "turn/start":
                return int(event.data.turn) + 1  # type: ignore[attr-defined]
        return 1

    async def run_turn(self, prompt: str, *, signal: asyncio.Event | None = None) -> TurnResult:
        """Run one turn for ``prompt``. Returns how it ended; raises :class:`TurnCancelled`
        (after closing the turn in the log) when the task is cancelled, or when ``signal``
        is set: the hooks are handed it and stop their work between units (the pruner,
        between results), and the turn then ends before its next step opens."""
        if self._running:
            raise RuntimeError("a turn is already running")
        # A write that failed earlier (a full disk) may have left a call unanswered, or the
        # turn itself open; an OSError here means the log still cannot be written, and no
        # turn was started.
        self.session.answer_dangling_calls()
        self.session.close_dangling_turn()
        self._running = True
        turn = self.next_turn_number()
        state = TurnState(turn) if signal is None else TurnState(turn, signal=signal)
        try:
            self.session.append("turn/start", {"turn": turn})
            if self.settings.workspace_context:
                self._ensure_workspace_context()
            self.session.append("user/message", {"content": prompt})
            for step in range(1, self.settings.max_steps + 1):
                state.step = step
                done = await self._run_step(state)
                if state.error is not None:
                    return self._end(state, "error")
                if done:
                    return self._end(state, "completed")
            return self._end(state, "max-steps")
        except TurnError as exc:
            state.error = str(exc)
            return self._end(state, "error")
        except asyncio.CancelledError as exc:
            # Record what the user saw (the reply so far, the running command's output) and
            # balance the surface, then end the turn.
            keep_partial_reply(self.session, state, self.model_name)
            printed = exc.output if isinstance(exc, ToolInterrupted) else None
            if isinstance(exc, ToolNotStarted):
                state.running_call = None  # the user interrupted before approving it
            answer_pending_calls(self.session, state, printed=printed)
            raise TurnCancelled(self._end(state, "cancelled")) from None
        except Exception as exc:
            # A bug, or a log that cannot be written (disk full): close the turn so the log
            # stays well-formed (every call answered), then fail loudly.
            if isinstance(exc, OSError):
                state.error = f"the session log could not be written: {exc}"
            else:
                state.error = f"internal error: {type(exc).__name__}: {exc}"
            with contextlib.suppress(Exception):
                answer_pending_calls(self.session, state, failure=state.error)
                self._end(state, "error")
            raise
        finally:
            self._running = False

    # --- one step -----------------------------------------------------------------------------

    async def _run_step(self, state: TurnState) -> bool:
        """Run step ``state.step``; True when the turn is done: the model answered without
        tool calls and no steering message is waiting, or the request failed."""
        turn, step = state.turn, state.step
        for prepare in self.hooks.prepare:
            await prepare()
        envelope = self.envelope()
        for pre_step in self.hooks.pre_step:
            await pre_step(envelope, turn, step, state.signal)
        if state.signal.is_set():
            raise asyncio.CancelledError  # closed as a cancel is, by run_turn
        if self.settings.workspace_context:
            self._ensure_workspace_context()
        self.session.append("step/start", {"turn": turn, "step": step})
        state.step_open = True
        while self._steering:
            self.session.append("steering/message", {"content": self._steering[0].text})
            self._steering.pop(0)

        reply = await self._request_with_recovery(state, envelope)
        if reply is None:
            close_step(self.session, state)
            return True
        state.text = reply.text
        if reply.tool_calls:
            state.cut_at = None  # the turn goes on past a cut reply
        if not reply.tool_calls:
            close_step(self.session, state)
            # A message typed while the model wrote its final answer still reaches it: one
            # more step delivers it, rather than leaving it queued for the next turn.
            return not any(s.extend_turn for s in self._steering)
        for call in reply.tool_calls:
            state.pending_calls.append(call)
        while state.pending_calls:
            call = state.pending_calls[0]
            refused = reply.refused.get(call.id)
            if refused is not None:
                output = ToolOutput(refused, is_error=True)
            else:
                tools = Toolbox(self.tools, self.tool_sources)
                output = await run_tool_call(self.session, tools, state, call, self._emit)
                output = self._guard(call, output)
            # Only a logged result answers the call: if the append fails, the call stays
            # pending and the turn's closers answer it (else the surface keeps an orphan call
            # that every later request would carry).
            append_result(self.session, state, call, output)
            state.pending_calls.pop(0)
            state.running_call = None
        if reply.dropped_calls:
            asked = len(reply.tool_calls) + reply.dropped_calls
            self.session.append(
                "context/message", {"content": dropped_note(asked), "source": "reefline"}
            )
        close_step(self.session, state)
        return False

    def _guard(self, call: ToolCall, output: ToolOutput) -> ToolOutput:
        """The loop guard (:mod:`agent.loop_guard`): the call that makes too many identical
        calls gets a note in its result, and the person a notice; the turn goes on."""
        repeats = self.settings.loop_guard
        if not loop_guard.looping(self.session.events, call, repeats):
            return output
        self.notify(loop_guard.notice(call, repeats))
        content = f"{output.content}\n\n{loop_guard.note(call, repeats)}"
        return dataclasses.replace(output, content=content)

    async def _request_with_recovery(self, state: TurnState, envelope: Envelope) -> Reply | None:
        overflow_retries = 0
        while True:
            request = build_request(
                self.session,
                envelope,
                self.hooks.request,
                output_cap=self.settings.max_output_tokens,
                estimate=self.estimate_tokens,
                bound=self.bound_tokens,
            )
            expected = expected_cache(
                self.session,
                request.messages[0],
                now=time.time(),
                ttl_s=self.settings.cache_ttl_s,
                estimate=self.estimate_tokens,
            )
            try:
                reply = await stream_reply(
                    self.session,
                    self.model,
                    state,
                    request,
                    self._emit,
                    self._began(state),
                    expected,
                )
            except ContextOverflow as exc:
                if self._learn_limit(exc):
                    envelope = dataclasses.replace(envelope, window=self.context_window)
                if overflow_retries < self.settings.max_overflow_retries:
                    overflow_retries += 1
                    retry = False
                    for handler in self.hooks.request_error:
                        if await handler(envelope, exc, state.turn, state.step, state.signal):
                            retry = True
                    if state.signal.is_set():
                        raise asyncio.CancelledError from None  # stopped there: no retry
                    if retry:
                        continue
                state.error = exc.user_message
                return None
            except LLMError as exc:
                state.error = exc.user_message
                return None
            state.cut_at = request.max_tokens if reply.finish_reason == "length" else None
            return reply

    def _learn_limit(self, exc: ContextOverflow) -> bool:
        """An overflow error that states the window lowers it for the rest of the session
        (the next ``request/header`` records it; compaction aims at it at once). True when
        the window changed."""
        if exc.limit is None or not self.windows.lower(exc.limit, "stated in an overflow error"):
            return False
        self.notify(
            f"The server says its context window is {exc.limit:,} tokens; reefline uses that "
            "from now on (set --context-window to change it)."
        )
        return True

    def _began(self, state: TurnState) -> Callable[[], None]:
        """Tells ``hooks.replying`` that the reply to this step's request began."""

        def began() -> None:
            for replying in self.hooks.replying:
                replying(state.turn, state.step)

        return began

    def _emit(self, item: StreamEvent) -> None:
        for listener in list(self._stream_listeners):
            listener(item)

    def notify(self, text: str) -> None:
        """Tell the front ends something about how requests are made (a :class:`Notice`
        to the stream listeners; not logged)."""
        self._emit(Notice(text))

    def _end(self, state: TurnState, reason: TurnEndReason) -> TurnResult:
        return end_turn(self.session, state, reason, max_steps=self.settings.max_steps)

    def _ensure_workspace_context(self) -> None:
        """Append the workspace context unless it is on the surface (a compaction may have
        shadowed it: check the surface, not the log). Another context message (a remembered
        line, a recall note) does not stand in for it."""
        events = self.session.events
        for seq in reversed(self.session.surface):
            event = events[seq]
            if isinstance(event, ContextMessage) and event.data.source == "workspace":
                return
        self.session.append(
            "context/message",
            {"content": workspace_context(self.session.cwd), "source": "workspace"},
        )
