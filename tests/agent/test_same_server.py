"""Servers are compared by scheme, host and port: a key meant for OpenAI never goes to a host
whose name only starts like OpenAI's."""

from __future__ import annotations

import pytest

from agent.llm.provider import DEEPSEEK_BASE_URL, OPENAI_BASE_URL, same_server


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
