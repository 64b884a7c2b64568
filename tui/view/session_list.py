"""Stored sessions as every front end lists them (``reefline sessions``, ``/sessions`` and the
``/resume`` picker): the same words, the current folder's sessions first.

A row: ``ID  NAME · AGE · N turns · SIZE`` and under it what was asked, the first prompt
(``fork of PARENT:`` before it for a fork) and the last; a text too long for its line is cut
with ``…``, never silently.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from agent.formatting import plural
from agent.log.catalogue import Listed
from tui.text import first_line, short_path

PROMPT_WIDTH = 70
"""Characters of a prompt a listing shows (with its indent and ``last:``, under 80)."""


def ago(then: float, now: float | None = None) -> str:
    """``just now``, ``12 min ago``, ``3 h ago``, ``yesterday``, ``5 days ago``, or the date."""
    seconds = max(0.0, (time.time() if now is None else now) - then)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86400)
    if days == 1:
        return "yesterday"
    if days < 14:
        return f"{days} days ago"
    return time.strftime("%Y-%m-%d", time.localtime(then))


def size(listed: Listed) -> str:
    """``3 turns · 48 KiB``."""
    kib = listed.stored.size / 1024
    on_disk = f"{kib:.0f} KiB" if kib >= 10 else f"{kib:.1f} KiB"
    return f"{plural(listed.turns, 'turn')} · {on_disk}"


def facts(listed: Listed, now: float | None = None) -> str:
    """``api-refactor · 2 h ago · 3 turns · 48 KiB`` (no name: from the age on)."""
    named = [first_line(listed.name, 40)] if listed.name else []
    return " · ".join([*named, ago(listed.stored.modified, now), size(listed)])


def asked(listed: Listed, width: int = PROMPT_WIDTH) -> list[str]:
    """What was asked in the session: its first prompt (or why its log cannot be read) and,
    when there were more, the last one, each cut to ``width`` with ``…``."""
    lines = [first_line(listed.head.listed, width)]
    if listed.prompts > 1 and listed.last_prompt:
        lines.append(first_line(f"last: {listed.last_prompt}", width))
    return [line for line in lines if line]


def last_asked(listed: Listed, width: int = PROMPT_WIDTH) -> str:
    """The last prompt alone (the first when it is the only one), for a row of one line."""
    text = listed.last_prompt if listed.prompts > 1 else listed.head.listed
    return first_line(text or listed.head.listed, width)


def folder_of(listed: Listed) -> str:
    return short_path(listed.cwd) if listed.cwd else "(folder unknown)"


@dataclass(frozen=True)
class Group:
    """The sessions of one folder, most recent first."""

    folder: str
    here: bool
    sessions: list[Listed]


def by_folder(listed: Iterable[Listed], here: str) -> list[Group]:
    """``listed`` (most recent first) grouped by folder: ``here``'s first, then the others in
    the order of their most recent session."""
    groups: dict[str | None, list[Listed]] = {}
    for item in listed:
        groups.setdefault(item.cwd, []).append(item)
    order = sorted(groups, key=lambda cwd: cwd != here)  # stable: recency kept otherwise
    return [Group(folder_of(groups[cwd][0]), cwd == here, groups[cwd]) for cwd in order]
