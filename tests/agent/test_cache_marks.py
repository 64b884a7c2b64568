"""Where the cache breakpoints go (:mod:`agent.llm.cache_marks`), on plain request values."""

from __future__ import annotations

import copy
import json

from agent.llm.cache_marks import breakpoints, marked, marks, refuses_cache_key
from agent.llm.chat import ChatRequest
from agent.llm.errors import BadRequest, ContextOverflow
from agent.llm.prompt_cache import MAX_BREAKPOINTS

SYSTEM = {"role": "system", "content": "You are an agent."}
CALL = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}


def calls_only() -> dict:
    return {"role": "assistant", "content": "", "tool_calls": [CALL]}


def result(text: str) -> dict:
    return {"role": "tool", "tool_call_id": "c1", "content": text}


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def test_the_system_prompt_checkpoint_and_two_newest_ends_at_most_four() -> None:
    messages = [SYSTEM, user("checkpoint"), user("go"), calls_only(), result("a")]
    messages += [calls_only(), result("b"), calls_only(), result("c")]
    request = ChatRequest("claude", messages, checkpoint=1)
    assert breakpoints(request) == [0, 1, 6, 8]
    kept = copy.deepcopy(messages)
    wire = marked(request)
    assert messages == kept  # the request's messages (the log's cache) are never changed
    assert marks(wire) == MAX_BREAKPOINTS
    assert wire[8]["content"] == [
        {"type": "text", "text": "c", "cache_control": {"type": "ephemeral"}}
    ]
    assert [wire[i] for i in (2, 3, 4, 5, 7)] == [messages[i] for i in (2, 3, 4, 5, 7)]


def test_a_message_without_text_passes_its_mark_to_the_nearest_earlier_one() -> None:
    messages = [SYSTEM, user("go"), calls_only(), result(""), calls_only(), result("")]
    assert breakpoints(ChatRequest("claude", messages)) == [0, 1]


def test_a_summary_request_marks_the_prefix_it_repeats_not_its_instruction() -> None:
    conversation = [SYSTEM, user("go"), calls_only(), result("a"), calls_only(), result("b")]
    messages = [*conversation, user("Summarize")]
    request = ChatRequest("claude", messages, prefix_end=len(messages) - 1)
    assert breakpoints(request) == [0, 3, 5]  # the last step request's end, read whole


def test_content_parts_keep_their_parts_and_the_last_text_one_is_marked() -> None:
    parts = [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    request = ChatRequest("claude", [SYSTEM, {"role": "user", "content": parts}])
    wire = marked(request)
    assert wire[1]["content"] == [parts[0], {**parts[1], "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in json.dumps(request.messages)


def test_only_a_refusal_naming_the_key_drops_it() -> None:
    said = "openai-compatible says (HTTP 400): Unrecognized request argument supplied: "
    assert refuses_cache_key(BadRequest(said + "prompt_cache_key", status=400))
    extra = "HTTP 422: [{'loc': ['body', 'prompt_cache_key'], 'msg': 'extra fields not permitted'}]"
    assert refuses_cache_key(BadRequest(extra, status=422))
    assert not refuses_cache_key(BadRequest(said + "tool_choice", status=400))
    assert not refuses_cache_key(ContextOverflow("prompt_cache_key and too many tokens"))
