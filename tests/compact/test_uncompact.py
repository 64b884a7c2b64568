"""Undoing a compaction through the real loop and a loopback server: automatic compaction
does not redo it until new content brings the context past the mark again."""

from __future__ import annotations

from compact.commands.uncompact import uncompact
from tests.compact.conftest import server_model
from tests.openai_server import OpenAIServer


async def test_an_undone_compaction_is_not_redone_by_the_next_step(
    make_rig, openai_server: OpenAIServer
) -> None:
    rig = make_rig(model=server_model(openai_server), window=16_000, cache_price=0)
    rig.service.install(rig.agent.hooks)
    openai_server.summarize = True
    openai_server.agent_commands = ["seq 1 400"] * 16
    await rig.agent.run_turn("count things")
    starts = rig.compact_events().count("compact/start")
    assert starts >= 1, "the window was never crossed"
    envelope = rig.agent.envelope()
    mark = rig.service.threshold(16_000)
    assert mark is not None

    outcome = uncompact(rig.session, rig.meter, envelope)
    assert outcome.ok, outcome.text
    restored = rig.meter.measure(rig.agent.envelope()).total
    assert restored >= mark  # back above the mark it compacted at: only the undo keeps it

    # The next turn's first steps add little: nothing is compacted again for what the undo
    # brought back ...
    openai_server.agent_commands = ["echo one"]
    await rig.agent.run_turn("one small thing")
    assert rig.compact_events().count("compact/start") == starts
    # ... until new content brings the context past the mark by as much again.
    openai_server.agent_commands = ["seq 1 400"] * 16
    await rig.agent.run_turn("count more things")
    assert rig.compact_events().count("compact/start") > starts
