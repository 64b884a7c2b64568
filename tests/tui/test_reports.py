"""Plain-text reports: the timeline table and JSON, and the Markdown export, from real logs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.llm.prices import ModelPrice, price_book
from agent.log.session import Session
from compact.reports.records import TimelineRecord
from compact.reports.timeline import timeline
from tests.compact import (
    answer,
    bash_step,
    compaction,
    failed_compaction,
    new_session,
    prune,
    user_turn,
)
from tui.cells import cells
from tui.shell.timeline_report import timeline_json, timeline_table
from tui.view.export import cap_output, export_markdown

FRAMED = "FRAMED-PREAMBLE continue without acknowledging it <compacted-summary>…"
RAW = "## Primary request and intent\nRAW-SUMMARY find why the build fails"
PLACEHOLDER = "[PLACEHOLDER output of make build masked; see spill file]"


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    s = new_session(tmp_path)
    yield s
    s.close()


def story(session: Session) -> None:
    """A turn with a bash call, a prune of its output, a checkpoint, a steered turn that
    is cancelled, and a failed compaction attempt."""
    user_turn(session, 1, "find why the build fails")
    _, result = bash_step(
        session, 1, 1, "make build", "cc -c parse.c\nerror: missing symbol parse_header\n"
    )
    answer(session, 1, 2, "The header parser was renamed to `parse_hdr`.")
    user_turn(session, 2, "fix it then")
    bash_step(session, 2, 1, "sed -i 's/parse_header/parse_hdr/' main.c", "")
    prune(session, result, PLACEHOLDER, tokens=9_700)
    answer(session, 2, 2, "Done: main.c now calls `parse_hdr`.")
    compaction(session, "c1", keep=1, framed=FRAMED, summary=RAW, focus="the parser")
    user_turn(session, 3, "run the tests")
    session.append("step/start", {"turn": 3, "step": 1})
    session.append("steering/message", {"content": "only the parser tests"})
    session.append("step/end", {"turn": 3, "step": 1})
    session.append("turn/end", {"turn": 3, "reason": "cancelled"})
    failed_compaction(session, "c2", "the summarizer returned nothing")


# --- timeline table and JSON ------------------------------------------------------------------


def test_table_has_a_row_per_record(session: Session) -> None:
    story(session)
    records = timeline(session.events)
    assert [r.kind for r in records] == ["prune", "compaction", "compaction"]
    lines = timeline_table(records, width=160).splitlines()
    assert len(lines) == 2 + len(records)
    header, _, prune_row, done_row, failed_row = lines
    assert header.split()[:10] == [
        "#",
        "trigger",
        "status",
        "started",
        "items",
        "tokens",
        "duration",
        "summary",
        "calls",
        "model",
    ]
    assert prune_row.split()[:3] == ["1", "prune", "done"]
    assert "1→1" in prune_row and "−9.7k" in prune_row
    assert re.search(r"\b\d\d:\d\d:\d\d\b", done_row)
    assert "38.1k→2.3k" in done_row and "summarizer-m" in done_row
    assert "[focus: the parser] RAW-SUMMARY find why" in done_row
    assert failed_row.split()[:3] == ["3", "manual", "failed"]
    assert "error: the summarizer returned nothing" in failed_row
    # What the summary calls cost, as reported (no cache figure: said so), and in dollars
    # only with a price for the summarizer.
    assert "900 in · cache not reported · 120 out" in done_row and "$" not in done_row
    priced = price_book({"summarizer-m": ModelPrice(1.0, 0.1, 10.0)})
    done_row = timeline_table(records, width=200, price_of=priced).splitlines()[3]
    assert "900 in · cache not reported · 120 out · ~<$0.01 est." in done_row


def test_table_survives_long_summaries_and_odd_characters(session: Session) -> None:
    user_turn(session, 1, "x")
    for step in (1, 2):
        bash_step(session, 1, step, "ls", "a\nb")
    odd = (
        "line one\n\tline two \x1b[31mred\x1b[0m \x00\x07 \u202eevil\u202c "
        + "宽字符テキスト🙂 " * 30
        + "e\u0301 "
        + "z" * 500
    )
    compaction(session, "c1", keep=1, summary=odd, model="a-very-long-model-name/" + "m" * 60)
    records = timeline(session.events)
    for width in (200, 120, 100, 80, 60, 50):
        table = timeline_table(records, width=width)
        lines = table.splitlines()
        assert len(lines) == 3
        assert all(cells(line) <= width for line in lines), table
        assert lines[2].endswith("…")
        assert lines[2].split()[:3] == ["1", "auto", "done"]
        assert "38.1k→2.3k" in lines[2]
        assert not any(re.search(r"[\x00-\x1f\u202e]", line) for line in lines)
    wide = timeline_table(records, width=200).splitlines()[2]
    assert "line one line two red evil 宽字符テキスト🙂" in wide
    assert "a-very-long-model-name/" in wide
    assert "model" not in timeline_table(records, width=60).splitlines()[0]


def test_empty_timeline() -> None:
    assert timeline_table([]) == "No compactions yet."
    assert json.loads(timeline_json([])) == []


def test_json_round_trips(session: Session) -> None:
    story(session)
    records = timeline(session.events)
    data = json.loads(timeline_json(records))
    assert [TimelineRecord.from_dict(obj) for obj in data] == records
    done = data[1]
    assert done["usage"] == {
        "prompt_tokens": 900,
        "completion_tokens": 120,
        "cached_tokens": None,  # the story's server named no cache figure: not reported
        "reasoning_tokens": 0,
    }
    assert (done["label"], done["saved_tokens"]) == ("auto", 35_800)
    assert done["duration_s"] >= 0
    assert data[0]["label"] == "prune" and data[0]["saved_tokens"] == 9_700


# --- Markdown export --------------------------------------------------------------------------


def test_export_shows_each_thing_once_and_in_order(session: Session) -> None:
    story(session)
    md = export_markdown(session)

    ordered = [
        f"# reefline session {session.id}",
        "## Turn 1",
        "**You**\n\nfind why the build fails",
        "$ make build\ncc -c parse.c\nerror: missing symbol parse_header",
        "missing symbol parse_header\n```\n*exit 0 · 0.2s*",
        "**Assistant**\n\nThe header parser was renamed",
        "## Turn 2",
        "**You**\n\nfix it then",
        "$ sed -i 's/parse_header/parse_hdr/' main.c",
        "> — 1 old tool result pruned to placeholders · −9.7k tokens —",
        "Done: main.c now calls",
        "> — context compacted (auto) · ",
        "<details>\n<summary>Summary</summary>\n\nFocus: the parser\n\n## Primary request",
        "RAW-SUMMARY",
        "## Turn 3",
        "**You**\n\nrun the tests",
        "**You** (while the agent worked)\n\nonly the parser tests",
        "*Turn 3 was cancelled.*",
    ]
    positions = []
    for needle in ordered:
        assert md.count(needle) == 1, needle
        positions.append(md.index(needle))
    assert positions == sorted(positions)

    # The checkpoint is a marker, never a user message; the prune placeholder is not shown
    # again; the failed attempt and injected context stay out of the transcript.
    assert "FRAMED-PREAMBLE" not in md
    assert PLACEHOLDER not in md
    assert md.count("**You**") == 4
    assert "missing symbol parse_header" in md
    assert "summarizer returned nothing" not in md
    assert "Turn 1 " not in md and "Turn 2 " not in md  # completed turns get no end line


def test_export_marker_counts_items_and_tokens(session: Session) -> None:
    user_turn(session, 1, "hello")
    bash_step(session, 1, 1, "ls", "a")
    answer(session, 1, 2, "hi")
    ev = compaction(session, "c1", keep=1, trigger="overflow", model="fallback")
    n = len(session.shadowed(ev["checkpoint"].seq))
    md = export_markdown(session)
    assert (
        f"> — context compacted (overflow, model-free fallback) · {n} items · 38.1k → 2.3k tokens —"
    ) in md


def test_export_caps_output_and_fences_backticks(session: Session) -> None:
    user_turn(session, 1, "show me")
    output = "\n".join(f"line {i}" for i in range(200)) + "\n```\nnot a fence end"
    bash_step(session, 1, 1, "cat big.txt\necho done", output)
    session.append(
        "assistant/message",
        {
            "turn": 1,
            "step": 2,
            "tool_calls": [{"id": "open", "name": "bash", "arguments": '{"command": "sleep 9"}'}],
            "finish_reason": "tool_calls",
            "model": "m",
        },
    )
    md = export_markdown(session)
    assert "[… 147 lines omitted …]" in md
    assert "line 0\n" in md and "line 100" not in md and "not a fence end" in md
    assert "````console\n$ cat big.txt\n> echo done\n" in md
    assert "$ sleep 9" in md and "*no result recorded*" in md


def test_cap_output_limits_characters() -> None:
    capped = cap_output("x" * 50_000)
    assert len(capped) < 8_200
    assert "characters omitted" in capped
    assert cap_output("short\ntext") == "short\ntext"


def test_export_marks_a_reply_cut_at_the_output_cap(session: Session) -> None:
    user_turn(session, 1, "a story")
    session.append("step/start", {"turn": 1, "step": 1})
    session.append(
        "assistant/message",
        {"turn": 1, "step": 1, "text": "Once upon a", "finish_reason": "length", "model": "m"},
    )
    answer(session, 2, 1, "A short one.")
    md = export_markdown(session)
    cut = md.index("cut off at the output cap")
    assert md.index("Once upon a") < cut < md.index("A short one.")
    assert md.count("cut off at the output cap") == 1  # the natural stop is not marked


def test_export_says_a_commands_exit_once(session: Session) -> None:
    """The tool's footer line is not repeated in the fence under which the notes say it."""
    user_turn(session, 1, "build it")
    bash_step(session, 1, 1, "make", "cc -o app main.c\n[exit 0 · 0.25s]")
    md = export_markdown(session)
    assert "cc -o app main.c\n```\n*exit 0 · 0.2s*" in md
    assert "[exit 0" not in md and md.count("exit 0") == 1
