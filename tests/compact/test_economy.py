"""Context economy through the real loop and a loopback server: what a compaction costs a
provider that caches prompt prefixes, and what it keeps."""

from __future__ import annotations

from tests.compact.conftest import server_model
from tests.openai_server import SUMMARY_MARK, OpenAIServer


def is_summary(request: dict) -> bool:
    return SUMMARY_MARK in str(request["messages"][-1].get("content"))


async def test_a_summary_request_continues_the_last_step_request_byte_for_byte(
    make_rig, openai_server: OpenAIServer
) -> None:
    """Its system prompt, tools and every message the last step request sent come first,
    unchanged, so a provider's prompt cache serves all of it; only the instruction is new."""
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
        assert summary["messages"][: len(step["messages"])] == step["messages"]
        assert summary["tools"] == step["tools"] and summary["tool_choice"] == "none"
        # What came after the step request: its reply and results, then the instruction.
        new = summary["messages"][len(step["messages"]) :]
        assert [m["role"] for m in new] == ["assistant", "tool", "user"]
