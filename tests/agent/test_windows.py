"""The window owner (WindowBook) and the questions put to a server (agent.discovery)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent.llm.discovery import (
    NotUp,
    WindowAsker,
    ask_window,
    from_lmstudio,
    from_models,
    from_ollama_show,
    from_props,
    server_root,
)
from agent.llm.windows import WindowBook
from tests.wire import Exchange, ReplayServer, fixture


def table(name: str) -> int | None:
    return {"smollm2": 8192, "other": 32_768}.get(name)


# --- WindowBook --------------------------------------------------------------------------------


def test_the_order_is_set_then_server_then_table() -> None:
    book = WindowBook("smollm2", lookup=table)
    assert (book.current.tokens, book.current.source) == (8192, "table")
    book.learn("smollm2", 4096, "llama.cpp /props n_ctx")
    assert (book.current.tokens, book.current.label()) == (4096, "window 4,096 from server")
    book.configured = 16_000
    assert (book.current.tokens, book.current.where) == (16_000, "set")


def test_an_overflow_limit_lowers_but_never_raises_and_beats_a_setting() -> None:
    book = WindowBook("smollm2", configured=8192, lookup=table)
    assert not book.lower(9000, "overflow")  # above the window in use: not a lowering
    assert book.current.tokens == 8192
    assert book.lower(2048, "stated in an overflow error")
    assert (book.current.tokens, book.current.source) == (2048, "overflow")
    assert not book.lower(4096, "later error")  # still 2,048
    assert book.current.tokens == 2048


def test_the_window_follows_the_model_and_each_keeps_its_own_answer() -> None:
    book = WindowBook("smollm2", lookup=table)
    book.learn("smollm2", 4096, "props")
    book.lower(3000, "error")
    assert book.select("other").tokens == 32_768  # another model: its own figure
    assert book.select("mystery").tokens is None
    assert book.current.label() == "window unknown"
    assert book.select("smollm2").tokens == 3000


# --- parsers, on recorded and documented answers -----------------------------------------------


def test_llama_server_listing_gives_n_ctx_not_n_ctx_train() -> None:
    rec = fixture("llama-server", "tool-call")
    listing = json.loads(next(e for e in rec.exchanges if e.path == "/v1/models").body)
    meta = listing["data"][0]["meta"]
    assert meta["n_ctx"] != meta["n_ctx_train"]  # the recording run made sure of it
    answer = from_models(listing, "smollm2")
    assert answer is not None and answer.tokens == meta["n_ctx"]
    assert from_models(listing, "another-model") is not None  # the only entry is the model


def test_parsers_read_each_servers_own_field() -> None:
    assert from_props({"default_generation_settings": {"n_ctx": 4096}}).tokens == 4096  # type: ignore[union-attr]
    assert from_props({"n_ctx": 2048}).tokens == 2048  # type: ignore[union-attr]
    assert from_props({"default_generation_settings": {}}) is None
    show = {"parameters": 'stop "<|im_end|>"', "model_info": {"llama.context_length": 131072}}
    assert from_ollama_show(show).tokens == 131072  # type: ignore[union-attr]
    assert (
        from_lmstudio({"loaded_context_length": 8192, "max_context_length": 32768}).tokens == 8192
    )  # type: ignore[union-attr]
    vllm = {"data": [{"id": "a", "max_model_len": 1}, {"id": "b", "max_model_len": 16384}]}
    assert from_models(vllm, "b").tokens == 16384  # type: ignore[union-attr]
    assert from_models(vllm, "c") is None  # two entries, neither the model
    for junk in (None, [], "text", {"data": "x"}, {"data": [{"id": "b", "max_model_len": True}]}):
        assert from_models(junk, "b") is None
        assert from_props(junk) is None
        assert from_ollama_show(junk) is None
    # A window no server has is not said (it would overflow every share of it).
    assert from_ollama_show({"parameters": "num_ctx " + "9" * 400}) is None
    assert from_props({"n_ctx": 10**400}) is None and from_props({"n_ctx": "9" * 5000}) is None


def test_server_root_drops_v1() -> None:
    assert server_root("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080"
    assert server_root("http://h:1/api") == "http://h:1/api"


# --- asking ------------------------------------------------------------------------------------


def props_only(n_ctx: int) -> list[Exchange]:
    body = json.dumps({"default_generation_settings": {"n_ctx": n_ctx}})
    return [Exchange("GET", "/props", None, 200, "application/json", [body])]


async def test_each_probe_in_turn_until_one_answers() -> None:
    with ReplayServer(props_only(3072)) as server:  # /v1/models is a 404 here
        answer = await ask_window(server.base_url, "m")
        asked = [path for _, path, _ in server.requests]
    assert answer is not None and (answer.tokens, answer.detail) == (3072, "llama.cpp /props n_ctx")
    assert asked == ["/v1/models", "/props"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_silence_on_a_server_that_says_nothing_and_unreachable_where_none_is() -> None:
    with ReplayServer([]) as server:
        assert await ask_window(server.base_url, "m") is None
        assert len(server.requests) == 4  # every probe was tried
    with pytest.raises(NotUp):
        await ask_window(f"http://127.0.0.1:{free_port()}/v1", "m")  # nothing listening


async def test_a_server_not_up_yet_is_asked_again_once_it_is() -> None:
    """A server still starting is not taken for one that said nothing: the next step asks."""
    port = free_port()
    book = WindowBook("smollm2", lookup=lambda name: None)
    asker = WindowAsker(book, f"http://127.0.0.1:{port}/v1", None, enabled=True)
    assert await asker.ensure() is False
    assert "smollm2" not in book.asked and book.current.tokens is None
    with ReplayServer(props_only(4096), port=port) as server:
        assert await asker.ensure() is True  # the window it serves, learnt
        assert await asker.ensure() is False  # and asked once
        assert [path for _, path, _ in server.requests] == ["/v1/models", "/props"]
    assert "smollm2" in book.asked and book.current.label() == "window 4,096 from server"


async def test_a_server_still_loading_its_model_is_asked_again() -> None:
    """llama-server answers every endpoint 503 while it loads: not an answer, a "not yet"."""
    loading = json.dumps({"error": {"message": "Loading model", "type": "unavailable_error"}})
    exchanges = [
        Exchange("GET", "/v1/models", None, 503, "application/json", [loading]),
        *props_only(2048),
    ]
    book = WindowBook("smollm2", lookup=table)
    with ReplayServer(exchanges) as server:
        asker = WindowAsker(book, server.base_url, None, enabled=True)
        assert await asker.ensure() is False and "smollm2" not in book.asked
        assert book.current.source == "table"
        assert await asker.ensure() is True  # loaded now: /v1/models has nothing, /props says
        asked = [path for _, path, _ in server.requests]
    assert asked == ["/v1/models", "/v1/models", "/props"]
    assert book.current.label() == "window 2,048 from server"


async def test_a_server_that_never_answers_is_given_up_on() -> None:
    release = threading.Event()

    class Hang(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            release.wait(10)

        do_POST = do_GET

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hang)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        assert await ask_window(url, "m", timeout_s=0.2) is None
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()


async def test_the_asker_asks_once_per_model_even_when_called_together() -> None:
    book = WindowBook("smollm2", lookup=table)
    with ReplayServer(props_only(4096)) as server:
        asker = WindowAsker(book, server.base_url, None, enabled=True)
        changed = await asyncio.gather(asker.ensure(), asker.ensure())
        again = await asker.ensure()
        asked = list(server.requests)
    assert sorted(changed) == [False, True] and again is False
    assert [path for _, path, _ in asked] == ["/v1/models", "/props"]  # one question
    assert book.current.label() == "window 4,096 from server"


async def test_a_disabled_asker_asks_nothing() -> None:
    book = WindowBook("gpt-4.1", lookup=lambda name: 1_047_576)
    with ReplayServer(props_only(4096)) as server:
        assert await WindowAsker(book, server.base_url, None, enabled=False).ensure() is False
        assert server.requests == []
    assert book.current.source == "table"
