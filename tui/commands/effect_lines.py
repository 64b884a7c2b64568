"""Effects as lines of text, for the front ends that print (the plain REPL, headless): what
:func:`tui.commands.run.run` asks to show, said the same way by both."""

from __future__ import annotations

from typing import assert_never

from compact.reports.wording import describe
from tui.commands.effects import (
    Help,
    PickRewind,
    PickSession,
    Printed,
    Prompt,
    Said,
    ShowContext,
    ShowDiff,
    ShowGauge,
    ToggleTimeline,
)
from tui.runtime.context_report import report_lines
from tui.runtime.gauge_reading import current_reading
from tui.runtime.runtime import Runtime
from tui.text import first_line
from tui.view.session_list import asked, by_folder, facts


def gauge_line(runtime: Runtime) -> str:
    """``ctx [█████░░░|░░] ~5.2k / 12k · 43% · auto at 80% · in 41k · ...``, and while
    automatic compaction is near, a line with what it costs and saves."""
    reading = current_reading(runtime)
    soon = reading.soon_line
    return f"{reading.line()}\n{soon}" if soon else reading.line()


def said_line(said: Said) -> str:
    """A notice as a line: warnings and errors start with ``!``."""
    return said.text if said.level == "info" else f"! {said.text}"


def session_lines(pick: PickSession) -> list[str]:
    """``/sessions`` as lines: each folder (this session's first), then its sessions as
    ``reefline sessions`` lists them."""
    if not pick.sessions:
        return ["No stored session has a prompt yet."]
    lines = []
    for group in by_folder(pick.sessions, pick.here):
        lines.append(f"{group.folder}{' (this folder)' if group.here else ''}:")
        for listed in group.sessions:
            mark = "  (this session)" if listed.id == pick.current else ""
            lines.append(f"  {listed.id}  {facts(listed)}{mark}")
            lines += [f"      {line}" for line in asked(listed)]
    return [*lines, "/resume NAME (or id) continues one."]


def effect_lines(effect: Printed, runtime: Runtime) -> list[str]:
    """What ``effect`` shows, as lines. Lines are raw: the printer passes them through the
    terminal filter."""
    if isinstance(effect, Said):
        return [said_line(effect)]
    if isinstance(effect, Help):
        return effect.commands.splitlines()
    if isinstance(effect, ShowContext):
        return report_lines(effect.report)
    if isinstance(effect, ShowGauge):
        return [gauge_line(runtime)]
    if isinstance(effect, ToggleTimeline):
        return [describe(record) for record in effect.records] or ["No compactions yet."]
    if isinstance(effect, PickSession):
        return session_lines(effect)
    if isinstance(effect, PickRewind):
        lines = [
            f"  {n:>3}. turn {point.turn}: {first_line(point.prompt, 70)}"
            for n, point in enumerate(effect.points, 1)
        ]
        for n, done in enumerate(effect.undo, 1):
            count = len(done.data.restored)
            lines.append(f"  u{n:>2}. undo the file restore at seq {done.seq} ({count} files)")
        return [
            *lines,
            "/rewind N goes back to just before prompt N (a new session; this one stays).",
        ]
    if isinstance(effect, ShowDiff):
        return effect.text.splitlines()
    if isinstance(effect, Prompt):
        return effect.text.splitlines() or [""]
    assert_never(effect)
