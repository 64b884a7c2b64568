"""What a summary reads: originals of pruned results, capped, in chunks that fit."""

from __future__ import annotations

from pathlib import Path

from compact.basic.reading import RangeReader, plan_chunks
from compact.parts.originals import MASK_PREFIX, TRIM_MARK
from tests.compact.conftest import Rig, add_turn, server_model
from tests.compact.test_prune import big_result
from tests.openai_server import OpenAIServer


def planted(rig: Rig, turn: int, body: str) -> int:
    """A closed turn whose one tool result is ``body``; returns the result's seq."""
    s = rig.session
    s.append("turn/start", {"turn": turn})
    s.append("user/message", {"content": f"read notes {turn}"})
    cid = f"n{turn}"
    s.append(
        "assistant/message",
        {
            "turn": turn,
            "step": 1,
            "finish_reason": "tool_calls",
            "model": "m",
            "tool_calls": [{"id": cid, "name": "bash", "arguments": '{"command": "cat n.txt"}'}],
        },
    )
    seq = s.append(
        "tool/result",
        {"turn": turn, "step": 1, "call_id": cid, "name": "bash", "content": body, "exit_code": 0},
    ).seq
    s.append(
        "assistant/message",
        {"turn": turn, "step": 2, "text": "read", "finish_reason": "stop", "model": "m"},
    )
    s.append("turn/end", {"turn": turn, "reason": "completed"})
    return seq


def sent_text(server: OpenAIServer) -> str:
    return "\n".join(str(m.get("content")) for r in server.requests for m in r["messages"])


async def test_a_masked_result_reaches_the_summary_as_its_original(
    make_rig, openai_server: OpenAIServer
) -> None:
    rig = make_rig(pruner=True, model=server_model(openai_server))
    body = "config loaded\nthe staging port is 54329\n" + "ok line\n" * 200
    seq = planted(rig, 1, body)
    for t in range(2, 6):
        add_turn(rig.session, t, words=120)
    await rig.service.pruner.prune(protect_from=len(rig.session.surface) - 2, trigger="pressure")
    on_surface = rig.session.derive_messages()
    assert all("54329" not in str(m.get("content")) for m in on_surface)  # masked
    openai_server.push({"text": "## Primary request and intent\n- read notes"})
    assert await rig.service.compact_now(rig.agent.envelope()) is not None
    [request] = openai_server.requests
    # The conversation byte for byte up to the newest step (the placeholder included: a
    # provider's cache serves it), then the original after it, named by its call, before
    # the instruction.
    prefix = request["messages"][1:-1]
    assert prefix == on_surface[: len(prefix)]
    assert any(m.get("tool_call_id") == "n1" for m in prefix)
    final = request["messages"][-1]["content"]
    assert f"(tool call n1)\n{body}" in final
    assert final.index(body) < final.index("Write a checkpoint summary")
    assert rig.session.events[seq].data.content == body  # the log still holds it


async def test_a_huge_original_is_read_head_and_tail_and_names_its_file(
    make_rig, openai_server: OpenAIServer
) -> None:
    rig = make_rig(pruner=True, model=server_model(openai_server), window=32_000)
    body = "HEAD-MARK\n" + "filler line\n" * 600 + "MIDDLE-MARK\n" + "filler line\n" * 600
    body += "TAIL-MARK\n"
    planted(rig, 1, body)
    for t in range(2, 5):
        add_turn(rig.session, t, words=120)
    await rig.service.pruner.prune(protect_from=len(rig.session.surface) - 2, trigger="pressure")
    assert MASK_PREFIX in str(rig.session.derive_messages())  # masked on the surface
    openai_server.push({"text": "## Primary request and intent\n- read notes"})
    assert await rig.service.compact_now(rig.agent.envelope()) is not None
    text = openai_server.requests[-1]["messages"][-1]["content"]  # where originals go
    assert "HEAD-MARK" in text and "TAIL-MARK" in text and "MIDDLE-MARK" not in text
    marker = next(line for line in text.splitlines() if TRIM_MARK in line)
    path = marker.split("full output: ")[1].split(" …]")[0]
    assert Path(path).read_text() == body  # what was cut is recoverable from the file


async def test_chunks_keep_order_and_cut_a_unit_too_big_for_any_chunk(make_rig, estimator) -> None:
    rig = make_rig(window=None)
    big = big_result(rig, 1, 20_000)
    for t in range(2, 8):
        add_turn(rig.session, t, words=80)
    reader = RangeReader(rig.session, estimator)
    units = await reader.units(list(rig.session.surface))
    assert [seq for u in units for seq in u.seqs] == list(rig.session.surface)
    chunks = plan_chunks(units, 1500, 1200, reader.fit)
    flat = [seq for chunk in chunks for u in chunk for seq in u.seqs]
    assert flat == list(rig.session.surface)  # nothing left out, nothing reordered
    for index, chunk in enumerate(chunks):
        budget = 1500 if index == 0 else 1200
        assert sum(u.tokens for u in chunk) <= budget or len(chunk) == 1
    # The big output's unit was cut harder to fit one chunk, its file still named.
    unit = next(u for c in chunks for u in c if big in u.seqs)
    assert unit.tokens <= 1500
    tool = next(m for m in unit.messages if m["role"] == "tool")
    assert TRIM_MARK in tool["content"]
