"""The demo model's summarizer part: an extractive checkpoint in the eight sections, capped
per section, merging an earlier checkpoint, shrunk to fit an output cap."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from compact.parts.checkpoint import SECTIONS, checkpoint_sections
from tui.demo.reading import (
    _CAP,
    _DATA_NOTE,
    _ERROR,
    _LISTINGS,
    _LS_LINE,
    _PATH,
    _TEXT_EXT,
    _is_checkpoint,
    _is_request,
    _observations,
    _one_line,
    _text,
    _workdir,
)

# --- the summarizer part ----------------------------------------------------------------------


def _merge(earlier: list[str], new: list[str], cap: int, keep_first: bool = False) -> list[str]:
    items = list(dict.fromkeys([*earlier, *new]))
    if len(items) <= cap:
        return items
    return [items[0], *items[-(cap - 1) :]] if keep_first else items[-cap:]


TYPES_SEEN = "File types seen: "
_LABEL = re.compile(r"([A-Z][A-Za-z ]{2,30}): ")


def _types_seen(bullets: list[str]) -> set[str]:
    """The file types an earlier checkpoint's ``File types seen`` bullet names: a merged
    checkpoint says them once, with the new ones."""
    return {
        t.strip()
        for b in bullets
        if b.startswith(TYPES_SEEN)
        for t in b.removeprefix(TYPES_SEEN).split(",")
        if t.strip()
    }


def _unlabelled(earlier: list[str], fresh: list[str]) -> list[str]:
    """``earlier`` without the bullets a fresh one of the same label (``Working directory:``,
    ``File types seen:``) states anew: a label is said once, as it stands now."""
    labels = {m.group(1) for b in fresh if (m := _LABEL.match(b))}
    return [b for b in earlier if not ((m := _LABEL.match(b)) and m.group(1) in labels)]


def _listed_files(kind: str | None, line: str) -> list[str]:
    """The regular files a listing's ``line`` names (``find -type f``, ``wc -l``, or an
    ``ls -l`` row of a file): their extensions are real ones, unlike a dotted module name
    (``agent.chat``) or a folder (``reefline.egg-info``) in other output."""
    if kind == "find" and line.strip().startswith("./"):
        return [line.strip().removeprefix("./")]
    if kind == "count" and len(parts := line.split(maxsplit=1)) == 2 and parts[1] != "total":
        return [parts[1].removeprefix("./")]
    if kind == "list" and (m := _LS_LINE.match(line)) and m.group(1) == "-":
        return [m.group(3)]
    return []


def _checkpoint(messages: Sequence[Mapping[str, Any]]) -> str:
    """One pass over the messages fills every section at once; split, each part would walk the
    messages again."""
    old: dict[str, list[str]] = {}
    requests, files, errors, work, concepts = [], [], [], [], []
    observed: list[str] = []  # files a listing named (text names modules like agent.chat)
    last_request, answered, last_answer = "", False, ""
    for message in messages:
        text = _text(message)
        if message.get("role") == "user" and _is_checkpoint(text):
            for heading, bullets in checkpoint_sections(text).items():
                old.setdefault(heading, []).extend(bullets)
            continue
        if _is_request(message):
            last_request, answered = text, False
            requests.append(f'User: "{_one_line(text, 200)}"')
        elif message.get("role") == "assistant" and text.strip() and not message.get("tool_calls"):
            answered, last_answer = True, text
        if message.get("role") != "tool":
            files += [p.removeprefix("./") for p in _PATH.findall(text)]
    obs = _observations(messages)
    cwd = _workdir(messages)
    for o in obs:
        outcome = f" → exit {o.exit_code}" if o.exit_code is not None else ""
        work.append(f"`{_one_line(o.command, 160)}`{outcome}" if o.command else "")
        for line in o.lines:
            seen = [p.removeprefix("./") for p in _PATH.findall(line)]
            files += seen
            observed += _listed_files(o.kind, line)
            if o.kind not in _LISTINGS and _ERROR.search(line):
                errors.append(_one_line(line, 160))
        if o.exit_code not in (0, None):
            errors.append(f"`{_one_line(o.command, 120)}` exited {o.exit_code}")
    # Spill files named by pruned results are bookkeeping, not project files.
    files = [
        f
        for f in files
        if ".spill/" not in f and ("/" in f or PurePosixPath(f).suffix.lstrip(".") in _TEXT_EXT)
    ]
    if cwd:
        concepts.append(f"Working directory: `{cwd}`")
    if obs:
        concepts.append("Exploring with read-only bash commands")
    exts = {PurePosixPath(f).suffix for f in observed if PurePosixPath(f).suffix}
    exts |= _types_seen(old.get("key technical concepts", []))
    if exts:
        concepts.append(TYPES_SEEN + ", ".join(sorted(exts)[:8]))
    if said := [x for x in last_answer.splitlines() if x.strip() and not x.startswith(">")]:
        work.append("Last answer began: " + _one_line(said[0], 160))
    if last_request:
        pending = [] if answered else [f'Answer "{_one_line(last_request, 160)}"']
    else:  # no request in this span: an earlier pending task stands unless answered here
        pending = [] if answered else old.get("pending tasks", [])
    step = (
        "Continue the read-only exploration, then answer the pending request"
        if pending
        else "Wait for the next request"
    )
    fresh: dict[str, tuple[list[str], int]] = {
        "Primary request and intent": (requests, _CAP["requests"]),
        "Key technical concepts": (concepts, _CAP["concepts"]),
        "Files and code": ([f"`{f}`" for f in files], _CAP["files"]),
        "Errors and fixes": (errors, _CAP["errors"]),
        "Current work": ([w for w in work if w], _CAP["work"]),
        "Critical context": ([_DATA_NOTE], _CAP["critical"]),
    }
    body = {"Pending tasks": pending, "Next step": [step]}
    for heading, (items, cap) in fresh.items():
        # The first request is the root intent: it survives every merge.
        first = heading == "Primary request and intent"
        earlier = old.get(heading.lower(), [])
        if heading == "Key technical concepts":
            earlier = _unlabelled(earlier, items)
        body[heading] = _merge(earlier, items, cap, keep_first=first)
    out: list[str] = []
    for heading in SECTIONS:
        out += [f"## {heading}", *(f"- {b}" for b in body[heading] or ["(none)"]), ""]
    return "\n".join(out).rstrip() + "\n"


def _shrink(checkpoint: str, fits: Callable[[str], bool]) -> str:
    """Drop the last bullet of the longest section until the checkpoint fits (a real model
    given a small ``max_tokens`` writes a terser summary rather than stopping mid-way)."""
    sections = [block.split("\n") for block in checkpoint.strip().split("\n\n")]
    text = checkpoint
    while not fits(text):
        longest = max(sections, key=len)
        if len(longest) <= 2:  # heading + one bullet everywhere: nothing more to drop
            break
        longest.pop()
        text = "\n\n".join("\n".join(block) for block in sections) + "\n"
    return text
