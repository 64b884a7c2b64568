"""Event envelope and registry: round trips, unknown types, surface-field rules."""

from __future__ import annotations

import json

import pytest

from agent.log.events import CORE_EVENTS, SURFACE_TYPES, Event
from agent.log.registry import EventError, EventRegistry, event_type_name

SAMPLE_DATA: dict[str, dict[str, object]] = {
    "session/start": {"id": "s1", "version": 1, "cwd": "/tmp", "created_at": 1.5},
    "session/resume": {},
    "session/name": {"name": "api refactor"},
    "session/approval": {"policy": "ask", "given_by": "default"},
    "session/fork": {"parent": "s0", "at_seq": 4},
    "session/provider": {
        "kind": "openai-compatible",
        "name": "local",
        "model": "q",
        "base_url": "http://127.0.0.1:8080/v1",
        "api_key_env": "LOCAL_KEY",
    },
    "turn/start": {"turn": 1},
    "turn/end": {"turn": 2, "reason": "error", "error": "boom"},
    "step/start": {"turn": 1, "step": 1},
    "step/end": {"turn": 1, "step": 3},
    "request/header": {
        "provider": "openai",
        "model": "gpt-4.1",
        "system": "You are terse.",
        "tools": [{"type": "function", "function": {"name": "bash"}}],
        "params": {"temperature": 0},
        "context_window": 1047576,
    },
    "user/message": {"content": "find the bug", "source": "user"},
    "context/message": {"content": "cwd: /src", "source": "workspace"},
    "steering/message": {"content": "also check tests"},
    "assistant/message": {
        "turn": 1,
        "step": 1,
        "text": "Looking.",
        "reasoning": "think",
        "tool_calls": [{"id": "c1", "name": "bash", "arguments": '{"command": "ls"}'}],
        "finish_reason": "tool_calls",
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 2},
        "model": "gpt-4.1",
    },
    "tool/start": {"turn": 1, "step": 1, "call_id": "c1", "name": "bash", "arguments": "{}"},
    "tool/result": {
        "turn": 1,
        "step": 1,
        "call_id": "c1",
        "name": "bash",
        "content": "a\nb\n[exit 0 · 0.01s]",
        "is_error": False,
        "exit_code": 0,
        "duration_s": 0.01,
        "truncated": False,
        "files": {
            "before": "a" * 40,
            "after": "b" * 40,
            "changes": [{"path": "x.py", "kind": "modified", "added": 2, "removed": 1}],
        },
    },
    "llm/retry": {"attempt": 1, "error": "429", "delay_s": 1.5},
    "command/run": {"command_id": "k1", "name": "compact", "args": "focus"},
    "command/done": {"command_id": "k1", "ok": True, "text": "Compacted"},
    "files/restore": {
        "before": "c" * 40,
        "after": "d" * 40,
        "restored": ["x.py"],
        "refused": {"y.py": "changed outside reefline since; left as it is"},
        "at_seq": 3,
    },
}


def assert_contains(actual: object, expected: object) -> None:
    """``actual`` holds everything in ``expected`` (defaults may add keys)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict)
        for key, value in expected.items():
            assert key in actual, key
            assert_contains(actual[key], value)
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert_contains(a, e)
    else:
        assert actual == expected


def test_sample_covers_every_core_type() -> None:
    assert set(SAMPLE_DATA) == {event_type_name(m) for m in CORE_EVENTS}


@pytest.mark.parametrize("type_name", sorted(SAMPLE_DATA))
def test_json_round_trip(type_name: str) -> None:
    registry = EventRegistry()
    on_surface = type_name in SURFACE_TYPES
    event = registry.build(
        type_name,
        seq=5,
        time=123.25,
        data=SAMPLE_DATA[type_name],
        surface_op={"op": "append"} if on_surface else None,
        source_event_seqs=[1, 2] if on_surface else None,
    )
    line = event.to_json()
    envelope = json.loads(line)
    assert envelope["seq"] == 5 and envelope["type"] == type_name and envelope["time"] == 123.25
    assert set(envelope) <= {"seq", "type", "time", "data", "surface_op", "source_event_seqs"}
    assert_contains(envelope["data"], SAMPLE_DATA[type_name])
    again = registry.parse(line)
    assert again == event
    assert type(again) is registry.model(type_name)


def test_unknown_type_rejected() -> None:
    line = json.dumps({"seq": 0, "type": "mystery/event", "time": 1, "data": {}})
    with pytest.raises(EventError, match="unknown event type 'mystery/event'"):
        EventRegistry().parse(line)


def test_surface_op_on_non_surface_type_rejected() -> None:
    line = json.dumps(
        {
            "seq": 3,
            "type": "turn/start",
            "time": 1,
            "data": {"turn": 1},
            "surface_op": {"op": "append"},
        }
    )
    with pytest.raises(EventError, match="not a surface type"):
        EventRegistry().parse(line)


def test_surface_type_requires_surface_op() -> None:
    line = json.dumps({"seq": 3, "type": "user/message", "time": 1, "data": {"content": "x"}})
    with pytest.raises(EventError, match="requires surface_op"):
        EventRegistry().parse(line)


def test_provenance_must_point_backwards() -> None:
    registry = EventRegistry()
    with pytest.raises(EventError, match="source_event_seqs"):
        registry.build(
            "user/message",
            seq=2,
            time=0,
            data={"content": "x"},
            surface_op={"op": "append"},
            source_event_seqs=[2],
        )


def test_unknown_payload_key_rejected() -> None:
    with pytest.raises(EventError, match=r"data\.bogus"):
        EventRegistry().build("turn/start", seq=1, time=0, data={"turn": 1, "bogus": True})


def test_registry_extension_without_core_knowing() -> None:
    from typing import Literal

    from agent.log.events import Data

    class PingData(Data):
        n: int

    class Ping(Event):
        type: Literal["plugin/ping"] = "plugin/ping"
        data: PingData

    registry = EventRegistry()
    line = json.dumps({"seq": 1, "type": "plugin/ping", "time": 0, "data": {"n": 4}})
    with pytest.raises(EventError):
        registry.parse(line)
    registry.register(Ping)
    registry.register(Ping)  # idempotent
    assert registry.parse(line).data == PingData(n=4)


def test_surface_set_is_closed() -> None:
    from typing import ClassVar, Literal

    from agent.log.events import EmptyData

    class Sneaky(Event):
        on_surface: ClassVar[bool] = True
        type: Literal["plugin/sneaky"] = "plugin/sneaky"
        data: EmptyData = EmptyData()

    with pytest.raises(EventError, match="closed"):
        EventRegistry().register(Sneaky)


def test_a_tool_result_records_its_sandbox_and_older_logs_still_load() -> None:
    registry = EventRegistry()
    older = {**SAMPLE_DATA["tool/result"]}  # written before the sandbox: no such key
    envelope = {"seq": 4, "type": "tool/result", "time": 1, "surface_op": {"op": "append"}}
    assert registry.parse(json.dumps({**envelope, "data": older})).data.sandbox is None
    for mode in ("off", "read-only", "workspace-write"):
        line = json.dumps({**envelope, "data": {**older, "sandbox": mode}})
        event = registry.parse(line)
        assert event.data.sandbox == mode
        assert registry.parse(event.to_json()) == event
    with pytest.raises(EventError, match=r"data\.sandbox"):
        registry.parse(json.dumps({**envelope, "data": {**older, "sandbox": "full"}}))
