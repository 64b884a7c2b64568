"""A scripted OpenAI-compatible chat server for tests, benchmarks and end-to-end runs.

It is a real HTTP server (stdlib ``ThreadingHTTPServer`` on 127.0.0.1, ephemeral port, HTTP/1.1
keep-alive, chunked SSE) speaking ``POST /v1/chat/completions``, streamed (``"stream": true``)
or as one JSON body. Each request takes the next response from a queue; when the queue is
empty it answers with ``server.default`` (a short text reply). Every request body is recorded
in ``server.requests``; ``server.disconnects`` counts streams the client walked away from.

In tests: the ``openai_server`` fixture (tests/conftest.py). As a process:
``python -m tests.openai_server --script script.json`` prints ``PORT <n>`` and serves until
killed; the script file is a JSON list of response specs.

Response spec: a ``ScriptedResponse`` or a dict with the same keys, all optional.

    text          str    reply text, streamed in ``chunk_size``-character deltas
    words         int    append N filler words to the text (a big answer)
    reasoning     str    streamed first as ``delta.reasoning_content`` (DeepSeek style)
    tool_calls    list   [{"name": str, "arguments": str | object, "id": str?}], each streamed
                         with a distinct index: id + name first, then argument fragments
    repeat_id     bool   repeat the tool call id on every argument delta (some servers do)
    chunk_size    int    characters per delta (default 8)
    delay_s       float  pause before each event
    usage         bool | dict  true: computed usage chunk (sent only when the request asks
                         with stream_options.include_usage); a dict is sent as given; false: none
    cached_tokens int    report this cache figure (``prompt_tokens_details.cached_tokens``)
                         with the computed usage: a prefix the server "forgot" (0) or kept
    usage_chunk   dict   more top-level fields of the chunk that carries the usage (of the
                         whole body when not streamed), e.g. llama.cpp's ``timings``
    finish_reason str    default "tool_calls" when there are tool calls, else "stop";
                         "" sends none (a stream that ends cleanly but unfinished)
    model         str    model name in the chunks (default: the requested model)
    cut_after     int    close the connection after N events: no finish_reason, no [DONE]
    stall_after   int    after N events, go silent for ``stall_s`` seconds, then carry on
    stall_s       float
    malformed_after int  after N events, send a data line that is not JSON, then carry on
    error_after   int    after N events, send {"error": {...}} as an event and end the stream
    raw_after     int    after N events, send the data line ``raw`` as it is, then carry on
    raw           str    (a chunk nested too deep to parse, a line that echoes a key...)
    arguments_as_object  bool  send each call's arguments as the JSON value itself, in one
                         delta, instead of a string (some compatible servers do)
                         (a provider failing mid-reply); uses message, type and code below
    status        int    >= 400: answer with this HTTP error instead, body
                         {"error": {"message", "type", "code", "param"}}
    message, type, code  the error body fields
    retry_after   str | float  Retry-After header for the error
    hold          threading.Event  hold the request open, unanswered, until the test sets it
                         (or the server stops): the client is mid-request for as long as
                         the test needs, with no timing involved
    answered      threading.Event  set once the answer has been written whole

``server.prefix_cache`` (``--prefix-cache``) reports, with each computed usage, the prefix of
the request's messages that an earlier request sent unchanged as cached, as a provider's
prompt cache would (a response's ``cached_tokens`` overrides it); off, no cache figure is
reported.

``server.reject_tool_choice`` answers every request that sets ``tool_choice`` with HTTP 400,
as servers that do not know the field do; ``server.reject_cache_key`` does the same for
``prompt_cache_key``.

``server.bill_like_anthropic`` prices prompts as an Anthropic-style cache behind a gateway
does: nothing is cached without a ``cache_control`` mark; a prefix (tools and messages, up
to a marked message) that an earlier request marked is read, the longest one up to the
request's last mark; from there to the last mark is written (billed 1.25×); the rest is
read in full. The usage says so as OpenRouter does (``prompt_tokens_details.cached_tokens``
and ``.cache_write_tokens``) and as LiteLLM does (``cache_read_input_tokens`` and
``cache_creation_input_tokens`` beside it); ``server.bills`` keeps each request's
:class:`Bill`. A message's content given as parts counts as the text of its parts, so a
marked request and the same request unmarked have the same prompt tokens.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast


@dataclass
class ScriptedResponse:
    """One scripted answer; see the module docstring for the meaning of each field."""

    text: str = ""
    words: int = 0
    reasoning: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    repeat_id: bool = False
    chunk_size: int = 8
    delay_s: float = 0.0
    usage: bool | dict[str, Any] = True
    usage_chunk: dict[str, Any] = field(default_factory=dict)
    cached_tokens: int | None = None
    finish_reason: str | None = None
    model: str | None = None
    cut_after: int | None = None
    stall_after: int | None = None
    stall_s: float = 0.0
    malformed_after: int | None = None
    error_after: int | None = None
    raw_after: int | None = None
    raw: str = ""
    arguments_as_object: bool = False
    status: int = 200
    message: str = "error"
    type: str = "invalid_request_error"
    code: str | None = None
    retry_after: str | float | None = None
    hold: threading.Event | None = None
    answered: threading.Event | None = None
    """Set once this answer has been written whole (or failed to be)."""

    @classmethod
    def parse(cls, spec: ScriptedResponse | dict[str, Any]) -> ScriptedResponse:
        return spec if isinstance(spec, ScriptedResponse) else cls(**spec)

    @property
    def full_text(self) -> str:
        filler = " ".join(f"word{i}" for i in range(self.words))
        return self.text + (" " + filler if self.text and filler else filler)

    def calls(self) -> list[tuple[str, str, str]]:
        """(id, name, arguments JSON text) for each tool call."""
        out = []
        for i, call in enumerate(self.tool_calls):
            args = call.get("arguments", {})
            text = args if isinstance(args, str) else json.dumps(args)
            out.append((call.get("id", f"call_{i}_{len(text)}"), call["name"], text))
        return out


SUMMARY_MARK = "## Primary request and intent"


def text_of(content: object) -> str:
    """A message's content as text: a string as it is, content parts as their texts joined."""
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return str(content or "")


def cache_marks(message: dict[str, Any]) -> int:
    """How many ``cache_control`` marks ``message``'s content parts carry."""
    content = message.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for p in content if isinstance(p, dict) and "cache_control" in p)


@dataclass(frozen=True)
class Bill:
    """One request as an Anthropic-style cache bills it (``bill_like_anthropic``)."""

    prompt: int
    read: int
    """Read from the cache (0.1× the input price)."""
    written: int
    """Written to the cache (1.25×)."""
    marks: int
    request: int
    """The index of the request in ``server.requests``."""


def _extract_summary(
    messages: list[dict[str, Any]], max_tokens: int | None = None, final: str = ""
) -> str:
    """A checkpoint built from the messages: every user request quoted (also those quoted by
    an earlier checkpoint), so a fact from the first message survives every merge. Within
    ``max_tokens`` (counted as 1.5 characters a token: filler words tokenize densely) it
    shortens every quote, then drops the oldest ones but the first. Every line holding a
    ``FACT-`` token, in any message or in the ``final`` one (where originals of masked
    outputs are), is kept under Critical context: a summarizer that keeps what it is shown;
    so is every line of the user's (or of a checkpoint's) that says "from now on", when the
    ``final`` message asks to keep standing instructions (as reefline's does)."""
    requests: list[str] = []
    commands = 0
    facts = [line.strip() for line in final.splitlines() if "FACT-" in line]
    keep_standing = "standing instruction" in final  # only when the instruction asks for it
    for message in messages:
        text = text_of(message.get("content"))
        if message.get("role") != "user" or "<compacted-summary>" in text:
            facts += [line.strip() for line in text.splitlines() if "FACT-" in line]
        if keep_standing and message.get("role") == "user" and "from now on" in text.lower():
            facts += [line.strip() for line in text.splitlines() if "from now on" in line.lower()]
        if message.get("role") == "user":
            if "<compacted-summary>" in text:
                requests += [line for line in text.splitlines() if line.startswith("- User: ")]
            else:
                requests.append("- User: " + " ".join(text.split())[:300])
        commands += len(message.get("tool_calls") or ())
    quotes = list(dict.fromkeys(requests))
    budget = None if max_tokens is None else int(1.5 * max_tokens) - 80
    if budget is not None and sum(len(q) + 1 for q in quotes) > budget:
        # Shorter quotes first (the start of a request says the most), then fewer.
        each = max(48, budget // max(1, len(quotes)) - 1)
        quotes = list(dict.fromkeys(q[:each] for q in quotes))
        while len(quotes) > 2 and sum(len(q) + 1 for q in quotes) > budget:
            del quotes[1]
    body = "\n".join(quotes) or "- (none)"
    kept = "".join(f"- {f.removeprefix('- ')}\n" for f in dict.fromkeys(facts))
    critical = f"\n## Critical context\n{kept}" if kept else ""
    return f"{SUMMARY_MARK}\n{body}\n{critical}\n## Current work\n- {commands} commands run\n"


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), max(1, size))]


class OpenAIServer:
    """The server; start with ``start()`` or use as a context manager."""

    def __init__(self, port: int = 0) -> None:
        self.queue: deque[ScriptedResponse] = deque()
        self.default = ScriptedResponse(text="Hello from the scripted server.")
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.other_requests: list[tuple[str, str, dict[str, str]]] = []
        """Every request that is not a chat completion (the window checks: ``/v1/models``,
        ``/props``, ``/api/show``...): method, path and headers (names in lower case)."""
        self.summarized = threading.Event()
        """Set once a summary request (``summarize``) has been answered whole."""
        self.arrived: list[float] = []
        """Wall-clock time (``time.time()``) each request arrived, by index."""
        self.disconnects = 0
        self.summarize = False
        """Answer summarization requests with an extractive checkpoint of the request."""
        self.summary_stall_s = 0.0
        """Stall each summary answer this long after its first event (crash tests)."""
        self.summary_status = 0
        """>= 400: refuse every summary request with this HTTP error (a failing summarizer)."""
        self.agent_commands: list[str] = []
        """With an empty queue: call bash with these commands in turn, then answer."""
        self._task = ""
        self._issued: dict[str, int] = {}
        """Commands the scripted agent issued for each task (its prompt's text)."""
        self.prefix_cache = False
        """Report the prefix an earlier request sent as cached (see the module docstring)."""
        self.reject_tool_choice = False
        """Refuse any request that sets ``tool_choice`` (HTTP 400), as some servers do."""
        self.reject_cache_key = False
        """Refuse any request that sets ``prompt_cache_key`` (HTTP 400), as servers that do
        not know the field do."""
        self.bill_like_anthropic = False
        """Price prompts as an Anthropic-style cache does (the module docstring)."""
        self.bills: list[Bill] = []
        self._marked: set[str] = set()
        """Every prefix a request marked, by its digest."""
        self.stopping = threading.Event()
        self.stalled = threading.Event()
        """Set when a response goes silent (``stall_after``): all before it was written."""
        self.unstalled = threading.Event()
        """Set it to end every stall now (a test that has seen what the stall is for)."""
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        cast(Any, self._httpd).app = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def push(self, *specs: ScriptedResponse | dict[str, Any]) -> None:
        """Queue responses, answered in order by the next requests."""
        with self._lock:
            self.queue.extend(ScriptedResponse.parse(s) for s in specs)

    def next_response(self) -> ScriptedResponse:
        with self._lock:
            return self.queue.popleft() if self.queue else self.default

    def record(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.arrived.append(time.time())

    def bill(self, body: dict[str, Any]) -> Bill:
        """Price ``body``'s prompt as an Anthropic-style cache does, and remember the prefixes
        it marks. Tokens: a quarter of the JSON characters of the messages as text."""
        digest = hashlib.sha256(json.dumps(body.get("tools") or [], sort_keys=True).encode())
        ends: list[tuple[str, int, bool]] = []  # per message: digest, tokens, marked
        chars = 0
        for message in body.get("messages") or []:
            plain = {**message, "content": text_of(message.get("content"))}
            unit = json.dumps(plain, sort_keys=True)
            digest.update(unit.encode())
            chars += len(unit)
            ends.append((digest.hexdigest(), chars // 4, cache_marks(message) > 0))
        prompt = chars // 4 + 1
        marked = [i for i, (_, _, mark) in enumerate(ends) if mark]
        with self._lock:
            index = next(i for i, sent in enumerate(self.requests) if sent is body)
            if not marked:
                bill = Bill(prompt, 0, 0, 0, index)
            else:
                last = marked[-1]
                read = max((t for d, t, _ in ends[: last + 1] if d in self._marked), default=0)
                written = ends[last][1] - read
                self._marked.update(ends[i][0] for i in marked)
                marks = sum(cache_marks(m) for m in body.get("messages") or [])
                bill = Bill(prompt, read, written, marks, index)
            self.bills.append(bill)
        return bill

    def automatic(self, body: dict[str, Any]) -> ScriptedResponse | None:
        """Answers that do not come from the queue: summaries (``summarize``) and, once the
        queue is empty, a bash-heavy agent (``agent_commands``)."""
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        content = text_of(last.get("content"))
        if self.summarize and last.get("role") == "user" and SUMMARY_MARK in content:
            if self.summary_status >= 400:
                return ScriptedResponse(status=self.summary_status, message="no summaries here")
            cap = body.get("max_tokens") or body.get("max_completion_tokens")
            return ScriptedResponse(
                text=_extract_summary(
                    messages[:-1], cap if isinstance(cap, int) else None, content
                ),
                stall_after=1 if self.summary_stall_s else None,
                stall_s=self.summary_stall_s,
                answered=self.summarized,
            )
        with self._lock:
            if self.queue or not self.agent_commands:
                return None
        done = 0
        for message in reversed(messages):
            if message.get("role") == "tool":
                done += 1
            elif message.get("role") == "user":
                text = text_of(message.get("content"))
                if text.startswith("Working directory:"):
                    continue  # the workspace context reefline puts back after a checkpoint
                if "<compacted-summary>" in text:
                    # The task's prompt was compacted away: go on from the count kept for
                    # it (the commands before the checkpoint are in it, not on view).
                    done = self._issued.get(self._task, done)
                else:
                    self._task = text
                break
        if done < len(self.agent_commands):
            with self._lock:
                self._issued[self._task] = done + 1
            return ScriptedResponse(
                tool_calls=[
                    {
                        "name": "bash",
                        "arguments": {"command": self.agent_commands[done]},
                        "id": f"auto_{len(self.requests)}",
                    }
                ]
            )
        return ScriptedResponse(text=f"Done: ran {done} commands.")

    def cached_prefix(self, body: dict[str, Any]) -> int:
        """Tokens (as :meth:`_Handler._usage` counts them) of the longest run of leading
        messages of ``body`` that a request before it sent as they are."""
        with self._lock:
            earlier = []
            for other in self.requests:
                if other is body:
                    break
                earlier.append(other)
        messages = body.get("messages") or []
        best = 0
        for other in earlier:
            sent = other.get("messages") or []
            n = 0
            while n < min(len(sent), len(messages)) and sent[n] == messages[n]:
                n += 1
            best = max(best, n)
        return len(json.dumps(messages[:best])) // 4 if best else 0

    def note_disconnect(self) -> None:
        with self._lock:
            self.disconnects += 1

    def start(self) -> OpenAIServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # wakes stalled handlers
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Small SSE writes must leave at once; Nagle + delayed ACK would add ~40 ms per event.
    disable_nagle_algorithm = True

    @property
    def app(self) -> OpenAIServer:
        return cast(OpenAIServer, cast(Any, self.server).app)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def _note_other(self, method: str) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        with self.app._lock:
            self.app.other_requests.append((method, self.path, headers))

    def do_GET(self) -> None:
        self._note_other("GET")
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._json(400, {"error": {"message": "body is not JSON", "type": "invalid_json"}})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._note_other("POST")
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        self.app.record(body, {k.lower(): v for k, v in self.headers.items()})
        if self.app.reject_tool_choice and "tool_choice" in body:
            error = {"message": "tool_choice is not supported", "type": "invalid_request_error"}
            self._json(400, {"error": {**error, "code": None, "param": "tool_choice"}})
            return
        if self.app.reject_cache_key and "prompt_cache_key" in body:
            said = "Unrecognized request argument supplied: prompt_cache_key"
            error = {"message": said, "type": "invalid_request_error"}
            self._json(400, {"error": {**error, "code": None, "param": "prompt_cache_key"}})
            return
        spec = self.app.automatic(body) or self.app.next_response()
        try:
            self._answer(spec, body)
        finally:
            if spec.answered is not None:
                spec.answered.set()

    def _answer(self, spec: ScriptedResponse, body: dict[str, Any]) -> None:
        while spec.hold is not None and not spec.hold.wait(0.05):
            if self.app.stopping.is_set():
                return
        if spec.status >= 400:
            error = {"message": spec.message, "type": spec.type, "code": spec.code, "param": None}
            extra = {} if spec.retry_after is None else {"Retry-After": str(spec.retry_after)}
            self._json(spec.status, {"error": error}, extra)
        elif body.get("stream"):
            try:
                self._stream(spec, body)
            except (BrokenPipeError, ConnectionResetError):
                self.app.note_disconnect()
                self.close_connection = True
        else:
            self._complete(spec, body)

    def _json(self, status: int, payload: object, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _usage(self, spec: ScriptedResponse, body: dict[str, Any]) -> dict[str, Any]:
        if isinstance(spec.usage, dict):
            return {"total_tokens": 0, **spec.usage}
        produced = spec.full_text + spec.reasoning + "".join(c[2] for c in spec.calls())
        completion = len(produced) // 4 + 1
        if self.app.bill_like_anthropic:
            bill = self.app.bill(body)
            return {
                "prompt_tokens": bill.prompt,
                "completion_tokens": completion,
                "total_tokens": bill.prompt + completion,
                "prompt_tokens_details": {
                    "cached_tokens": bill.read,
                    "cache_write_tokens": bill.written,
                },
                "cache_read_input_tokens": bill.read,
                "cache_creation_input_tokens": bill.written,
            }
        prompt = len(json.dumps(body.get("messages", []))) // 4 + 1
        total = prompt + completion
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": total,
        }
        cached = spec.cached_tokens
        if cached is None and self.app.prefix_cache:
            cached = self.app.cached_prefix(body)
        if cached is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": min(cached, prompt)}
        return usage

    def _finish_reason(self, spec: ScriptedResponse) -> str | None:
        if spec.finish_reason is not None:
            return spec.finish_reason or None  # "" = never say why the reply ended
        return "tool_calls" if spec.tool_calls else "stop"

    def _deltas(self, spec: ScriptedResponse) -> list[dict[str, Any]]:
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        deltas += [{"reasoning_content": p} for p in _pieces(spec.reasoning, spec.chunk_size)]
        deltas += [{"content": p} for p in _pieces(spec.full_text, spec.chunk_size)]
        for index, (call_id, name, args) in enumerate(spec.calls()):
            head = {"index": index, "id": call_id, "type": "function"}
            if spec.arguments_as_object:
                function = {"name": name, "arguments": json.loads(args)}
                deltas.append({"tool_calls": [{**head, "function": function}]})
                continue
            deltas.append({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
            for piece in _pieces(args, spec.chunk_size):
                call = {"index": index, "function": {"arguments": piece}}
                if spec.repeat_id:
                    call["id"] = call_id
                deltas.append({"tool_calls": [call]})
        return deltas

    def _stream(self, spec: ScriptedResponse, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        model = spec.model or body.get("model", "fake-model")
        base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "model": model}
        choices: list[dict[str, Any]] = [
            {"index": 0, "delta": d, "finish_reason": None} for d in self._deltas(spec)
        ]
        choices.append({"index": 0, "delta": {}, "finish_reason": self._finish_reason(spec)})
        events = [{**base, "created": int(time.time()), "choices": [c]} for c in choices]
        wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        if spec.usage and wants_usage:
            usage = {"usage": self._usage(spec, body)}
            events.append({**base, **spec.usage_chunk, "choices": [], **usage})
        for sent, event in enumerate(events):
            if sent == spec.cut_after:
                # Dropped connection: no terminating chunk, so the client sees a broken body.
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if sent == spec.stall_after:
                self.app.stalled.set()
                ends = time.monotonic() + spec.stall_s
                while not self.app.unstalled.is_set() and time.monotonic() < ends:
                    if self.app.stopping.wait(min(0.05, spec.stall_s)):
                        self.close_connection = True  # server shutting down
                        return
            if sent == spec.error_after:
                error = {"message": spec.message, "type": spec.type, "code": spec.code}
                self._chunk(b"data: " + json.dumps({"error": error}).encode() + b"\n\n")
                break
            if sent == spec.raw_after:
                self._chunk(b"data: " + spec.raw.encode() + b"\n\n")
            if sent == spec.malformed_after:
                self._chunk(b'data: {"id": "chatcmpl-scripted", "choices": [{\n\n')
            if spec.delay_s:
                time.sleep(spec.delay_s)
            self._chunk(b"data: " + json.dumps(event).encode() + b"\n\n")
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        """Write one HTTP/1.1 chunk (empty data = the terminating chunk)."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _complete(self, spec: ScriptedResponse, body: dict[str, Any]) -> None:
        if spec.stall_after is not None:
            self.app.stopping.wait(spec.stall_s)
        if spec.cut_after is not None:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        calls = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in spec.calls()
        ]
        if spec.arguments_as_object:
            for call in calls:
                call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        message: dict[str, Any] = {"role": "assistant", "content": spec.full_text or None}
        if calls:
            message["tool_calls"] = calls
        if spec.reasoning:
            message["reasoning_content"] = spec.reasoning
        payload: dict[str, Any] = {
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
            "model": spec.model or body.get("model", "fake-model"),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": self._finish_reason(spec)}],
        }  # fmt: skip
        if spec.usage:
            payload.update(spec.usage_chunk, usage=self._usage(spec, body))
        self._json(200, payload)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible chat server")
    parser.add_argument("--script", help="JSON file: a list of response specs")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--summarize", action="store_true", help="answer summary requests")
    parser.add_argument("--summary-stall", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--reject-tool-choice", action="store_true", help="400 on tool_choice")
    parser.add_argument("--reject-cache-key", action="store_true", help="400 on prompt_cache_key")
    parser.add_argument(
        "--bill-like-anthropic", action="store_true", help="cache only up to cache_control marks"
    )
    parser.add_argument(
        "--prefix-cache", action="store_true", help="report repeated prefixes as cached"
    )
    parser.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="COMMAND",
        help="with an empty queue, call bash with COMMAND (repeatable)",
    )
    args = parser.parse_args(argv)
    server = OpenAIServer(args.port)
    server.summarize = args.summarize
    server.summary_stall_s = args.summary_stall
    server.reject_tool_choice = args.reject_tool_choice
    server.prefix_cache = args.prefix_cache
    server.reject_cache_key = args.reject_cache_key
    server.bill_like_anthropic = args.bill_like_anthropic
    server.agent_commands = list(args.agent)
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            server.push(*json.load(f))
    print(f"PORT {server.port}", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stopping.set()
        server._httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
