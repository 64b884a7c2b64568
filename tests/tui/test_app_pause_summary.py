"""The app writes the coming compaction's summary while the person reads an answer, and the
next turn commits it at the mark without asking for it again (:mod:`compact.basic.ahead`)."""

from __future__ import annotations

from tests.e2e.test_compaction_nowait import near_the_mark, reads, setup
from tests.openai_server import SUMMARY_MARK, OpenAIServer
from tests.tui.conftest import UI


async def test_a_summary_written_in_the_pause_is_committed_at_the_mark_without_a_wait(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """The first turn ends a step below the mark. The summary is written in the pause (the
    status line says it is ready before the next message); the second turn reaches the mark
    at its second checkpoint, which commits that summary: one call, made in the pause."""
    setup(ui.workdir, openai_server)
    openai_server.push(*near_the_mark(), *reads(2), {"text": "Done."})
    runtime = ui.runtime(
        base_url=openai_server.base_url,
        model="m",
        demo=False,
        context_window=6000,
        compaction={"cache_price": 0},
    )
    app = ui.app(runtime)
    async with app.run_test(size=(140, 40)) as pilot:
        await ui.send(pilot, "read data.txt")
        await ui.until(pilot, lambda: "summary ready ahead" in str(app.main.status.render()))
        assert not any(e.type.startswith("compact/") for e in runtime.session.events)
        threshold = runtime.threshold_tokens
        assert threshold is not None and runtime.measure().total < threshold
        await ui.send(pilot, "read it again")
    events = runtime.session.events
    second = next(e for e in events if e.type == "turn/start" and e.data.turn == 2)
    kinds = [e.type for e in events[second.seq :]]
    assert "compact/summary" in kinds, kinds
    start = events[second.seq + kinds.index("compact/start")]
    assert start.data.ahead is True
    before = events[start.seq - 1]
    assert before.type == "step/end" and before.data.step == 1  # at the second checkpoint
    bracket = [e for e in events[start.seq :] if e.data.model_dump().get("compaction_id")]
    assert [e.data.status for e in bracket if e.type == "compact/progress"] == ["ok"]
    asked = [
        at
        for at, body in zip(openai_server.arrived, openai_server.requests, strict=True)
        if SUMMARY_MARK in str(body["messages"][-1])
    ]
    assert len(asked) == 1 and asked[0] < second.time  # in the pause, not at the mark
