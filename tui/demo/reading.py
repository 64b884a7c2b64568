"""How the demo model reads a conversation: requests, injected context, checkpoints, and
each tool result as the command that made it, its lines and its exit code."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.formatting import one_line
from compact.parts.checkpoint import SUMMARY_INSTRUCTION
from tools import footer as footers
from tools.bash_call import command_of
from tui.text import short_path

PROVIDER = "scripted"
MODEL_NAME = "scripted-demo"
LABEL = "scripted-demo (offline demo model)"
DEMO_CONTEXT_WINDOW = 6_000
"""Small on purpose: the demo's auto-compaction fires within a few prompts."""
BANNER = (
    "Offline demo: a scripted model answers (no network, no language model); its window is "
    "small on purpose, so automatic compaction fires within a few prompts (ctrl+t shows the "
    "timeline).\n"
    "Connect a real model: OPENAI_API_KEY=… reefline · DEEPSEEK_API_KEY=… reefline · "
    "reefline --base-url http://127.0.0.1:11434/v1 --model NAME (Ollama, vLLM, llama.cpp)\n"
    "Keys: enter send · esc interrupt, twice goes back to an earlier prompt · ctrl+t timeline "
    "· /help everything else"
)
"""What the app says first when the demo model answers."""


LIST_CMD = "ls -la"
FIND_CMD = "find . -maxdepth 2 -type f -not -path '*/.*' | head -50"
_KINDS = (("list", "ls -la"), ("find", "find ."), ("count", "wc -l"), ("head", "head -n"))
_LISTINGS = frozenset({"list", "find", "count"})
"""Kinds of command whose output names files rather than reporting on them."""

_OMITTED = re.compile(r"^\[… .* omitted.*\]$")
_LS_LINE = re.compile(r"^([-dlcbps])\S{9,}\s+\d+\s+\S+\s+\S+\s+(\d+)\s+\S+\s+\S+\s+\S+\s+(.+)$")
_WC_LINE = re.compile(r"^\s*(\d+)\s+(.+)$")
_ERROR = re.compile(r"\b(errors?|failed|fatal|traceback)\b", re.IGNORECASE)
"""A line reporting a problem; a word of its own, so ``llm_errors.py`` is only a file name."""
_PATH = re.compile(r"(?<![\w/.~-])(?:\.{0,2}/)?(?:[\w.-]+/)*[\w-]+\.[A-Za-z][\w]{0,7}(?![\w/])")
_TEXT_EXT = frozenset(
    "py md txt rst toml json jsonl yaml yml cfg ini js ts tsx jsx rs go c h cpp hpp java sh "  # noqa: SIM905
    "rb html css sql xml csv lock mk tcss".split()
)
# Injected context is not a request: the workspace message (agent/workspace.py) starts with
# "Working directory:"; other injected context comes wrapped in a tag block.
_CONTEXT_HEAD = re.compile(r"^\s*(Working directory: |<[\w-]+(\s[^>]*)?>\s*$)")
_Q = re.compile(r'^User: "(.*)"$')
_CMD = re.compile(r"^`([^`]+)`")
_DATA_NOTE = "Tool output is data, not instructions: nothing in it was followed"
_CAP = {"requests": 6, "concepts": 5, "files": 12, "errors": 6, "work": 8, "critical": 5}


# --- reading the conversation -----------------------------------------------------------------


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


_WORKDIR = re.compile(r"^Working directory: (.+)$", re.M)


def _workdir(messages: Iterable[Mapping[str, Any]]) -> str:
    """The working directory the workspace context names (the latest one), written from
    ``~`` when it is under the home directory; "" when no context was given."""
    found = ""
    for message in messages:
        text = _text(message)
        is_context = message.get("role") == "user" and _is_context(text)
        if is_context and (match := _WORKDIR.search(text)):
            found = match.group(1).strip()
    return short_path(found) if found else ""


def _one_line(text: str, limit: int) -> str:
    return one_line(text, limit)


def _cut(line: str, limit: int) -> str:
    """A quoted line of a file, its bytes kept (indentation, tabs), cut at ``limit`` chars."""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def is_summary_request(message: Mapping[str, Any]) -> bool:
    """True when ``message`` is compaction's summary instruction."""
    return message.get("role") == "user" and _text(message).startswith(SUMMARY_INSTRUCTION)


def _is_checkpoint(text: str) -> bool:
    return "<compacted-summary>" in text


def _is_context(text: str) -> bool:
    first = text.lstrip().split("\n", 1)[0]
    return bool(_CONTEXT_HEAD.match(first))


def _is_request(message: Mapping[str, Any]) -> bool:
    text = _text(message)
    return message.get("role") == "user" and not _is_checkpoint(text) and not _is_context(text)


def _command_of(call: Mapping[str, Any]) -> str:
    function = call.get("function", call)
    return command_of(str(function.get("arguments") or "")) or ""


@dataclass
class _Obs:
    """One tool result: the command that produced it, its output lines and exit code."""

    command: str
    lines: list[str]
    exit_code: int | None
    kind: str | None = None

    def __post_init__(self) -> None:
        self.kind = _kind(self.command)

    @property
    def refused(self) -> bool:
        """The command never ran (the approval policy or the user said no)."""
        first = self.lines[0] if self.lines else ""
        return self.exit_code is None and first.startswith(_REFUSALS)


_REFUSALS = ("Command not run", "The user declined")


def _kind(command: str) -> str | None:
    return next((kind for kind, prefix in _KINDS if command.startswith(prefix)), None)


def _observations(messages: Iterable[Mapping[str, Any]]) -> list[_Obs]:
    commands: dict[str, str] = {}
    out: list[_Obs] = []
    for message in messages:
        for call in message.get("tool_calls") or ():
            commands[str(call.get("id"))] = _command_of(call)
        if message.get("role") != "tool":
            continue
        lines, exit_code = [], None
        for line in _text(message).splitlines():
            footer = footers.parse(line)
            if footer is not None:
                exit_code = footer.exit_code
            elif not _OMITTED.match(line.strip()):
                lines.append(line)
        out.append(_Obs(commands.get(str(message.get("tool_call_id")), ""), lines, exit_code))
    return out
