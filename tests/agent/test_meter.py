"""The token meter over real sessions: pricing, anchoring, replaces, breakdown, cost."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from agent.log.events import Event
from agent.log.session import Session
from agent.measurement import BREAKDOWN_KEYS, Measurement
from agent.meter import TokenMeter
from agent.tokens import Estimator

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a bash command in the working directory.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}},
                "required": ["command"],
            },
        },
    }
]
SYSTEM = "You are reefline, a careful coding agent. Use the bash tool to inspect files."


class CountingEstimator(Estimator):
    """A real estimator that counts how often text is tokenized."""

    calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return super().count(text)


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    s = Session.create(tmp_path / "home", cwd=str(tmp_path))
    yield s
    s.close()


@pytest.fixture
def estimator() -> Estimator:
    return Estimator()


def header(s: Session, system: str = SYSTEM, model: str = "gpt-4o", tools: Any = None) -> Event:
    return s.append(
        "request/header",
        {
            "provider": "openai",
            "model": model,
            "system": system,
            "tools": TOOLS if tools is None else tools,
            "params": {},
            "context_window": 128_000,
        },
    )


def user(s: Session, text: str, source: str = "user") -> Event:
    data: dict[str, Any] = {"content": text, "source": source}
    if source == "compact":
        data["compaction_id"] = "c1"
    return s.append("user/message", data)


def assistant(
    s: Session,
    text: str = "",
    calls: tuple[str, ...] = (),
    usage: tuple[int, int] | None = None,
    reasoning: str | None = None,
) -> Event:
    data: dict[str, Any] = {
        "turn": 1,
        "step": 1,
        "text": text,
        "reasoning": reasoning,
        "tool_calls": [
            {"id": c, "name": "bash", "arguments": json.dumps({"command": f"cat {c}.txt"})}
            for c in calls
        ],
        "finish_reason": "tool_calls" if calls else "stop",
        "model": "gpt-4o",
    }
    if usage is not None:
        data["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
    return s.append("assistant/message", data)


def result(s: Session, call_id: str, content: str) -> Event:
    return s.append(
        "tool/result",
        {"turn": 1, "step": 1, "call_id": call_id, "name": "bash", "content": content},
    )


def surface_sum(meter: TokenMeter, s: Session) -> int:
    return sum(meter.price(seq) for seq in s.surface)


def test_empty_session_measures_zero(session: Session, estimator: Estimator) -> None:
    m = TokenMeter(session, estimator, 1000).measure()
    assert m == Measurement(0, 0, 0, False, 1000, dict.fromkeys(BREAKDOWN_KEYS, 0))
    assert m.percent == 0.0


def test_estimate_is_header_plus_surface_and_breakdown_sums(
    session: Session, estimator: Estimator
) -> None:
    meter = TokenMeter(session, estimator, context_window=10_000)
    header(session)
    user(session, "why does the build fail?")
    session.append("context/message", {"content": "cwd: /src", "source": "workspace"})
    assistant(session, "Let me look.", calls=("a",))
    result(session, "a", "error: missing symbol parse_header\n" * 5)
    m = meter.measure()
    assert not m.measured
    assert m.header == estimator.system_tokens(SYSTEM) + estimator.tools_tokens(TOOLS)
    assert m.surface == surface_sum(meter, session) == meter.measure().surface
    assert m.total == m.header + m.surface
    assert sum(m.breakdown.values()) == m.total
    assert m.breakdown["system"] == estimator.system_tokens(SYSTEM)
    assert m.breakdown["tools"] == estimator.tools_tokens(TOOLS)
    assert m.breakdown["checkpoints"] == 0
    assert m.percent == pytest.approx(100 * m.total / 10_000)
    # The price of a node is the price of its derived chat message.
    assert meter.estimate_messages(session.derive_messages()) == m.surface


def test_reasoning_is_not_priced(session: Session, estimator: Estimator) -> None:
    meter = TokenMeter(session, estimator)
    plain = assistant(session, "answer")
    thinking = assistant(session, "answer", reasoning="long hidden thoughts " * 50)
    assert meter.price(plain.seq) == meter.price(thinking.seq)
    empty = assistant(session, "", reasoning="only thoughts")
    assert meter.price(empty.seq) == 0


def test_anchors_on_provider_usage_then_adds_growth(session: Session, estimator: Estimator) -> None:
    meter = TokenMeter(session, estimator, 128_000)
    header(session)
    user(session, "list the files")
    assistant(session, "", calls=("a",), usage=(5000, 40))
    m = meter.measure()
    assert m.measured
    assert m.total == 5040
    r = result(session, "a", "README.md\nsrc/app.py\n")
    u = user(session, "and now?")
    m2 = meter.measure()
    assert m2.measured
    assert m2.total == 5040 + meter.price(r.seq) + meter.price(u.seq)
    # The same header passed explicitly keeps the anchor.
    assert meter.measure(system=SYSTEM, tools=TOOLS).total == m2.total
    assert meter.measure(model="gpt-4o").measured


def test_usage_below_the_estimate_is_not_trusted(session: Session, estimator: Estimator) -> None:
    meter = TokenMeter(session, estimator)
    header(session)
    user(session, "a question " * 40)
    assistant(session, "an answer " * 40, usage=(3, 2))
    m = meter.measure()
    assert not m.measured
    assert m.total == m.header + m.surface
    grown = result(session, "x", "more output " * 10)
    assert meter.measure().total == m.total + meter.price(grown.seq)


def test_a_later_reply_without_usage_keeps_the_anchor(
    session: Session, estimator: Estimator
) -> None:
    meter = TokenMeter(session, estimator)
    header(session)
    user(session, "hi")
    assistant(session, "hello", usage=(900, 10))
    later = assistant(session, "more text")
    m = meter.measure()
    assert m.measured
    assert m.total == 910 + meter.price(later.seq)


def test_header_change_falls_back_to_a_full_estimate(
    session: Session, estimator: Estimator
) -> None:
    meter = TokenMeter(session, estimator)
    header(session)
    user(session, "hi")
    assistant(session, "hello", usage=(2000, 10))
    assert meter.measure().measured
    # Asking about a different next request: estimated, nothing logged.
    other = meter.measure(system="A different system prompt.")
    assert not other.measured
    assert other.total == estimator.system_tokens("A different system prompt.") + (
        estimator.tools_tokens(TOOLS) + meter.measure().surface
    )
    assert not meter.measure(tools=[]).measured
    assert not meter.measure(model="gpt-4.1").measured
    assert meter.measure().measured  # the logged header still matches the anchor
    # Logging a new header (model switch) invalidates the anchor.
    header(session, model="gpt-4.1")
    m = meter.measure()
    assert not m.measured
    assert m.total == m.header + m.surface
    # A new reply under the new header anchors again.
    assistant(session, "ok", usage=(3000, 5))
    assert meter.measure().measured
    assert meter.measure().total == 3005


def test_compaction_replace_moves_the_surface_by_signed_delta(
    session: Session, estimator: Estimator
) -> None:
    meter = TokenMeter(session, estimator)
    header(session)
    u1 = user(session, "first task " * 20)
    a1 = assistant(session, "working", calls=("a",))
    r1 = result(session, "a", "lots of output\n" * 200)
    a2 = assistant(session, "done with the first task " * 10)
    u2 = user(session, "second task")
    before = meter.measure()
    span = [u1.seq, a1.seq, r1.seq, a2.seq]
    shadowed_price = sum(meter.price(s) for s in span)
    checkpoint = session.append(
        "user/message",
        {
            "content": "<compacted-summary>\n## Primary request and intent\n- first\n"
            "</compacted-summary>",
            "source": "compact",
            "compaction_id": "c1",
        },
        surface_op={"op": "replace", "start": u1.seq, "end": a2.seq},
        source_event_seqs=span,
    )
    assert session.shadowed(checkpoint.seq) == span
    after = meter.measure()
    assert after.surface == before.surface - shadowed_price + meter.price(checkpoint.seq)
    assert after.surface == surface_sum(meter, session)
    assert after.breakdown["checkpoints"] == meter.price(checkpoint.seq)
    assert after.breakdown["user"] == meter.price(u2.seq)
    assert after.breakdown["assistant"] == 0
    assert after.breakdown["tool_results"] == 0
    assert sum(after.breakdown.values()) == after.total


def test_compaction_after_an_anchor_subtracts_from_the_provider_figure(
    session: Session, estimator: Estimator
) -> None:
    meter = TokenMeter(session, estimator)
    header(session)
    u1 = user(session, "explain " * 300)
    a1 = assistant(session, "sure " * 300, usage=(10_000, 300))
    anchored = meter.measure().total
    saved = meter.price(u1.seq) + meter.price(a1.seq)
    cp = session.append(
        "user/message",
        {"content": "<compacted-summary>short</compacted-summary>", "source": "compact"},
        surface_op={"op": "replace", "start": u1.seq, "end": a1.seq},
        source_event_seqs=[u1.seq, a1.seq],
    )
    m = meter.measure()
    assert m.measured
    assert m.total == anchored - saved + meter.price(cp.seq)


def test_pruned_tool_result_adjusts_the_surface(session: Session, estimator: Estimator) -> None:
    meter = TokenMeter(session, estimator)
    user(session, "read the log")
    assistant(session, "", calls=("a",))
    big = result(session, "a", "2024-01-01 INFO request served in 3ms\n" * 300)
    before = meter.measure().surface
    pruned = session.append(
        "tool/result",
        {
            "turn": 1,
            "step": 1,
            "call_id": "a",
            "name": "bash",
            "content": "[output masked: `cat a.txt` exit 0, 300 lines]",
        },
        surface_op={"op": "replace", "start": big.seq, "end": big.seq},
        source_event_seqs=[big.seq],
    )
    delta = meter.price(pruned.seq) - meter.price(big.seq)
    assert delta < 0
    assert meter.measure().surface == before + delta == surface_sum(meter, session)
    assert meter.measure().breakdown["tool_results"] == meter.price(pruned.seq)


def test_each_node_is_priced_once_and_measure_prices_nothing(
    session: Session, tmp_path: Path
) -> None:
    est = CountingEstimator()
    meter = TokenMeter(session, est, 50_000)
    header(session)
    header(session)  # the same header again: priced once
    nodes = 0
    for i in range(30):
        user(session, f"question {i}")
        assistant(session, f"answer {i}", calls=(f"c{i}",), usage=(100 + i, 5))
        result(session, f"c{i}", f"output {i}\n" * 3)
        nodes += 3
    assistant(session, "")  # empty: derives to nothing, costs no tokenization
    assert est.calls == nodes + 2  # + system and tools of the one distinct header
    for _ in range(200):
        meter.measure()
        meter.measure(system=SYSTEM, tools=TOOLS)
    assert est.calls == nodes + 2
    meter.measure(system="another prompt")
    meter.measure(system="another prompt")
    assert est.calls == nodes + 3  # a new system prompt priced once; the tools reuse their key


def test_a_meter_built_on_an_existing_log_folds_it(session: Session, estimator: Estimator) -> None:
    live = TokenMeter(session, estimator, 8000)
    header(session)
    u = user(session, "first")
    assistant(session, "reply", calls=("a",), usage=(1200, 20))
    result(session, "a", "out\n" * 20)
    session.append(
        "user/message",
        {"content": "<compacted-summary>x</compacted-summary>", "source": "compact"},
        surface_op={"op": "replace", "start": u.seq, "end": u.seq},
        source_event_seqs=[u.seq],
    )
    late = TokenMeter(session, estimator, 8000)
    assert late.measure() == live.measure()
    assert late.session_usage == live.session_usage
    reopened = Session.open(session.home, session.id, readonly=True)
    try:
        from_disk = TokenMeter(reopened, estimator, 8000)
        assert from_disk.measure() == live.measure()
    finally:
        reopened.close()
    # Both keep following the log.
    user(session, "more")
    assert late.measure() == live.measure()


def test_session_usage_sums_every_reply(session: Session, estimator: Estimator) -> None:
    meter = TokenMeter(session, estimator)
    assert meter.session_usage.total == 0
    assistant(session, "a", usage=(100, 10))
    assistant(session, "b")
    session.append(
        "assistant/message",
        {
            "turn": 1,
            "step": 2,
            "text": "c",
            "finish_reason": "stop",
            "model": "m",
            "usage": {"prompt_tokens": 300, "completion_tokens": 30, "cached_tokens": 250},
        },
    )
    usage = meter.session_usage
    assert (usage.input, usage.output, usage.cached) == (400, 40, 250)
    assert usage.total == 440


def test_context_window_is_settable(session: Session, estimator: Estimator) -> None:
    meter = TokenMeter(session, estimator, None)
    user(session, "hello " * 100)
    assert meter.measure().percent is None
    meter.context_window = 1000
    m = meter.measure()
    assert m.context_window == 1000
    assert m.percent == pytest.approx(m.total / 10)


def test_price_helpers(session: Session, estimator: Estimator) -> None:
    meter = TokenMeter(session, estimator)
    h = header(session)
    u = user(session, "hello world")
    assert meter.price(h.seq) == 0
    assert meter.price(0) == 0  # session/start
    assert meter.price(u.seq) == estimator.message_tokens(
        {"role": "user", "content": "hello world"}
    )
    with pytest.raises(KeyError):
        meter.price(999)
    assert meter.estimate_messages([{"role": "user", "content": "hello world"}]) == meter.price(
        u.seq
    )


def test_close_stops_observing(session: Session, estimator: Estimator) -> None:
    meter = TokenMeter(session, estimator)
    meter.close()
    meter.close()
    user(session, "unseen until asked")
    # measure() catches up from the log even when no longer subscribed.
    assert meter.measure().surface > 0


def _cookbook_count(encoding: Any, system: str, tools: list[dict[str, Any]], messages: Any) -> int:
    """OpenAI cookbook style: +3 per message, every string field tokenized, +3 priming."""

    def strings(value: Any) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for v in value.values():
                yield from strings(v)
        elif isinstance(value, list):
            for v in value:
                yield from strings(v)

    total = 3  # every reply is primed with <|start|>assistant<|message|>
    for message in [{"role": "system", "content": system}, *messages]:
        total += 3
        total += sum(len(encoding.encode_ordinary(s)) for s in strings(message))
    return total + len(encoding.encode_ordinary(json.dumps(tools)))


def test_estimate_is_within_five_percent_of_a_cookbook_count(
    session: Session, estimator: Estimator
) -> None:
    rng = random.Random(7)
    words = [
        *("build", "parser", "header", "symbol", "missing", "module", "import", "error"),
        *("test", "config", "cache", "session", "token", "window", "compact", "summary"),
        *("request", "file", "path", "line", "function", "class"),
    ]
    files = [f"src/{w}_{i}.py" for i, w in enumerate(words)]

    def prose(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n)).capitalize() + "."

    meter = TokenMeter(session, estimator)
    header(session)
    n = 0
    while n < 200:
        user(session, prose(rng.randint(8, 40)))
        call = f"call_{n:04d}_{rng.randint(0, 10**8):08d}"
        session.append(
            "assistant/message",
            {
                "turn": 1,
                "step": 1,
                "text": prose(rng.randint(5, 30)),
                "tool_calls": [
                    {
                        "id": call,
                        "name": "bash",
                        "arguments": json.dumps({"command": f"wc -l {rng.choice(files)}"}),
                    }
                ],
                "finish_reason": "tool_calls",
                "model": "gpt-4o",
            },
        )
        lines = [f"{rng.randint(1, 999):>5} {rng.choice(files)}" for _ in range(rng.randint(3, 30))]
        result(session, call, "\n".join(lines) + "\n[exit 0 · 0.01s]")
        assistant(session, prose(rng.randint(20, 80)))
        n += 4
    messages = session.derive_messages()
    assert len(messages) == 200
    expected = _cookbook_count(tiktoken.get_encoding("o200k_base"), SYSTEM, TOOLS, messages)
    got = meter.measure().total
    assert abs(got - expected) / expected < 0.05, (got, expected)
