"""The second load of an encoding builds it from the merges the first load kept: the same
tokens, without tiktoken parsing its vocab file again; a damaged file is ignored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SAMPLES = [
    "hello world",
    "def parse_header(buf: bytes) -> dict[str, str]:\n    return {}\n",
    "Grüße aus Köln — naïve café, 東京, emoji 🚀🚀",
    "<|endoftext|> is ordinary text here",
    "  leading and trailing spaces   \n\n\ttabs\t",
]

PROBE = r"""
import json, sys
import tiktoken.load
import tiktoken_ext.openai_public as public
parsed = []
original = public.load_tiktoken_bpe
def counting(*args, **kwargs):
    parsed.append(args[0])
    return original(*args, **kwargs)
public.load_tiktoken_bpe = counting  # observes whether tiktoken parsed its vocab file
from agent import vocab
encoding = vocab.load("o200k_base")
samples = json.loads(sys.argv[1])
print(json.dumps({
    "tokens": [encoding.encode_ordinary(s) for s in samples],
    "special": encoding.encode("<|endoftext|>", allowed_special="all"),
    "parsed": len(parsed),
}))
"""


def _probe(cache: Path) -> dict[str, object]:
    run = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(SAMPLES)],
        env={"PATH": "/usr/bin:/bin", "TIKTOKEN_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    result: dict[str, object] = json.loads(run.stdout)
    return result


def test_the_second_load_uses_the_kept_merges_and_tokenizes_alike(tmp_path: Path) -> None:
    first = _probe(tmp_path)
    [kept] = tmp_path.glob("reefline-o200k_base-*.ranks")
    second = _probe(tmp_path)
    assert first["parsed"] == 1 and second["parsed"] == 0
    assert second["tokens"] == first["tokens"] and second["special"] == first["special"]
    # A damaged file is not used: tiktoken parses again, the tokens are the same, and the
    # file is written anew.
    data = bytearray(kept.read_bytes())
    data[len(data) // 2] ^= 0xFF
    kept.write_bytes(bytes(data))
    third = _probe(tmp_path)
    assert third["parsed"] == 1 and third["tokens"] == first["tokens"]
    assert _probe(tmp_path)["parsed"] == 0
