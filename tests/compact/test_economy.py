"""Context economy through the real loop and a loopback server: what a compaction costs a
provider that caches prompt prefixes, and what it keeps."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

from agent.formatting import fmt_tokens
from compact.parts.originals import original
from compact.reports.timeline import TimelineFold
from compact.reports.wording import describe
from tests.compact.conftest import add_turn, server_model
from tests.compact.test_prune import big_result
from tests.openai_server import SUMMARY_MARK, OpenAIServer


def is_summary(request: dict) -> bool:
    return SUMMARY_MARK in str(request["messages"][-1].get("content"))


async def test_a_summary_request_continues_the_last_step_request_byte_for_byte(
    make_rig, openai_server: OpenAIServer
) -> None:
    """Its system prompt, tools and every message the last step request sent come first,
    unchanged, so a provider's prompt cache serves all of it; only the instruction is new.
    The newest step (sent after that request) is not read: it stays verbatim."""
    rig = make_rig(model=server_model(openai_server), window=16_000)
    rig.service.install(rig.agent.hooks)
    openai_server.summarize = True
    openai_server.agent_commands = ["seq 1 400"] * 16
    # (The server's scripted agent counts its commands since the newest user message, so
    # after a checkpoint it starts over: the turn runs to its step limit.)
    await rig.agent.run_turn("count things")
    requests = openai_server.requests
    summaries = [i for i, r in enumerate(requests) if is_summary(r)]
    assert summaries, "the window was never crossed"
    for i in summaries:
        summary, step = requests[i], requests[i - 1]
        assert not is_summary(step)
        assert summary["messages"][:-1] == step["messages"]
        assert summary["tools"] == step["tools"] and summary["tool_choice"] == "none"
        assert summary["messages"][-1]["role"] == "user"
    # What each rewrite cost the cache is on its timeline record: the checkpoint and what
    # follows it, read uncached by the next request.
    fold = TimelineFold()
    fold.feed_all(rig.session.events)
    done = [r for r in fold.records if r.kind == "compaction" and r.status == "done"]
    assert len(done) == len(summaries)
    for record in done:
        assert record.reread_tokens is not None and 0 < record.reread_tokens < 16_000
        assert f"{fmt_tokens(record.reread_tokens)} re-read uncached" in describe(record)


async def test_below_the_mark_nothing_is_rewritten(make_rig) -> None:
    """At 9k of a 16k window, masking old outputs would free a tenth of the window, but it
    would rewrite history (the cached prefix re-read at full price from there) and hide
    what no checkpoint carries: nothing is rewritten until a compaction is due."""
    rig = make_rig(pruner=True, window=16_000)
    a = rig.agent

    def total() -> int:
        return rig.meter.measure(system=a.system_prompt(), tools=a.tool_schemas()).total

    turn = 0
    while total() < 9_000:
        turn += 1
        big_result(rig, turn, 3000)
    protect = len(rig.session.surface) - 3
    assert rig.service.pruner is not None and await rig.service.pruner.savings(protect) >= 1_600
    generation = rig.session.replace_generation
    for _ in range(3):
        turn += 1
        add_turn(rig.session, turn, words=40)
        assert await rig.service.compact_if_needed(rig.agent.envelope(), "pressure") is None
    assert rig.session.replace_generation == generation
    assert not [e for e in rig.session.events if e.type.startswith("compact/")]


async def test_a_masked_outputs_fact_reaches_the_checkpoint_at_a_large_window(
    make_rig, openai_server: OpenAIServer, tmp_path: Path
) -> None:
    """Through the real loop at a 128k window with ~5k-token outputs, each holding a fact:
    every output that leaves the view (masked) has its fact in the checkpoint the model
    sees, and no request exceeds the window."""
    rig = make_rig(model=server_model(openai_server), window=128_000, pruner=True)
    rig.service.install(rig.agent.hooks)
    openai_server.summarize = True
    numbers = "".join(f"{n}\n" for n in range(1, 1800))
    for i in range(40):  # the fact only in the file: the command that reads it names none
        fact = f"FACT-{i:02d}-{i * 7919 % 10000:04d}"
        (tmp_path / f"knob-{i}.txt").write_text(f"NOTE {fact} is the value of knob {i}\n{numbers}")
    openai_server.agent_commands = [f"cat knob-{i}.txt" for i in range(40)]
    await rig.agent.run_turn("read the knobs")
    assert not any(r.get("max_tokens", 0) < 0 for r in openai_server.requests)
    assert (
        max(rig.meter.estimator.messages_tokens(r["messages"]) for r in openai_server.requests)
        < 128_000
    )
    done = [e for e in rig.session.events if e.type == "compact/end" and e.data.error is None]
    assert done, "the session did not reach a compaction"
    view = "\n".join(str(m.get("content")) for m in rig.session.derive_messages())
    outputs = [e for e in rig.session.events if e.type == "tool/result"]
    read = list(
        {first.seq: first for first in map(partial(original, rig.session), outputs)}.values()
    )
    assert len(read) >= 10
    for first in read:  # masked, summarized or still shown: every one is in what it sees
        [fact] = re.findall(r"FACT-\d\d-\d{4}", first.data.content)
        assert fact in view, f"{fact} left the view unremembered"
