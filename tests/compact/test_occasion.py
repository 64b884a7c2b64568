"""A compaction says what set it off and what it kept verbatim, from its own log record."""

from __future__ import annotations

from agent.formatting import fmt_tokens
from compact.reports.timeline import TimelineFold
from compact.reports.wording import occasion
from tests.compact.conftest import server_model
from tests.openai_server import OpenAIServer


async def test_an_automatic_compaction_records_the_mark_it_reached_and_what_it_kept(
    make_rig, openai_server: OpenAIServer
) -> None:
    rig = make_rig(model=server_model(openai_server), window=16_000, cache_price=0)
    rig.service.install(rig.agent.hooks)
    openai_server.summarize = True
    openai_server.agent_commands = ["seq 1 400"] * 16
    await rig.agent.run_turn("count things")
    fold = TimelineFold()
    fold.feed_all(rig.session.events)
    record = next(r for r in fold.records if r.kind == "compaction")
    why = record.why
    assert why is not None and why.mark == rig.service.threshold(16_000)
    assert why.context_tokens >= why.mark
    # What stayed verbatim: the surface items after the checkpoint it wrote.
    start = rig.session.events[record.start_seq]
    checkpoint = next(
        s
        for s in rig.session.surface
        if getattr(rig.session.events[s].data, "compaction_id", None) == record.compaction_id
    )
    after = rig.session.surface[rig.session.surface.index(checkpoint) + 1 :]
    kept_then = [s for s in after if s < start.seq]
    assert why.kept_items == len(kept_then) >= 1
    text = occasion(record)
    assert text is not None
    assert f"the context reached {fmt_tokens(why.context_tokens)}" in text
    assert f"past the auto mark at {fmt_tokens(why.mark)}" in text
    assert f"kept verbatim: {why.kept_items} item" in text


async def test_a_manual_compaction_says_it_was_asked_for(make_rig) -> None:
    from tests.compact.conftest import add_turn

    rig = make_rig()
    for turn in range(1, 6):
        add_turn(rig.session, turn, words=200)
    assert await rig.service.compact_now(rig.agent.envelope(), focus="the parser") is not None
    fold = TimelineFold()
    fold.feed_all(rig.session.events)
    [record] = fold.records
    text = occasion(record)
    assert text is not None and text.startswith("/compact at ") and "focus: the parser" in text
