"""The session's usage totals, folded from a real log: replies and summary calls, cached
share over what reported it, cost from prices (absent rather than invented), the same
figures from raw lines as from typed events, and the price table and its config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.config_file import SettingsError
from agent.llm.prices import ModelPrice, format_cost, price_book, price_of
from agent.log.session import Session
from agent.settings import load_settings
from agent.usage_totals import usage_of_log, usage_totals
from compact.contract.registry import build_registry


@pytest.fixture
def session(tmp_path: Path) -> Session:
    return Session.create(tmp_path / "home", cwd=str(tmp_path), registry=build_registry())


def reply(session: Session, usage: dict[str, Any] | None, **data: Any) -> None:
    session.append(
        "assistant/message",
        {"turn": 1, "step": 1, "text": "x", "finish_reason": "stop", "model": "gpt-4.1",
         "usage": usage, **data},
        surface_op={"op": "append"},
    )  # fmt: skip


def summary_call(session: Session, usage: dict[str, Any] | None, status: str = "ok") -> None:
    session.append(
        "compact/progress",
        {"compaction_id": "c1", "chunk": 1, "chunks": 1, "items": 3, "input_tokens": 10,
         "status": status, "model": "gpt-4.1", "usage": usage,
         "reason": None if status == "ok" else "refused"},
    )  # fmt: skip


def test_replies_and_summary_calls_add_up(session: Session) -> None:
    reply(session, {"prompt_tokens": 1000, "completion_tokens": 10, "cached_tokens": 800})
    reply(session, {"prompt_tokens": 1000, "completion_tokens": 10})  # no cache figure
    reply(session, None, finish_reason="cancelled")  # cut short by the user: no call
    summary_call(session, {"prompt_tokens": 2000, "completion_tokens": 100, "cached_tokens": 1200})
    summary_call(session, None, status="failed")  # reported nothing, billed nothing known
    totals = usage_totals(session.events)
    assert (totals.input, totals.output, totals.calls, totals.summary_calls) == (4000, 120, 3, 1)
    # The share is over the calls that reported a figure: 2,000 of 3,000 prompt tokens.
    assert totals.cached == 2000 and totals.cached_share == pytest.approx(2000 / 3000)
    # gpt-4.1: 2,000 uncached × 2.00 + 2,000 cached × 0.50 + 120 × 8.00, per million.
    assert totals.cost(price_book()) == pytest.approx((4000 + 1000 + 960) / 1e6)


def test_raw_lines_fold_to_the_same_totals_as_the_typed_events(session: Session) -> None:
    reply(session, {"prompt_tokens": 500, "completion_tokens": 5, "cached_tokens": 0})
    summary_call(session, {"prompt_tokens": 900, "completion_tokens": 50})
    reply(session, None)
    session.close()
    raw = usage_of_log(session.path.read_bytes().splitlines(keepends=True))
    assert raw == usage_totals(session.events)
    assert raw.by_model == usage_totals(session.events).by_model


def test_cost_is_absent_when_a_call_reported_nothing_or_a_model_has_no_price(
    session: Session,
) -> None:
    reply(session, {"prompt_tokens": 500, "completion_tokens": 5})
    assert usage_totals(session.events).cost(price_book()) is not None
    reply(session, None)  # a reply without usage: its cost is not known
    assert usage_totals(session.events).cost(price_book()) is None
    assert usage_totals(session.events).cached_share is None  # "not reported"


def test_unpriced_model_has_no_cost(tmp_path: Path) -> None:
    local = Session.create(tmp_path / "h2", cwd=str(tmp_path), registry=build_registry())
    reply(local, {"prompt_tokens": 500, "completion_tokens": 5}, model="qwen2.5:7b")
    totals = usage_totals(local.events)
    assert totals.cost(price_book()) is None
    assert totals.cost(price_book({"qwen2.5": ModelPrice(0.1, 0.1, 0.2)})) == pytest.approx(
        (500 * 0.1 + 5 * 0.2) / 1e6
    )


def test_price_table_lookup() -> None:
    assert price_of("gpt-4.1") == ModelPrice(2.00, 0.50, 8.00)
    assert price_of("gpt-4.1-mini-2025-04-14") == price_of("gpt-4.1-mini")  # dated variant
    assert price_of("openai/gpt-4o") == price_of("gpt-4o")  # owner prefix
    assert price_of("deepseek-reasoner") is not None
    for local in ("llama3.1:8b", "qwen2.5:7b", "smollm2", "something-else"):
        assert price_of(local) is None
    mine = {"gpt-4.1": ModelPrice(1.0, 0.1, 4.0)}
    assert price_of("gpt-4.1", mine) == ModelPrice(1.0, 0.1, 4.0)  # the config wins
    assert format_cost(0.086) == "~$0.09 est." and format_cost(0.001) == "~<$0.01 est."


def test_prices_in_the_config_are_validated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("REEFLINE_CONFIG", str(config))
    config.write_text('[prices."my-model"]\ninput = 1.5\noutput = 3\n')
    settings = load_settings()
    # No cached price given: the input price, no invented discount.
    assert settings.model_prices == {"my-model": ModelPrice(1.5, 1.5, 3.0)}
    config.write_text('[prices."my-model"]\ninput = -1\noutput = 3\ncache = 0.1\n')
    with pytest.raises(SettingsError) as caught:
        load_settings()
    said = str(caught.value)
    assert str(config) in said
    assert "prices.my-model.input" in said and "prices.my-model.cache" in said


def test_cache_misses_fold_alike_from_events_and_raw_lines(session: Session) -> None:
    """A reply served under half of the prefix it expected cached is a miss; one above half,
    one under 1,024 tokens, one with no cache figure and one that expected nothing are not.
    The miss's tokens billed in full cost the input price over the cached one."""
    expected = {"prefix_tokens": 40_000, "since_s": 120.0}
    reply(session, {"prompt_tokens": 41_000, "completion_tokens": 10, "cached_tokens": 1_000},
          cache_expected=expected)  # fmt: skip
    reply(session, {"prompt_tokens": 41_000, "completion_tokens": 10, "cached_tokens": 20_000},
          cache_expected=expected)  # fmt: skip
    reply(session, {"prompt_tokens": 1_100, "completion_tokens": 10, "cached_tokens": 0},
          cache_expected={"prefix_tokens": 1_000, "since_s": 1.0})  # fmt: skip
    reply(session, {"prompt_tokens": 41_000, "completion_tokens": 10}, cache_expected=expected)
    reply(session, {"prompt_tokens": 41_000, "completion_tokens": 10, "cached_tokens": 0})
    totals = usage_totals(session.events)
    raw = usage_of_log(session.path.read_bytes().splitlines(keepends=True))
    assert (totals.misses, totals.missed) == (raw.misses, raw.missed) == (1, 39_000)
    # gpt-4.1: 39,000 × ($2.00 − $0.50) per million
    assert totals.miss_cost(price_of) == pytest.approx(39_000 * 1.5 / 1e6)
    assert (totals.last_prompt, totals.last_cached, totals.last_cached_share) == (41_000, 0, 0)


def test_a_garbled_expectation_in_a_raw_line_is_no_miss() -> None:
    line = (
        b'{"seq":1,"type":"assistant/message","time":1.0,"data":{"turn":1,"step":1,'
        b'"finish_reason":"stop","model":"gpt-4.1","usage":{"prompt_tokens":5000,'
        b'"completion_tokens":1,"cached_tokens":0},"cache_expected":%s}}\n'
    )
    for garbled in (b'{"prefix_tokens":1e400,"since_s":1}', b'{"prefix_tokens":4000,"since_s":-1}',
                    b'"4000"', b'{"prefix_tokens":4000,"since_s":true}'):  # fmt: skip
        assert usage_of_log([line % garbled]).misses == 0, garbled
    assert usage_of_log([line % b'{"prefix_tokens":4000,"since_s":1}']).misses == 1
