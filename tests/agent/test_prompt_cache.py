"""The cache plan: which providers get breakpoints and how long each keeps a prefix."""

from __future__ import annotations

import math

import pytest

from agent.llm.prompt_cache import cache_plan
from agent.provider import provider_cache, resolve_provider
from agent.settings import Settings


@pytest.mark.parametrize(
    ("name", "model", "url", "marked"),
    [
        ("openai", "gpt-4.1", None, False),
        ("deepseek", "deepseek-chat", "https://api.deepseek.com", False),
        ("openai-compatible", "anthropic/claude-sonnet-4", "https://openrouter.ai/api/v1", True),
        ("openai-compatible", "sonnet", "https://api.anthropic.com/v1", True),
        ("openai-compatible", "sonnet", "https://api.anthropic.com.evil.example/v1", False),
        ("local", "Claude-3-haiku", "http://127.0.0.1:4000/v1", True),
        ("local", "qwen2.5:7b", "http://127.0.0.1:11434/v1", False),
    ],
)
def test_auto_marks_claude_models_and_anthropic_endpoints(
    name: str, model: str, url: str | None, marked: bool
) -> None:
    assert cache_plan(name, model, url).breakpoints is marked


def test_setting_forces_or_stops_the_marks() -> None:
    assert cache_plan("openai", "gpt-4.1", None, breakpoints="anthropic").breakpoints
    assert not cache_plan("local", "claude-3", None, breakpoints="off").breakpoints


def test_ttl_defaults_by_provider_and_override() -> None:
    assert cache_plan("openai", "gpt-4.1", None).ttl_s == 300
    assert cache_plan("deepseek", "deepseek-chat", None).ttl_s == 3600
    assert cache_plan("local", "qwen", "http://127.0.0.1:1/v1").ttl_s == math.inf
    assert cache_plan("openai-compatible", "claude-x", "https://g.example").ttl_s == 300
    assert cache_plan("openai", "gpt-4.1", None, ttl_s=42).ttl_s == 42


def test_cold_after_the_ttl_or_before_anything_was_sent() -> None:
    plan = cache_plan("openai", "gpt-4.1", None)
    assert plan.cold(None)
    assert not plan.cold(299.0)
    assert plan.cold(301.0)
    assert not cache_plan("local", "q", "http://127.0.0.1:1/v1").cold(10**9)


def test_settings_reach_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    settings = Settings(
        base_url="http://127.0.0.1:9/v1",
        model="claude-sonnet-4",
        cache_breakpoints="off",
        cache_ttl_s=60,
    )
    plan = provider_cache(resolve_provider(settings), settings)
    assert not plan.breakpoints
    assert plan.ttl_s == 60


def test_a_bad_setting_is_refused_with_its_choices() -> None:
    with pytest.raises(ValueError, match=r"auto.*anthropic.*off"):
        Settings(cache_breakpoints="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="greater than 0"):
        Settings(cache_ttl_s=0)
