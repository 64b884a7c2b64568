"""What a bash call looks like to the model: the tool's JSON schema, the checks of the
arguments the model sent, and the one parser of a call's command out of them."""

from __future__ import annotations

import json
from typing import Any


def bash_schema(
    name: str, *, max_output_chars: int, default_timeout: float, max_timeout: float
) -> dict[str, Any]:
    """The OpenAI Chat Completions tool entry for the bash tool. The description says what
    a model cannot guess: the working directory persists, stdin is closed, long output is
    cut and saved, and how to run a server without blocking."""
    description = (
        "Run a shell command with `bash -c` and return its output (stdout and stderr "
        "merged, in order), exit code and duration. The working directory persists "
        "across calls: a `cd` sticks for the next call. Stdin is closed, so a command "
        "that waits for input gets end-of-file at once: pass input through arguments, "
        "files or here-documents, and use non-interactive flags. Output over "
        f"{max_output_chars} characters is cut to its head and tail; the full "
        "output is saved to a file whose path is given, which you can search with grep "
        "or read in parts with sed -n, head or tail. A command running longer than its "
        "timeout is killed with all its child processes. Start long-running servers in "
        "the background with their output redirected (`cmd > log 2>&1 &`)."
    )
    timeout = (
        f"Seconds before the command is killed (default {default_timeout:g}, max {max_timeout:g})."
    )
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The bash command to run."},
                    "timeout": {"type": "number", "description": timeout},
                },
                "required": ["command"],
                "additionalProperties": False,
            },
        },
    }


def command_of(arguments: str) -> str | None:
    """The ``command`` of a bash call's raw JSON arguments, exactly as it runs; None when
    the arguments are not JSON or name no command. The one parser of a call's command."""
    try:
        args = json.loads(arguments or "{}")
    except (ValueError, RecursionError):
        return None
    command = args.get("command") if isinstance(args, dict) else None
    return command if isinstance(command, str) else None


def parse_call(
    arguments: dict[str, Any], default_timeout: float, max_timeout: float
) -> tuple[str, float] | str:
    """The command and its timeout (capped at ``max_timeout``) from a call's decoded
    arguments, or the sentence telling the model what was wrong with them."""
    command = arguments.get("command")
    if not isinstance(command, str):
        return (
            "Invalid arguments: `command` is required and must be a string holding the "
            "bash command to run."
        )
    if not command.strip():
        return "Invalid arguments: `command` is empty; give a bash command to run."
    requested = arguments.get("timeout")
    if requested is None:
        return command, min(default_timeout, max_timeout)
    if isinstance(requested, bool) or not isinstance(requested, int | float):
        return f"Invalid arguments: `timeout` must be a number of seconds, got {requested!r}."
    if not requested > 0:  # also rejects NaN
        return f"Invalid arguments: `timeout` must be greater than 0 seconds, got {requested}."
    return command, min(float(requested), max_timeout)
