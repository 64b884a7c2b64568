"""The model-free checkpoint: used when an automatic or overflow compaction cannot get a
summary from the model.

Weak local models often fail to summarize (they ramble past the output cap, call a tool, or
the request overflows the window that just overflowed). This builds a checkpoint from the
messages alone: the user's messages verbatim within a budget, the commands run with their
exit codes, the last error lines seen, and the file paths mentioned, merged with the
sections of an earlier checkpoint (or of the model's checkpoint so far) when one leads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from compact.prune import command_text

MODEL = "fallback"
_PATH = re.compile(
    r"(?<![\w/.-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+\.\w{1,8}\b"
    r"|\b[\w-]+\.(?:py|md|txt|toml|json|ya?ml|js|ts|rs|go|c|h|cpp|sh|cfg|ini|lock)\b"
)
_ERROR = re.compile(r"error|Error|ERROR|failed|FAILED|Traceback|exception|Exception")
_EXIT = re.compile(r"\[exit (-?\d+)")
EARLIER_BULLETS = 12
"""Bullets kept per section from an earlier checkpoint being merged."""
NONE_BULLETS = {"- (none)", "(none)", "- (none seen)", "- (none recorded)"}


def fallback_summary(messages: Sequence[Mapping[str, Any]], budget_chars: int = 6000) -> str:
    """An extractive checkpoint in the usual sections, at most about ``budget_chars``."""
    requests: list[str] = []
    commands: list[str] = []
    errors: list[str] = []
    paths: dict[str, None] = {}
    pending: dict[str, str] = {}
    earlier: dict[str, list[str]] = {}
    for message in messages:
        role = message.get("role")
        content = message.get("content") or ""
        text = content if isinstance(content, str) else json.dumps(content)
        if role == "user" and "<compacted-summary>" in text:
            # An earlier checkpoint (or the model's checkpoint so far): merged, not quoted.
            for heading, bullets in checkpoint_sections(text).items():
                earlier.setdefault(heading, []).extend(bullets)
            continue
        if role == "user":
            requests.append(text.strip())
        for call in message.get("tool_calls") or ():
            fn = call.get("function", {})
            pending[call.get("id", "")] = command_text(
                fn.get("name", "tool"), fn.get("arguments", ""), limit=120
            )
        if role == "tool":
            command = pending.pop(message.get("tool_call_id", ""), "tool call")
            codes = _EXIT.findall(text)
            commands.append(f"`{command}` → exit {codes[-1]}" if codes else f"`{command}`")
            errors += [line.strip() for line in text.splitlines() if _ERROR.search(line)]
        for match in _PATH.findall(text):
            paths.setdefault(match, None)

    share = budget_chars // 2
    kept: list[str] = []
    used = 0
    for request in reversed(requests):  # the newest requests matter most
        piece = request if len(request) <= share - used else request[: max(0, share - used)] + "…"
        if used >= share:
            break
        kept.insert(0, piece)
        used += len(piece)
    sections = {
        "Primary request and intent": [f"User: {r}" for r in kept] or ["(none recorded)"],
        "Key technical concepts": ["(not extracted: model-free checkpoint)"],
        "Files and code": list(paths)[-20:] or ["(none seen)"],
        "Errors and fixes": errors[-8:] or ["(none seen)"],
        "Pending tasks": ["(unknown: review the last request)"],
        "Current work": commands[-15:] or ["(no commands run)"],
        "Next step": ["Continue with the user's latest request."],
        "Critical context": [
            "This checkpoint was built without a model (the model could not summarize); "
            "re-read files or re-run commands for exact details."
        ],
    }
    out = []
    for heading, items in sections.items():
        older = earlier.get(heading.lower(), [])[-EARLIER_BULLETS:]
        out.append(f"## {heading}")
        out += [f"- {_one_line(item, 1500)}" for item in dict.fromkeys([*older, *items])]
        out.append("")
    return "\n".join(out).strip()[: budget_chars + 2000]


def checkpoint_sections(text: str) -> dict[str, list[str]]:
    """The bullets of each ``## Heading`` inside a framed checkpoint (headings lowercased)."""
    body = text.split("<compacted-summary>", 1)[-1].split("</compacted-summary>", 1)[0]
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith("## "):
            current = sections.setdefault(stripped[3:].strip().lower(), [])
        elif stripped and current is not None and stripped not in NONE_BULLETS:
            current.append(stripped.removeprefix("- ").strip())
    return sections


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
