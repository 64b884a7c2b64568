"""What an edit call looks like to the model: the tool's JSON schema (kept short: it is sent
with every request), the checks of the arguments the model sent, and the one parser of a
call's path out of its raw JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

NOT_MADE = "Edit not made"
"""How the output of an edit the approval policy or the sandbox stopped begins."""


def edit_schema(name: str, *, max_bytes: int) -> dict[str, Any]:
    """The OpenAI Chat Completions tool entry for the edit tool."""
    description = (
        "Replace exact text in a file (prefer this to sed or printf for changing files). "
        "`old_string` must match once, whitespace included, unless `replace_all`; an empty "
        "`old_string` creates a new file holding `new_string`. Paths are relative to the "
        "workspace root. Text files up to "
        f"{max_bytes // 1_000_000 or 1} MB."
    )
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "old_string": {"type": "string"},
                    "new_string": {"type": "string"},
                    "replace_all": {"type": "boolean"},
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": False,
            },
        },
    }


@dataclass(frozen=True)
class EditCall:
    """An edit call's arguments, checked."""

    path: str
    old_string: str
    new_string: str
    replace_all: bool = False


def parse_edit(arguments: dict[str, Any]) -> EditCall | str:
    """The call from its decoded arguments, or the sentence telling the model what was wrong
    with them."""
    for key in ("path", "old_string", "new_string"):
        if not isinstance(arguments.get(key), str):
            return (
                f"Invalid arguments: `{key}` is required and must be a string "
                "(`path`, `old_string`, `new_string`; `replace_all` optional)."
            )
    replace_all = arguments.get("replace_all", False)
    if replace_all is None:
        replace_all = False
    if not isinstance(replace_all, bool):
        return f"Invalid arguments: `replace_all` must be true or false, got {replace_all!r}."
    unknown = sorted(set(arguments) - {"path", "old_string", "new_string", "replace_all"})
    if unknown:
        return f"Invalid arguments: unknown argument(s) {', '.join(unknown)}."
    call = EditCall(
        arguments["path"], arguments["old_string"], arguments["new_string"], replace_all
    )
    if not call.path.strip():
        return "Invalid arguments: `path` is empty; give the file's path."
    if call.old_string == call.new_string:
        return "Invalid arguments: `old_string` and `new_string` are the same: nothing to change."
    return call


def path_of(arguments: str) -> str | None:
    """The ``path`` of a call's raw JSON arguments (an edit's file); None when the arguments
    are not JSON or name no path. For showing a call (a card's title, a line of the REPL, a
    checkpoint's files)."""
    try:
        args = json.loads(arguments or "{}")
    except (ValueError, RecursionError):
        return None
    path = args.get("path") if isinstance(args, dict) else None
    return path if isinstance(path, str) else None
