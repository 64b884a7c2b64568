"""Surface replace rules and derived messages, through a real session on disk."""

from __future__ import annotations

import pytest

from agent.log.session import Session, SurfaceError
from tests.agent.conftest import assistant, replace, result, user


def test_replace_splices_exactly_its_span(session: Session) -> None:
    seqs = [user(session, f"m{i}").seq for i in range(5)]
    new = replace(session, seqs[1], seqs[3], "summary")
    assert list(session.surface) == [seqs[0], new.seq, seqs[4]]
    assert session.shadowed(new.seq) == seqs[1:4]
    assert [m["content"] for m in session.derive_messages()] == ["m0", "summary", "m4"]


def test_single_node_replace(session: Session) -> None:
    a, b = user(session, "a").seq, user(session, "b").seq
    new = replace(session, b, b, "B")
    assert list(session.surface) == [a, new.seq]
    assert session.replace_generation == 1


@pytest.mark.parametrize("which", ["start", "end"])
def test_replace_endpoint_missing(session: Session, which: str) -> None:
    a = user(session, "a").seq
    start, end = (999, a) if which == "start" else (a, 999)
    with pytest.raises(SurfaceError, match=f"{which} 999 is not on the surface"):
        replace(session, start, end, "x", cite=[a])


def test_replace_start_positioned_after_end(session: Session) -> None:
    a, b = user(session, "a").seq, user(session, "b").seq
    with pytest.raises(SurfaceError, match="comes after"):
        replace(session, b, a, "x", cite=[a, b])
    assert list(session.surface) == [a, b] and session.replace_generation == 0


def test_second_head_replace_with_start_numerically_after_end(session: Session) -> None:
    seqs = [user(session, f"m{i}").seq for i in range(4)]
    first = replace(session, seqs[0], seqs[1], "S1")
    more = user(session, "m4").seq
    # The head is now the checkpoint (high seq) and the next node has a lower seq.
    assert first.seq > seqs[2]
    second = replace(session, first.seq, seqs[2], "S2")
    assert list(session.surface) == [second.seq, seqs[3], more]
    assert session.replace_generation == 2
    assert [m["content"] for m in session.derive_messages()] == ["S2", "m3", "m4"]


def test_replacement_must_cite_every_shadowed_seq(session: Session) -> None:
    seqs = [user(session, f"m{i}").seq for i in range(3)]
    with pytest.raises(SurfaceError, match=rf"missing \[{seqs[1]}\]"):
        replace(session, seqs[0], seqs[2], "x", cite=[seqs[0], seqs[2]])
    assert len(session.events) == 4  # nothing written


def _tool_session(session: Session) -> tuple[int, int]:
    user(session, "go")
    call = assistant(session, calls=["c1"]).seq
    res = result(session, "c1", "long output").seq
    return call, res


def test_tool_result_replace_changes_only_content(session: Session) -> None:
    _, res = _tool_session(session)
    old = session.events[res].data.model_dump()
    new = session.append(
        "tool/result",
        {**old, "content": "[pruned]"},
        surface_op={"op": "replace", "start": res, "end": res},
        source_event_seqs=[res],
    )
    assert session.derive_messages()[-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "[pruned]",
    }
    assert list(session.surface)[-1] == new.seq


def test_tool_result_replace_must_shadow_one_tool_result(session: Session) -> None:
    call, res = _tool_session(session)
    old = session.events[res].data.model_dump()
    with pytest.raises(SurfaceError, match="exactly one tool/result"):
        session.append(
            "tool/result",
            {**old, "content": "x"},
            surface_op={"op": "replace", "start": call, "end": res},
            source_event_seqs=[call, res],
        )
    with pytest.raises(SurfaceError, match="exactly one tool/result"):
        session.append(
            "tool/result",
            {**old, "content": "x"},
            surface_op={"op": "replace", "start": call, "end": call},
            source_event_seqs=[call],
        )
    with pytest.raises(SurfaceError, match="only the content"):
        session.append(
            "tool/result",
            {**old, "content": "x", "call_id": "other"},
            surface_op={"op": "replace", "start": res, "end": res},
            source_event_seqs=[res],
        )


def test_replace_generation_counts_replaces(session: Session) -> None:
    for i in range(3):
        a = user(session, f"x{i}").seq
        replace(session, a, a, f"y{i}")
        user(session, "between")
    assert session.replace_generation == 3


def test_derive_excludes_shadowed_and_empty_assistant(session: Session) -> None:
    user(session, "q")
    assistant(session, text="")  # hosts usage only: derives to nothing
    call = assistant(session, calls=["c9"], step=2)
    result(session, "c9", "files", step=2)
    messages = session.derive_messages()
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[1]["tool_calls"][0]["id"] == "c9"
    assert messages[1]["content"] == ""  # not null: llama-cpp-python refuses a null
    s = replace(session, session.surface[0], call.seq, "cp", cite=list(session.surface[:3]))
    assert session.derive_messages() == [
        {"role": "user", "content": "cp"},
        {"role": "tool", "tool_call_id": "c9", "content": "files"},
    ]
    assert s.seq == session.surface[0]


def test_reasoning_is_never_sent_back(session: Session) -> None:
    session.append(
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "text": "hi",
            "reasoning": "secret chain",
            "finish_reason": "stop",
            "model": "m",
        },
    )
    assert session.derive_messages() == [{"role": "assistant", "content": "hi"}]


def test_surface_only_holds_surface_types(session: Session) -> None:
    session.append("turn/start", {"turn": 1})
    u = user(session, "x")
    session.append("step/start", {"turn": 1, "step": 1})
    assert list(session.surface) == [u.seq]
