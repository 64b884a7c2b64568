"""What the prompt's completion menu offers for the text typed so far: slash commands with
what they do, then their arguments (``/resume`` a stored session, ``/approve`` a policy,
``/model`` a model reefline knows). Drawn by no one here: the app shows the choices in a menu
under its prompt."""

from __future__ import annotations

from dataclasses import dataclass

from agent.llm.window_table import KNOWN_CONTEXT_WINDOWS
from agent.log.catalogue import catalogue, here_first
from tui.commands.run import SLASH_COMMANDS, SLASH_USAGE
from tui.runtime.runtime import Runtime
from tui.view.session_list import ago, folder_of, last_asked

MAX_CHOICES = 20
"""A menu longer than this would not be read; the typed prefix narrows it."""

APPROVAL_HELP = {
    "ask": "ask before each command",
    "auto": "run commands without asking",
    "deny": "refuse every command",
}


@dataclass(frozen=True)
class Choice:
    """One row of the menu: the prompt's text once it is taken, and how it is shown."""

    value: str
    label: str
    help: str
    whole: bool = False
    """Taking it with Enter runs it: a command that takes no arguments (else Enter puts the
    row in the prompt, to go on typing or check it, and the next Enter sends it)."""


def choices(text: str, runtime: Runtime) -> list[Choice]:
    """The completions of ``text`` (one line starting with ``/``), best first; [] when there is
    nothing to offer (plain text, an unknown command, an argument nothing completes)."""
    if not text.startswith("/") or "\n" in text:
        return []
    name, space, arg = text[1:].partition(" ")
    if not space:
        prefix = name.lower()
        return [
            Choice(f"/{command} ", f"/{command}", help_text, whole=_bare(command))
            for command, help_text in SLASH_COMMANDS.items()
            if command.startswith(prefix)
        ]
    if " " in arg:
        return []
    if name == "resume":
        return _sessions(arg, runtime)[:MAX_CHOICES]
    if name == "approve":
        return [
            Choice(f"/approve {mode}", mode, help_text)
            for mode, help_text in APPROVAL_HELP.items()
            if mode.startswith(arg.lower())
        ]
    if name == "model":
        return _models(arg, runtime)[:MAX_CHOICES]
    return []


def _bare(command: str) -> bool:
    """The command takes no arguments (its usage is its name alone)."""
    return len(SLASH_USAGE.get(command, "").split()) <= 1


def _sessions(prefix: str, runtime: Runtime) -> list[Choice]:
    """The stored sessions whose name or id starts with ``prefix``, the session's folder's
    first; each taken by its name when it has one."""
    wanted = prefix.casefold()
    found = []
    for listed in here_first(catalogue(runtime.home), runtime.session.cwd):
        named = listed.name is not None and listed.name.casefold().startswith(wanted)
        if listed.id == runtime.session.id or not (named or listed.id.startswith(prefix)):
            continue
        handle = listed.name or listed.id
        about = f"{ago(listed.stored.modified)} · {folder_of(listed)} · {last_asked(listed, 50)}"
        found.append(Choice(f"/resume {handle}", handle, about))
        if len(found) == MAX_CHOICES:
            break
    return found


def _models(prefix: str, runtime: Runtime) -> list[Choice]:
    current = runtime.model_name
    names = dict.fromkeys([current, *runtime.settings.context_windows, *KNOWN_CONTEXT_WINDOWS])
    return [
        Choice(f"/model {name}", name, _model_help(name, current))
        for name in names
        if name.lower().startswith(prefix.lower())
    ]


def _model_help(name: str, current: str) -> str:
    if name == current:
        return "in use"
    window = KNOWN_CONTEXT_WINDOWS.get(name)
    return f"{window // 1000}k window" if window else "configured window"
