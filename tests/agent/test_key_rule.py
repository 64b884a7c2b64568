"""Which key goes where (:func:`agent.provider.resolve_provider`), from the environment
as a shell sets it; servers are compared by scheme, host and port: a key meant for OpenAI
never goes to a host whose name only starts like OpenAI's. (Through the real process, with
the headers a server received: tests/e2e/test_key_destination.py.)"""

from __future__ import annotations

import pytest

from agent.provider import DEEPSEEK_BASE_URL, OPENAI_BASE_URL, resolve_provider, same_server
from agent.settings import Settings

OPENAI, DEEPSEEK = "sk-openai-0123456789abcdef", "sk-deepseek-0123456789abcdef"


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_BASE_URL", "REEFLINE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("env", "settings", "name", "key"),
    [
        ({"OPENAI_API_KEY": OPENAI}, {}, "openai", OPENAI),
        ({"DEEPSEEK_API_KEY": DEEPSEEK}, {}, "deepseek", DEEPSEEK),
        ({"OPENAI_API_KEY": OPENAI, "DEEPSEEK_API_KEY": DEEPSEEK}, {}, "openai", OPENAI),
        (
            {"OPENAI_API_KEY": OPENAI, "DEEPSEEK_API_KEY": DEEPSEEK},
            {"model": "deepseek-chat"},
            "deepseek",
            DEEPSEEK,
        ),
        (
            {"OPENAI_API_KEY": OPENAI, "DEEPSEEK_API_KEY": DEEPSEEK},
            {"base_url": "https://api.deepseek.com/v1"},
            "deepseek",
            DEEPSEEK,
        ),
        (
            {"OPENAI_API_KEY": OPENAI, "DEEPSEEK_API_KEY": DEEPSEEK},
            {"base_url": "https://api.openai.com.evil.example/v1", "model": "m"},
            "openai-compatible",
            None,
        ),
        (
            {"OPENAI_API_KEY": OPENAI, "OPENAI_BASE_URL": "https://gateway.example/v1"},
            {"model": "m"},
            "openai-compatible",
            OPENAI,
        ),
        (
            {"OPENAI_API_KEY": OPENAI, "OPENAI_BASE_URL": "https://gateway.example/v1"},
            {"base_url": "https://other.example/v1", "model": "m"},
            "openai-compatible",
            None,
        ),
        ({"OPENAI_API_KEY": OPENAI}, {"base_url": "http://0.0.0.0:8080/v1", "model": "m"},
         "local", None),
    ],
)  # fmt: skip
def test_each_key_goes_only_where_it_was_meant(
    shell: pytest.MonkeyPatch,
    env: dict[str, str],
    settings: dict[str, str],
    name: str,
    key: str | None,
) -> None:
    for variable, value in env.items():
        shell.setenv(variable, value)
    provider = resolve_provider(Settings(**settings))
    assert provider.name == name
    assert (provider.api_key.reveal() if provider.api_key else None) == key


def test_a_key_only_reefline_knows_is_sent_nowhere_unnamed(shell: pytest.MonkeyPatch) -> None:
    """REEFLINE_API_KEY names no server: it is used only where --api-key-env names it."""
    shell.setenv("REEFLINE_API_KEY", OPENAI)
    assert resolve_provider(Settings()).kind == "scripted"
    local = Settings(base_url="http://127.0.0.1:8080/v1", model="m")
    assert resolve_provider(local).api_key is None
    named = resolve_provider(local.model_copy(update={"api_key_env": "REEFLINE_API_KEY"}))
    assert named.api_key is not None and named.record().api_key_env == "REEFLINE_API_KEY"


@pytest.mark.parametrize(
    "url",
    [
        "https://api.openai.com",
        "https://API.OpenAI.com/v1/",
        "https://api.openai.com:443/other",
    ],
)
def test_the_same_server(url: str) -> None:
    assert same_server(url, OPENAI_BASE_URL)


@pytest.mark.parametrize(
    "url",
    [
        "https://api.openai.com.evil.example/v1",
        "https://evil.example/api.openai.com/v1",
        "http://api.openai.com/v1",  # not over TLS
        "https://api.openai.com:8443/v1",
        "https://user@evil.example/?https://api.openai.com",
        "not a url",
        "http://[::1/v1",
        "",
    ],
)
def test_not_the_same_server(url: str) -> None:
    assert not same_server(url, OPENAI_BASE_URL)
    assert not same_server(url, DEEPSEEK_BASE_URL)
