"""Property: any sequence of appends and valid replaces reloads to the same state, and the
cached derive always equals a from-scratch fold of the log."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.log.events import SurfaceReplace
from agent.log.messages import event_message
from agent.log.repair import dangling_call_closers
from agent.log.session import Session
from agent.turns import unanswered_tool_calls

op = st.one_of(
    st.tuples(st.just("user"), st.text(max_size=20)),
    st.tuples(st.just("call"), st.integers(1, 3)),
    st.tuples(st.just("log"), st.just(0)),
    st.tuples(st.just("replace"), st.floats(0, 1), st.floats(0, 1)),
    st.tuples(st.just("prune"), st.floats(0, 1)),
    st.tuples(st.just("derive"), st.just(0)),
)


def independent_fold(session: Session) -> tuple[list[int], int]:
    """The surface recomputed from the log alone, the simplest possible way."""
    nodes: list[int] = []
    generation = 0
    for ev in session.events:
        if not ev.on_surface:
            continue
        if isinstance(ev.surface_op, SurfaceReplace):
            i, j = nodes.index(ev.surface_op.start), nodes.index(ev.surface_op.end)
            nodes = [*nodes[:i], ev.seq, *nodes[j + 1 :]]
            generation += 1
        else:
            nodes.append(ev.seq)
    return nodes, generation


def scratch_messages(session: Session) -> list[dict]:
    out = []
    for seq in session.surface:
        m = event_message(session.events[seq])
        if m is not None:
            out.append(m)
    return out


def apply(session: Session, ops: list[tuple], counter: list[int]) -> None:
    for o in ops:
        kind = o[0]
        if kind == "user":
            session.append("user/message", {"content": o[1]})
        elif kind == "log":
            session.append("step/start", {"turn": 1, "step": 1})
        elif kind == "call":
            ids = []
            for _ in range(o[1]):
                counter[0] += 1
                ids.append(f"c{counter[0]}")
            session.append(
                "assistant/message",
                {
                    "turn": 1,
                    "step": 1,
                    "text": "",
                    "finish_reason": "tool_calls",
                    "model": "m",
                    "tool_calls": [{"id": i, "name": "bash", "arguments": "{}"} for i in ids],
                },
            )
            for i in ids:
                session.append(
                    "tool/result",
                    {"turn": 1, "step": 1, "call_id": i, "name": "bash", "content": f"out {i}"},
                )
        elif kind == "replace" and session.surface:
            nodes = list(session.surface)
            a = int(o[1] * (len(nodes) - 1))
            b = int(o[2] * (len(nodes) - 1))
            i, j = min(a, b), max(a, b)
            session.append(
                "user/message",
                {"content": f"summary {i}-{j}", "source": "compact"},
                surface_op={"op": "replace", "start": nodes[i], "end": nodes[j]},
                source_event_seqs=sorted(nodes[i : j + 1]),
            )
        elif kind == "prune":
            results = [s for s in session.surface if session.events[s].type == "tool/result"]
            if results:
                target = results[int(o[1] * (len(results) - 1))]
                data = session.events[target].data.model_dump()
                session.append(
                    "tool/result",
                    {**data, "content": "[pruned]"},
                    surface_op={"op": "replace", "start": target, "end": target},
                    source_event_seqs=[target],
                )
        elif kind == "derive":
            assert session.derive_messages() == scratch_messages(session)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=30))
def test_reload_and_cached_derive_match_a_fresh_fold(ops: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        session = Session.create(home, cwd=tmp)
        apply(session, ops, [0])
        assert (list(session.surface), session.replace_generation) == independent_fold(session)
        assert session.derive_messages() == scratch_messages(session)
        state = (list(session.surface), session.replace_generation, session.derive_messages())
        dangling = dangling_call_closers(session.events, session.surface)
        session.close()
        again = Session.open(home, session.id)
        if not dangling:
            assert (list(again.surface), again.replace_generation, again.derive_messages()) == (
                state
            )
        else:
            # Load answers every call left without a result; nothing else changes.
            assert again.report.repaired and unanswered_tool_calls(again.derive_messages()) == []
            assert dangling_call_closers(again.events, again.surface) == []
        again.close()
