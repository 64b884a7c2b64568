"""What a slash command asks of the front end that ran it: small frozen values.

:func:`tui.commands.run.run` does the command's work on the runtime and yields these; each front
end has one ``apply(effect)`` that shows them its way (the app as notices, modals and panels,
the plain REPL and headless as lines). A command never draws anything itself, so adding one
touches only the command set (:mod:`tui.commands.handlers`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent.log.catalogue import Listed
from agent.log.events import FilesRestore
from agent.log.fork import ForkPoint
from compact.reports.records import TimelineRecord
from tui.runtime.context_report import ContextReport
from tui.runtime.runtime import Runtime

Level = Literal["info", "warning", "error"]
"""How much something said matters: the app's notice colour, the REPL's ``!``."""


@dataclass(frozen=True)
class Said:
    """Tell the person something (a notice in the app, a line in the REPL)."""

    text: str
    level: Level = "info"


@dataclass(frozen=True)
class Help:
    """Show the commands (:func:`tui.commands.registry.slash_help`); a front end adds its keys."""

    commands: str


@dataclass(frozen=True)
class ShowContext:
    """Show what fills the context window: the same rows everywhere."""

    report: ContextReport


@dataclass(frozen=True)
class ShowGauge:
    """The runtime's reading changed (a compaction, a model switch): show the gauge anew."""


@dataclass(frozen=True)
class ToggleTimeline:
    """Show or hide the compaction timeline; a front end without a panel lists ``records``."""

    records: tuple[TimelineRecord, ...]


@dataclass(frozen=True)
class PickSession:
    """Offer the stored sessions in which a prompt was sent, those of :attr:`here` first;
    the one picked is resumed (``/resume <id>``)."""

    sessions: tuple[Listed, ...]
    current: str
    here: str
    """The open session's folder."""


@dataclass(frozen=True)
class PickRewind:
    """Offer the earlier prompts, oldest first, and the file restores that can be undone:
    picking the n-th prompt runs ``/rewind n``, the n-th restore ``/rewind un``."""

    points: tuple[ForkPoint, ...]
    undo: tuple[FilesRestore, ...] = ()

    def command_for(self, picked: ForkPoint | FilesRestore) -> str:
        """The command line that does what was picked."""
        if isinstance(picked, FilesRestore):
            return f"/rewind u{self.undo.index(picked) + 1}"
        return f"/rewind {self.points.index(picked) + 1}"


@dataclass(frozen=True)
class Choose:
    """Ask ``question``; the n-th of ``answers`` runs the n-th of ``commands`` (a slash
    command line). ``keys``: what a line front end takes for each answer (else its number).
    Where nobody can answer, the first is the default."""

    question: str
    answers: tuple[str, ...]
    commands: tuple[str, ...]
    keys: tuple[str, ...] = ()

    def pick(self, typed: str) -> int:
        """The answer ``typed`` means: its key, its number or its words; else the first."""
        typed = typed.strip().lower()
        keys = self.keys or tuple(str(n) for n in range(1, len(self.answers) + 1))
        for n, (key, answer) in enumerate(zip(keys, self.answers, strict=True)):
            if typed in (key, answer, str(n + 1)):
                return n
        return 0


@dataclass(frozen=True)
class Confirm:
    """Ask yes or no before ``command`` (a slash command line) writes something the person
    should see first: ``question`` and the ``detail`` of what would be written. The app asks
    in a modal, the plain REPL asks y/N (no by default); headless, where nobody can be asked,
    the command line that asked is the consent: it runs, and both are said on stderr."""

    question: str
    detail: str
    command: str


@dataclass(frozen=True)
class ShowDiff:
    """Show a patch (``title`` says of what)."""

    title: str
    text: str


@dataclass(frozen=True)
class Rewinding:
    """Going back to before ``turn`` starts (the fork takes a moment): show ``prompt`` read-only
    meanwhile. Lasts until the command ends."""

    turn: int
    prompt: str


@dataclass(frozen=True)
class Adopt:
    """Go on with ``runtime`` in place of the open one, which the front end closes."""

    runtime: Runtime


@dataclass(frozen=True)
class Prompt:
    """Give ``text`` back to the person to edit and send (the app's input; a line elsewhere)."""

    text: str


@dataclass(frozen=True)
class EditSummary:
    """Open an editor on the newest checkpoint's summary (``summary``, compaction #``number``);
    what the person saves goes to :func:`tui.commands.summary.save_summary`."""

    summary: str
    number: int


@dataclass(frozen=True)
class Quit:
    """Leave reefline."""


Effect = (
    Said
    | Help
    | ShowContext
    | ShowGauge
    | ToggleTimeline
    | PickSession
    | PickRewind
    | Choose
    | Confirm
    | ShowDiff
    | Rewinding
    | Adopt
    | Prompt
    | EditSummary
    | Quit
)
"""Everything a command may ask of a front end. Each front end's ``apply`` takes every kind
in turn and ends with ``assert_never``: a kind added here and forgotten there is a type error
(mypy), not an effect silently dropped."""

Shown = Said | Help | ShowContext | ShowGauge | ToggleTimeline | ShowDiff | Rewinding | Prompt
"""What the app's main screen shows; the app does the rest itself (a modal, another session,
quitting)."""

Printed = (
    Said
    | Help
    | ShowContext
    | ShowGauge
    | ToggleTimeline
    | PickSession
    | PickRewind
    | ShowDiff
    | Prompt
)
"""What a line front end (the REPL, headless) prints; it does the rest its own way."""
