"""The command layer: the slash-command table and its parsing (the shared actions are
tested through the app and the REPL that render them)."""

from __future__ import annotations

import pytest

from tui.commands.run import (
    SLASH_COMMANDS,
    SLASH_USAGE,
    closest_command,
    parse_slash,
    slash_help,
    unknown_command_text,
)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("/compact the parser", ("compact", "the parser")),
        ("/compact", ("compact", "")),
        ("  /Compact   spaced out  ", ("compact", "spaced out")),
        ("/compact focus\non two lines", ("compact", "focus\non two lines")),
        ("/resume 3f2a9c", ("resume", "3f2a9c")),
        ("/compcat x", ("compcat", "x")),
        ("hello", None),
        ("", None),
        ("/", None),
        ("//not a command", None),
        ("/etc/hosts looks odd", None),
        ("what about /compact?", None),
    ],
)
def test_parse_slash(text: str, parsed: tuple[str, str] | None) -> None:
    assert parse_slash(text) == parsed


def test_the_command_set() -> None:
    assert list(SLASH_COMMANDS) == [
        "help",
        "compact",
        "uncompact",
        "summary",
        "context",
        "timeline",
        "new",
        "sessions",
        "resume",
        "rewind",
        "diff",
        "export",
        "model",
        "approve",
        "quit",
        "mcp",
        "memory",
        "remember",
        "rename",
    ]
    assert set(SLASH_USAGE) == set(SLASH_COMMANDS)
    assert all(help_ and "\n" not in help_ for help_ in SLASH_COMMANDS.values())
    lines = slash_help().splitlines()
    assert len(lines) == len(SLASH_COMMANDS)
    assert lines[1].startswith("/compact [--dry-run] [focus]")


@pytest.mark.parametrize(
    ("name", "guess"),
    [
        ("compact", "compact"),
        ("compcat", "compact"),
        ("COMPACT", "compact"),
        ("comp", "compact"),
        ("timelin", "timeline"),
        ("sesions", "sessions"),
        ("qiut", "quit"),
        ("xyzzy", None),
    ],
)
def test_closest_command(name: str, guess: str | None) -> None:
    assert closest_command(name) == guess


def test_unknown_command_text() -> None:
    assert unknown_command_text("compcat") == "Unknown command /compcat — did you mean /compact?"
    assert unknown_command_text("xyzzy") == "Unknown command /xyzzy — type /help for the list."
