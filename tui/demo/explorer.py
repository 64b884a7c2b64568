"""The demo model's ReAct part: from the latest request and the results after it, the next
read-only command to run, or the answer from what the commands showed."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from agent.formatting import plural
from compact.parts.checkpoint import checkpoint_sections
from tui.demo.reading import (
    _CMD,
    _ERROR,
    _LISTINGS,
    _LS_LINE,
    _Q,
    _TEXT_EXT,
    _WC_LINE,
    FIND_CMD,
    LIST_CMD,
    _cut,
    _is_checkpoint,
    _is_request,
    _kind,
    _Obs,
    _observations,
    _one_line,
    _text,
    _workdir,
)


@dataclass
class _Scene:
    """What the ReAct part knows: the request, results this turn, files and sizes seen."""

    request: str
    anchor: int
    obs: list[_Obs]
    done: set[str] = field(default_factory=set)
    files: list[str] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)
    cwd: str = ""
    top_entries: int = 0


def _scene(messages: Sequence[Mapping[str, Any]]) -> _Scene:
    anchor = next((i for i in range(len(messages) - 1, -1, -1) if _is_request(messages[i])), -1)
    checkpoint_at = next(
        (i for i in range(len(messages) - 1, -1, -1) if _is_checkpoint(_text(messages[i]))), -1
    )
    request, earlier_done, earlier_files = "", set(), []
    if anchor >= 0:
        request = _text(messages[anchor])
    elif checkpoint_at >= 0:
        # The request was compacted away mid-turn: resume from the checkpoint's record of it.
        anchor = checkpoint_at
        old = checkpoint_sections(_text(messages[checkpoint_at]))
        asked = [
            m.group(1) for b in old.get("primary request and intent", []) if (m := _Q.match(b))
        ]
        request = asked[-1] if asked else ""
        for bullet in old.get("current work", []):
            if (m := _CMD.match(bullet)) and (kind := _kind(m.group(1))):
                earlier_done.add(kind)
        earlier_files = [m.group(1) for b in old.get("files and code", []) if (m := _CMD.match(b))]
    scene = _Scene(request, anchor, _observations(messages[anchor + 1 :]), earlier_done)
    scene.cwd = _workdir(messages)
    scene.done |= {o.kind for o in scene.obs if o.kind}
    scene.files = list(earlier_files)
    for obs in scene.obs:
        if obs.refused:
            continue
        if obs.kind == "list":
            for line in obs.lines:
                if (m := _LS_LINE.match(line)) and m.group(3) not in (".", ".."):
                    scene.top_entries += 1
                    if m.group(1) == "-":
                        scene.sizes[m.group(3)] = int(m.group(2))
        elif obs.kind == "find":
            for line in obs.lines:
                path = line.strip().removeprefix("./")
                if line.strip().startswith("./") and path not in scene.files:
                    scene.files.append(path)
    return scene


# --- the ReAct part ---------------------------------------------------------------------------


def _is_text_file(path: str) -> bool:
    name = PurePosixPath(path).name
    suffix = PurePosixPath(path).suffix.lstrip(".").lower()
    return suffix in _TEXT_EXT or name.upper().startswith(("README", "LICENSE", "MAKEFILE"))


def _mentioned(request: str, files: list[str]) -> list[str]:
    low = request.lower()
    hits = []
    for path in files:
        for needle in (path.lower(), PurePosixPath(path).name.lower()):
            if re.search(rf"(?<![\w.-]){re.escape(needle)}(?![\w-])", low):
                hits.append(path)
                break
    return hits


def _picks(scene: _Scene) -> list[str]:
    """Up to six text files to count: mentioned ones, READMEs, then the biggest seen."""
    text_files = [f for f in scene.files if _is_text_file(f)]
    readmes = [f for f in text_files if PurePosixPath(f).name.upper().startswith("README")]
    by_size = sorted(text_files, key=lambda f: (-scene.sizes.get(f, -1), text_files.index(f)))
    ordered = _mentioned(scene.request, scene.files) + readmes + by_size
    return list(dict.fromkeys(ordered))[:6]


def _line_counts(scene: _Scene) -> list[tuple[str, int]]:
    counts = []
    for obs in scene.obs:
        if obs.kind == "count":
            for line in obs.lines:
                if (m := _WC_LINE.match(line)) and m.group(2) != "total":
                    counts.append((m.group(2).removeprefix("./"), int(m.group(1))))
    return counts


def _target(scene: _Scene) -> str | None:
    """The file to show the start of: mentioned, else a README, else the longest counted."""
    picks = _picks(scene)
    named = _mentioned(scene.request, scene.files)
    if named:
        return named[0]
    readme = next((f for f in picks if PurePosixPath(f).name.upper().startswith("README")), None)
    counts = _line_counts(scene)
    if readme or counts:
        return readme or max(counts, key=lambda c: c[1])[0]
    return picks[0] if picks else None


def _next_command(scene: _Scene) -> str | None:
    if "list" not in scene.done:
        return LIST_CMD
    if "find" not in scene.done:
        return FIND_CMD
    if len(scene.request.split()) < 3 and not _mentioned(scene.request, scene.files):
        return None  # a greeting or one-word request: two looks are enough
    if "count" not in scene.done and (picks := _picks(scene)):
        return "wc -l -- " + " ".join(shlex.quote(p) for p in picks)
    if "head" not in scene.done and (target := _target(scene)):
        return f"head -n 20 -- {shlex.quote(target)}"
    return None


def _fence(lines: list[str]) -> list[str]:
    # A fence longer than any backtick run inside keeps quoted file text from breaking out.
    longest = max((len(m) for line in lines for m in re.findall(r"`+", line)), default=0)
    ticks = "`" * max(3, longest + 1)
    return [ticks, *lines, ticks]


_GREETING = re.compile(r"^\W*(hi|hello|hey|hallo|thanks|thank you|good (morning|evening))\b", re.I)
_COUNTING = re.compile(
    r"\b(how (many|big|long|large)|count|lines?|size|sizes|biggest|largest)\b", re.I
)
_TROUBLE = re.compile(r"\b(errors?|fail\w*|bugs?|broken|wrong|problems?|issues?|crash\w*)\b", re.I)


def _intent(scene: _Scene) -> str:
    """What the request is after, as far as a scripted model can tell: ``greeting``,
    ``problems``, ``counts``, ``file`` (names one seen) or ``overview``; it decides what the
    answer says first."""
    request = scene.request
    if _GREETING.match(request) and len(request.split()) <= 4:
        return "greeting"
    if _TROUBLE.search(request):
        return "problems"
    if _COUNTING.search(request):
        return "counts"
    if _mentioned(request, scene.files):
        return "file"
    return "overview"


def _answer(scene: _Scene, tools_available: bool) -> str:
    """The answer, from what the commands showed, led by what the request is after
    (:func:`_intent`). It never quotes the request back: a quoted line in the transcript
    reads like a message of the user's."""
    if not tools_available:
        return (
            "I am the offline demo model (scripted, no real language model) and no tool was "
            "offered to me, so I cannot look at anything. Connect a real model to get a real "
            "answer."
        )
    if not scene.request:
        return "I found no request to answer. *(Offline demo model: scripted and deterministic.)*"
    commands = [o.command for o in scene.obs if o.command]
    refused = [o for o in scene.obs if o.refused]
    if refused and len(refused) == len(scene.obs):
        return "\n".join(
            [
                f"I could not look at anything: {plural(len(refused), 'command')} "
                f"{'was' if len(refused) == 1 else 'were'} not run.",
                "",
                f"> {_one_line(refused[0].lines[0], 300)}",
                "",
                "*(Offline demo model: scripted and deterministic.)*",
            ]
        )
    where = f"`{scene.cwd}`" if scene.cwd else "the working directory"
    intent = _intent(scene)
    sections = {
        "here": _what_is_here(scene),
        "counts": _counts_section(scene),
        "heads": _heads_section(scene),
        "problems": _problems_section(scene, intent == "problems"),
    }
    order = {
        "greeting": ["here"],
        "file": ["heads", "counts", "here", "problems"],
        "counts": ["counts", "here", "heads", "problems"],
        "problems": ["problems", "here", "counts", "heads"],
        "overview": ["here", "counts", "heads", "problems"],
    }[intent]
    target = _target(scene) or "the files"
    opening = {
        "greeting": "Hello! I am the offline demo model. I can look around with read-only "
        "commands: ask about a file by name, the line counts, or problems.",
        "file": f"Here is what `{target}` holds, from its first lines.",
        "counts": "Here are the sizes of the main text files, in lines.",
        "problems": "I looked for problems: failed commands and errors in what they printed.",
        "overview": "Here is an overview of the project.",
    }[intent]
    if intent != "greeting" and not (scene.top_entries or scene.files):
        opening = "There are no files here: the folder is empty, so there is nothing to show."
    elif intent == "counts" and not _line_counts(scene):
        opening = "I found no text files to count lines in."
    out = [
        opening,
        f"I looked at {where} with {plural(len(commands), 'read-only command')}. "
        "*(Offline demo model: scripted and deterministic.)*",
    ]
    for name in order:
        out += sections[name]
    if not commands:
        out += ["", "The commands produced no output I could use."]
    return "\n".join(out)


def _what_is_here(scene: _Scene) -> list[str]:
    if not (scene.top_entries or scene.files):
        return []
    out = ["", "**What is here**"]
    if scene.top_entries:
        out.append(f"- {plural(scene.top_entries, 'entry', 'entries')} at the top level.")
    if scene.files:
        shown = ", ".join(f"`{f}`" for f in scene.files[:12])
        more = f" and {len(scene.files) - 12} more" if len(scene.files) > 12 else ""
        out.append(f"- {plural(len(scene.files), 'file')} within two levels: {shown}{more}.")
    return out


def _counts_section(scene: _Scene) -> list[str]:
    if not (counts := _line_counts(scene)):
        return []
    return ["", "**Line counts**", *(f"- `{f}`: {plural(n, 'line')}" for f, n in counts)]


def _heads_section(scene: _Scene) -> list[str]:
    out: list[str] = []
    for obs in scene.obs:
        if obs.kind == "head":
            name = obs.command.rsplit(" ", 1)[-1].strip("'")
            out += ["", f"**Start of `{name}`**", *_fence([_cut(x, 160) for x in obs.lines])]
    return out


def _problems_section(scene: _Scene, asked: bool) -> list[str]:
    problems = [o for o in scene.obs if o.exit_code not in (0, None)]
    # A listing names files (``error.log``); only what a command said counts as a problem.
    said = [o for o in scene.obs if o.kind not in _LISTINGS]
    errors = [(o, line) for o in said for line in o.lines if _ERROR.search(line)]
    if not (problems or errors):
        return (
            ["", "No command failed and nothing they printed mentions an error."] if asked else []
        )
    out = ["", "**Problems seen**"]
    out += [f"- `{o.command}` exited {o.exit_code}" for o in problems[:4]]
    out += [f"- `{_one_line(line, 160)}`" for _, line in errors[:4]]
    return out
