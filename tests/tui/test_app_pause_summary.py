"""The app writes the coming compaction's summary while the person reads an answer, and the
next turn's first checkpoint commits it (:mod:`compact.basic.ahead`)."""

from __future__ import annotations

from tests.e2e.test_compaction_nowait import near_the_mark, reads, setup
from tests.openai_server import SUMMARY_MARK, OpenAIServer
from tests.tui.conftest import UI


async def test_a_summary_ready_in_the_pause_is_committed_at_the_next_turns_first_checkpoint(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """The first turn ends within two steps of the mark but below it. The summary is written
    in the pause (the status line says it is ready); the second turn's first checkpoint
    commits it, before its first step, although the mark is not reached yet."""
    setup(ui.workdir, openai_server)
    openai_server.push(*near_the_mark(), *reads(1), {"text": "Done."})
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
    second = next(e.seq for e in events if e.type == "turn/start" and e.data.turn == 2)
    kinds = [e.type for e in events[second:]]
    assert "compact/summary" in kinds, kinds
    assert kinds.index("compact/start") < kinds.index("step/start")
    start = events[second + kinds.index("compact/start")]
    assert start.data.ahead is True
    summaries = [b for b in openai_server.requests if SUMMARY_MARK in str(b["messages"][-1])]
    assert len(summaries) == 1
