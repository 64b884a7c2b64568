"""What ``reefline -p`` shows while a turn runs: every event as a JSON line on stdout with
``--json``, and on stderr what a person should know (retries, compactions as they run, a
denied command, notices), each line through the terminal filter.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import TextIO

from agent.formatting import fmt_duration, fmt_tokens
from agent.llm.replies import Notice, StreamEvent, ToolOutputDelta
from agent.log.events import Event
from compact.reports.wording import compaction_news, describe, progress_text, start_line
from tools.terminal import json_safe
from tui.runtime.compaction_outlook import soon_words
from tui.runtime.runtime import Runtime
from tui.text import clean
from tui.view.fold import LogView
from tui.view.items import RetryPlanned, ToolRun, ViewItem

DENIED_HINT = (
    "reefline: a bash command was not run because headless mode denies commands by default; "
    "allow them with --approve auto"
)
EDIT_DENIED_HINT = (
    "reefline: an edit was not made because headless mode denies commands and edits by "
    "default; allow them with --approve auto"
)


class EventPrinter:
    """Observes the session: JSON lines on stdout (``--json``) and notices on stderr."""

    def __init__(self, runtime: Runtime, *, json_mode: bool, out: TextIO, err: TextIO) -> None:
        self.runtime = runtime
        self.json_mode = json_mode
        self.out = out
        self.err = err
        self._denied_told = False
        self._compacting_since: float | None = None
        self._soon_told = False
        self.stdout_closed = False
        """stdout's reader went away (``| head``): nothing more is written there."""
        self.on_stdout_closed: Callable[[], object] = lambda: None
        """Called once when that happens (the run stops: nobody reads its output)."""
        self.view = LogView()
        self.view.feed_all(runtime.session.events)

    def start(self) -> None:
        """Before the run: with ``--json``, the session's ``session/start`` (its id, for a
        later ``--resume``) and whatever this process appended on opening it (crash repair,
        ``session/resume``), so the stream is the log from the start of this run."""
        if not self.json_mode:
            return
        session = self.runtime.session
        events = session.events
        for event in [events[0], *events[max(1, session.report.read) :]]:
            self._json(event)

    def _json(self, event: Event) -> None:
        self._out(json_safe(event.to_json()))

    def _out(self, line: str) -> None:
        """One line on stdout; a closed pipe is noted, never raised (this runs inside the
        session's append, which must not fail for a reader that left)."""
        if self.stdout_closed:
            return
        try:
            self.out.write(line + "\n")
            self.out.flush()
        except BrokenPipeError:
            self.stdout_closed = True
            self.on_stdout_closed()

    def __call__(self, event: Event) -> None:
        if self.json_mode:
            self._json(event)
        fed = self.view.feed(event)
        if fed.timeline:
            self._compaction(event)
        for change in fed.changes:
            self._show_item(change.item)
        if event.type == "step/start":
            self._forecast()

    def _forecast(self) -> None:
        """Say once, when it becomes true, that automatic compaction is about two steps away
        (as the app's gauge does); again only after the context fell back below that."""
        meter = self.runtime.meter
        if not meter.estimator.ready:
            return  # steps are measured once the tokenizer is loaded: nothing to forecast yet,
            # and loading it here would delay the first request
        total = meter.measure().total
        soon = self.runtime.compacting_soon(total)
        if soon and not self._soon_told and (mark := self.runtime.threshold_tokens):
            words = soon_words(self.runtime)
            self.say(
                f"reefline: compacting soon (context ~{fmt_tokens(total)}, the automatic "
                f"mark at ~{fmt_tokens(mark)})" + (f": it {words}" if words else "")
            )
        self._soon_told = soon

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
            self.say(EDIT_DENIED_HINT if item.name == "edit" else DENIED_HINT)

    def _compaction(self, event: Event) -> None:
        """A compaction starting, each of its summarizer calls, and how it ended."""
        news = compaction_news(self.view.timeline, event)
        if news is None:
            return
        kind, record = news
        if kind == "start":
            self._compacting_since = time.monotonic()
            self.say(f"reefline: compacting the conversation ({start_line(record)})…")
        elif kind == "progress":
            self.say(f"reefline: compaction {progress_text(record, event.time)}")
        else:
            self._compacting_since = None
            self.say(f"reefline: compaction {describe(record)}")

    async def heartbeat(self, every_s: float) -> None:
        """Every ``every_s`` seconds while a compaction runs, say how long it has been running:
        a summarizer call can take minutes and prints nothing until it ends. Runs until
        cancelled."""
        while True:
            await asyncio.sleep(every_s)
            if self._compacting_since is not None:
                elapsed = time.monotonic() - self._compacting_since
                self.say(f"reefline: still compacting · {fmt_duration(elapsed)}")

    def stream(self, item: StreamEvent) -> None:
        """Stream listener: notices concern a person; with ``--json`` a running command's
        output is a ``tool/output`` line (transient: no ``seq``, not in the log)."""
        if isinstance(item, Notice):
            self.say(f"reefline: {item.text}")
        elif isinstance(item, ToolOutputDelta) and self.json_mode:
            line = {"type": "tool/output", "call_id": item.call_id, "text": item.text}
            self._out(json_safe(json.dumps(line, ensure_ascii=False)))

    def say(self, line: str) -> None:
        """One line on stderr, through the terminal-safety filter (provider error bodies,
        retry reasons and notices carry text a server chose)."""
        self.err.write(clean(line) + "\n")
        self.err.flush()
