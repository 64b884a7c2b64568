"""The one terminal-safety filter against the Unicode database: its written-out table holds
every character of the categories it promises to write out, and nothing a person reads."""

from __future__ import annotations

import ast
import json
import unicodedata

from tools.terminal import has_unsafe, json_safe, notation, visible

WRITTEN_OUT = {"Cc", "Cf", "Zl", "Zp", "Co", "Cs"}
BLANK = "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0"
"""Default-ignorable characters outside those categories that draw nothing."""


def test_every_control_format_separator_and_private_character_is_written_out() -> None:
    missed = [
        f"U+{code:04X} {unicodedata.category(chr(code))}"
        for code in range(0x110000)
        if unicodedata.category(chr(code)) in WRITTEN_OUT
        and chr(code) not in "\t\n"
        and not has_unsafe(chr(code))
    ]
    assert missed == []
    for char in BLANK + "\U000e0100\U000e01ef":
        assert visible(char) == notation(char), f"U+{ord(char):04X}"


def test_what_a_person_reads_is_left_alone() -> None:
    readable = "ls -la\tkey=ä ß 日本語 😀 ❤\ufe0f \u2800 \u00a0 ǅ x\u0301\n"
    assert visible(readable) == readable
    wrongly = [
        f"U+{code:04X}"
        for code in range(0x20, 0x30000)
        if unicodedata.category(chr(code))[0] in "LNPS"
        and chr(code) not in BLANK
        and has_unsafe(chr(code))
    ]
    assert wrongly == []


def test_notations_and_json_escapes_give_back_the_text() -> None:
    text = "a\x1b\x9b\x85\u00ad\u202e\u2028\U000e0041\ud800z"
    shown = visible(text)
    assert shown == "a\\x1b\\x9b\\x85\\xad\\u202e\\u2028\\U000e0041\\ud800z"
    assert ast.literal_eval(f'"{shown}"') == text  # Python's notation: it reads back
    line = json_safe(json.dumps({"t": text}, ensure_ascii=False))
    assert not has_unsafe(line)
    assert json.loads(line) == {"t": text}
