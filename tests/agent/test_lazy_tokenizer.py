"""The tokenizer loads when first needed, and until then an upper bound answers the questions
the first request asks (is the context far below the compaction marks, does the window leave
room for the output cap).

Whether the tokenizer is loaded is per process, and this test process loaded it long ago, so
the start-up behaviour is checked in a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.llm.chat import ChatRequest
from agent.requests import clamp_output
from agent.tokens import EXACT_CHARS, Estimator

TEXTS = [
    "hello world",
    "def parse_header(buf: bytes) -> dict[str, str]:\n    return {}\n",
    "Grüße aus Köln — naïve café, 東京, emoji 🚀🚀",
    "\x00\x1b[31m red \u202e",
    "a" * 10_000,
    "é" * (EXACT_CHARS + 10),
    "word " * (EXACT_CHARS // 4),
]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_the_bound_is_never_below_the_count(text: str) -> None:
    estimator = Estimator()
    assert estimator.bound(text) >= estimator.count(text)
    message = {"role": "assistant", "content": text, "tool_calls": [
        {"id": "c", "function": {"name": "bash", "arguments": json.dumps({"command": text})}}
    ]}  # fmt: skip
    assert estimator.message_bound(message) >= estimator.message_tokens(message)
    tools = [{"type": "function", "function": {"name": "bash", "description": text}}]
    assert estimator.header_bound(text, tools) >= estimator.system_tokens(
        text
    ) + estimator.tools_tokens(tools)


FRESH_PROCESS = r"""
import json, sys, threading, time
from pathlib import Path
from agent import vocab
from agent.envelope import Envelope
from agent.meter import TokenMeter
from agent.log.session import Session
from agent.tokens import Estimator

home = Path(sys.argv[1])
session = Session.create(home, cwd=str(home))
estimator = Estimator()
meter = TokenMeter(session, estimator, 16_000)
session.append("user/message", {"content": "list the files, then read README.md"})
envelope = Envelope(provider="p", model="m", system="You are a coding agent.", tools=[],
                    window=16_000)
out = {"loaded_at_start": vocab.loaded(estimator.encoding_name)}
out["bound_below"] = meter.bound(envelope, warm_at=10_000)
time.sleep(0.2)
loading = any(t.name == "tokenizer" for t in threading.enumerate())
out["warming_below"] = loading or vocab.loaded(estimator.encoding_name)
out["bound"] = meter.bound(envelope, warm_at=out["bound_below"])
out["loaded_by_bound"] = vocab.loaded(estimator.encoding_name)
deadline = time.monotonic() + 60
while not estimator.ready and time.monotonic() < deadline:
    time.sleep(0.01)
out["warmed"] = estimator.ready
out["exact"] = meter.measure(envelope).total
out["bound_after"] = meter.bound(envelope)
print(json.dumps(out))
"""


def test_a_fresh_process_answers_the_first_checks_without_loading_the_tokenizer(
    tmp_path: Path,
) -> None:
    run = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["loaded_at_start"] is False  # making an estimator and a meter loads nothing
    assert out["warming_below"] is False  # far below the mark: no load started at all
    assert out["loaded_by_bound"] is False  # at the mark, the bound did not load it...
    assert out["warmed"] is True  # ...it started the load in the background
    assert out["bound"] >= out["exact"] > 0
    assert out["bound_after"] == out["exact"]  # once loaded, the bound is the measurement


def _request(text: str) -> ChatRequest:
    return ChatRequest(model="m", messages=[{"role": "user", "content": text}], tools=[])


def test_the_output_cap_is_settled_by_the_bound_when_it_leaves_room() -> None:
    def exact(messages: list[dict[str, object]]) -> int:
        raise AssertionError("counted exactly although the bound left room")

    cap = clamp_output(_request("hi"), 16_000, 4_000, exact, bound=lambda m: 100)
    assert cap == 4_000


def test_the_output_cap_is_counted_exactly_when_the_bound_is_too_coarse() -> None:
    calls: list[int] = []

    def exact(messages: list[dict[str, object]]) -> int:
        calls.append(1)
        return 1_000

    cap = clamp_output(_request("hi"), 16_000, 4_000, exact, bound=lambda m: 15_000)
    assert cap == 4_000 and calls == [1]
    cap = clamp_output(_request("hi"), 16_000, 4_000, lambda m: 14_000, bound=lambda m: 15_000)
    assert cap == 2_000


LONG_SURFACE = r"""
import json, sys, threading
from pathlib import Path
from agent.envelope import Envelope
from agent.meter import WARM_AT_MESSAGES, TokenMeter
from agent.log.session import Session
from agent.tokens import Estimator

home = Path(sys.argv[1])
session = Session.create(home, cwd=str(home))
estimator = Estimator()
meter = TokenMeter(session, estimator, 1_000_000)
envelope = Envelope(provider="p", model="m", system="s", tools=[], window=1_000_000)
out = {}
for count in (WARM_AT_MESSAGES, WARM_AT_MESSAGES + 1):
    while len(session.surface) < count:
        session.append("user/message", {"content": "hi"})
    meter.bound(envelope, warm_at=10**9)
    out[str(count)] = any(t.name == "tokenizer" for t in threading.enumerate()) or estimator.ready
print(json.dumps(out))
"""


def test_a_long_surface_warms_the_tokenizer_far_below_the_mark(tmp_path: Path) -> None:
    """The bound walks the whole surface; once it is long, the exact (incremental) count is
    made ready even though the history is far below any mark."""
    run = subprocess.run(
        [sys.executable, "-c", LONG_SURFACE, str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert list(out.values()) == [False, True], out
