"""Headless front end: ``reefline -p "task"`` runs one turn and prints the answer.

stdout carries the answer (or, with ``--json``, every event of this run as a JSON line);
everything meant for a person — notices, retries, compactions as they run, denied commands,
errors — goes to stderr.
Exit codes: 0 ok, 1 error, 2 usage, 130 interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import TextIO

from agent.events import Event
from agent.llm import Notice, StreamEvent
from agent.loop_settings import cut_text
from agent.turns import TurnCancelled, TurnResult
from compact.wording import compaction_news, describe, label, progress_text
from tools.terminal import json_safe
from tui.runtime import Runtime
from tui.text import clean
from tui.view.fold import LogView
from tui.view.items import RetryPlanned, ToolRun, ViewItem

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

DENIED_HINT = (
    "reefline: a bash command was not run because headless mode denies commands by default; "
    "allow them with --approve auto"
)


class EventPrinter:
    """Observes the session: JSON lines on stdout (``--json``) and notices on stderr."""

    def __init__(self, runtime: Runtime, *, json_mode: bool, out: TextIO, err: TextIO) -> None:
        self.runtime = runtime
        self.json_mode = json_mode
        self.out = out
        self.err = err
        self._denied_told = False
        self.view = LogView()
        self.view.feed_all(runtime.session.events)

    def __call__(self, event: Event) -> None:
        if self.json_mode:
            self.out.write(json_safe(event.to_json()) + "\n")
            self.out.flush()
        fed = self.view.feed(event)
        if fed.timeline:
            self._compaction(event)
        for change in fed.changes:
            self._show_item(change.item)

    def _show_item(self, item: ViewItem) -> None:
        if isinstance(item, RetryPlanned):
            self.say(
                f"reefline: model request failed ({item.error}); retry "
                f"{item.attempt} in {item.delay_s:.1f}s"
            )
        elif (
            isinstance(item, ToolRun)
            and item.not_run
            and not self._denied_told
            and self.runtime.bash.policy == "deny"
        ):
            self._denied_told = True
            self.say(DENIED_HINT)

    def _compaction(self, event: Event) -> None:
        """A compaction starting, each of its summarizer calls, and how it ended."""
        news = compaction_news(self.view.timeline, event)
        if news is None:
            return
        kind, record = news
        if kind == "start":
            self.say(f"reefline: compacting the conversation ({label(record)})…")
        elif kind == "progress":
            self.say(f"reefline: compaction {progress_text(record, event.time)}")
        else:
            self.say(f"reefline: compaction {describe(record)}")

    def stream(self, item: StreamEvent) -> None:
        """Stream listener: only notices concern a person here (deltas are not shown)."""
        if isinstance(item, Notice):
            self.say(f"reefline: {item.text}")

    def say(self, line: str) -> None:
        """One line on stderr, through the terminal-safety filter (provider error bodies,
        retry reasons and notices carry text a server chose)."""
        self.err.write(clean(line) + "\n")
        self.err.flush()


async def run_prompt(
    runtime: Runtime,
    prompt: str,
    *,
    json_mode: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run one turn for ``prompt``; return the process exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    printer = EventPrinter(runtime, json_mode=json_mode, out=out, err=err)
    for notice in runtime.notices:
        printer.say(f"reefline: {notice}")
    unsubscribe = runtime.session.subscribe(printer)
    unlisten = runtime.compaction.add_listener(
        lambda notice: printer.say(f"reefline: {notice.text}")
    )
    runtime.agent.stream_listeners.append(printer.stream)
    task = asyncio.ensure_future(runtime.agent.run_turn(prompt))
    loop = asyncio.get_running_loop()
    with _cancel_on(loop, task, signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            result: TurnResult = await task
        except TurnCancelled:
            printer.say("reefline: interrupted; the turn was closed and the session saved")
            return EXIT_INTERRUPTED
        finally:
            unsubscribe()
            unlisten()
            runtime.agent.stream_listeners.remove(printer.stream)
    if not json_mode and result.text:
        out.write(clean(result.text.rstrip("\n")) + "\n")
        out.flush()
    if result.reason == "completed" and result.cut_at is None:
        return EXIT_OK
    if result.cut_at is not None:
        printer.say(f"reefline: {cut_text(result.cut_at)}")
        printer.say(f"reefline: session {runtime.session.id} saved; continue it with --continue")
        return EXIT_ERROR
    printer.say(f"reefline: {result.error or result.reason}")
    printer.say(f"reefline: session {runtime.session.id} saved; continue it with --continue")
    return EXIT_ERROR


class _cancel_on:
    """Cancel ``task`` when one of ``signals`` arrives (restoring the handlers afterwards)."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, task: asyncio.Future[object], *signals: int
    ) -> None:
        self.loop = loop
        self.task = task
        self.signals = signals

    def __enter__(self) -> None:
        for sig in self.signals:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                self.loop.add_signal_handler(sig, self.task.cancel)

    def __exit__(self, *exc: object) -> None:
        for sig in self.signals:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                self.loop.remove_signal_handler(sig)
