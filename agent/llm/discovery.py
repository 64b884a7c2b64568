"""Ask a model server what context window it serves.

A local server is often started with a smaller context than the weights support
(llama.cpp's ``-c``, vLLM's ``--max-model-len``, Ollama's ``num_ctx``), so the built-in table
is a guess there; the server knows. :func:`ask_window` tries, in order, within one short
budget for them all, and is silent when the server says nothing usable (or is too slow),
but raises :class:`NotUp` when the server is not up yet: nothing listens there (the first
request then fails with the reason), or it answers the listing with HTTP 503 (llama-server
answers every endpoint so while it loads its model). The question is worth asking again
once the server is up:

- ``GET {base}/models`` (OpenAI's listing; ``base`` ends in ``/v1``): vLLM's
  ``max_model_len``, llama.cpp's ``meta.n_ctx``, LM Studio's ``loaded_context_length``,
  OpenRouter-style ``context_length``;
- ``GET {root}/props``: llama.cpp's ``default_generation_settings.n_ctx`` (per slot);
- ``POST {root}/api/show``: Ollama's ``num_ctx`` parameter, else the model's
  ``*.context_length``;
- ``GET {root}/api/v0/models/{model}``: LM Studio's ``loaded_context_length``.

The parsers are pure functions over the decoded JSON, tested against recorded answers.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from agent.llm.windows import WindowBook
from agent.secret import Secret

if TYPE_CHECKING:
    import httpx2

ASK_TIMEOUT_S = 2.0
"""For all the probes together: a server that takes longer to say its window is not worth
the wait before the first request."""


class NotUp(Exception):
    """The server is not up yet: nothing listens at its address (connection refused, no
    such host), or it says it is not ready (HTTP 503 to the model listing)."""


@dataclass(frozen=True)
class Answer:
    tokens: int
    detail: str
    """Which endpoint and field said so (``llama.cpp /props n_ctx``)."""


def _positive(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and 0 < value < 1 << 40:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 15:
        return _positive(int(value.strip()))
    return None


def _entry(listing: object, model: str) -> dict[str, Any] | None:
    """The listing's entry for ``model``; the only entry when there is exactly one."""
    if not isinstance(listing, dict):
        return None
    data = listing.get("data") or listing.get("models")
    if not isinstance(data, list):
        return None
    entries = [e for e in data if isinstance(e, dict)]
    for e in entries:
        if model in (e.get("id"), e.get("name"), e.get("model")):
            return e
    return entries[0] if len(entries) == 1 else None


def from_models(listing: object, model: str) -> Answer | None:
    """A serving window from an OpenAI-style model listing. Training-time figures
    (llama.cpp's ``n_ctx_train``, LM Studio's ``max_context_length``) are not the window the
    server runs and are left for the other probes."""
    entry = _entry(listing, model)
    if entry is None:
        return None
    raw_meta = entry.get("meta")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    for where, value in (
        ("vLLM max_model_len", entry.get("max_model_len")),
        ("llama.cpp meta.n_ctx", meta.get("n_ctx")),
        ("LM Studio loaded_context_length", entry.get("loaded_context_length")),
        ("context_length", entry.get("context_length")),
    ):
        if (tokens := _positive(value)) is not None:
            return Answer(tokens, f"/v1/models {where}")
    return None


def from_props(props: object) -> Answer | None:
    """llama.cpp's ``/props``: the context of one slot (``n_ctx`` divided by ``--parallel``)."""
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    if isinstance(settings, dict) and (tokens := _positive(settings.get("n_ctx"))):
        return Answer(tokens, "llama.cpp /props n_ctx")
    if tokens := _positive(props.get("n_ctx")):
        return Answer(tokens, "llama.cpp /props n_ctx")
    return None


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def from_ollama_show(show: object) -> Answer | None:
    """Ollama's ``/api/show``: ``num_ctx`` when the model sets it (what it is served with),
    else the model's own ``<arch>.context_length``."""
    if not isinstance(show, dict):
        return None
    parameters = show.get("parameters")
    found = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    if found and (tokens := _positive(found.group(1))):  # 400 digits are no window
        return Answer(tokens, "Ollama /api/show num_ctx")
    info = show.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if key.endswith(".context_length") and (tokens := _positive(value)):
                return Answer(tokens, "Ollama /api/show context_length")
    return None


def from_lmstudio(model_info: object) -> Answer | None:
    """LM Studio's ``/api/v0/models/{model}``: the context the loaded model runs with."""
    if not isinstance(model_info, dict):
        return None
    if tokens := _positive(model_info.get("loaded_context_length")):
        return Answer(tokens, "LM Studio loaded_context_length")
    return None


def server_root(base_url: str) -> str:
    """``http://host:port`` part of an OpenAI base URL (``…/v1`` dropped)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


async def ask_window(
    base_url: str,
    model: str,
    api_key: Secret | None = None,
    *,
    timeout_s: float = ASK_TIMEOUT_S,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> Answer | None:
    """What the server at ``base_url`` says ``model``'s window is, or None (see module).

    Raises:
        NotUp: nothing listens at ``base_url``, or it is still starting.
    """
    import httpx2  # only when a server is asked: the offline demo starts without it

    base = base_url.rstrip("/")
    root = server_root(base)
    probes: list[tuple[str, str, dict[str, Any] | None, Callable[[Any], Answer | None]]] = [
        ("GET", f"{base}/models", None, lambda body: from_models(body, model)),
        ("GET", f"{root}/props", None, from_props),
        ("POST", f"{root}/api/show", {"model": model}, from_ollama_show),
        ("GET", f"{root}/api/v0/models/{quote(model, safe='')}", None, from_lmstudio),
    ]
    async with httpx2.AsyncClient(
        timeout=timeout_s,
        # Revealed into the header only: no local of this frame holds the key in clear.
        headers={"Authorization": f"Bearer {api_key.reveal()}"} if api_key else {},
        transport=transport,
        follow_redirects=False,
    ) as client:
        try:
            # One budget for all the probes: a server that hangs costs ``timeout_s`` once.
            async with asyncio.timeout(timeout_s):
                for n, (method, url, payload, parse) in enumerate(probes):
                    found = await _probe(client, method, url, payload, parse, listing=n == 0)
                    if found is not None:
                        return found
        except httpx2.ConnectError as exc:
            raise NotUp(str(exc)) from None
        except (TimeoutError, httpx2.TransportError):
            pass  # too slow to be worth the wait, or cut off: the table stands
    return None


async def _probe(
    client: httpx2.AsyncClient,
    method: str,
    url: str,
    payload: dict[str, Any] | None,
    parse: Callable[[Any], Answer | None],
    *,
    listing: bool = False,
) -> Answer | None:
    """One question; None when it gets no usable answer. Transport errors (nothing
    listening) propagate: the other probes would meet the same.

    Raises:
        NotUp: ``listing`` (the OpenAI model listing, which every server has) answered 503.
    """
    import httpx2

    try:
        response = await client.request(method, url, json=payload)
        if listing and response.status_code == 503:
            raise NotUp(f"{url} answered 503 (the server is starting)")
        if response.status_code != 200 or len(response.content) > 1 << 20:
            return None
        return parse(response.json())
    except (httpx2.DecodingError, ValueError):
        return None


class WindowAsker:
    """Asks the server about each model once per session and tells the :class:`WindowBook`.

    ``enabled`` is False where asking is pointless: the official hosted APIs (their figures
    are in the table) and a window the user set. Concurrent calls share one question. A
    server that is not up yet is not counted as asked: the next step asks again.
    """

    def __init__(
        self,
        book: WindowBook,
        base_url: str | None,
        api_key: Secret | None,
        *,
        enabled: bool,
        timeout_s: float = ASK_TIMEOUT_S,
    ) -> None:
        self.book = book
        self.base_url = base_url
        self.api_key = api_key
        self.enabled = enabled and base_url is not None
        self.timeout_s = timeout_s
        self._pending: dict[str, asyncio.Task[Answer | None]] = {}
        self.told: set[str] = set()
        """Models the user was told are of unknown window (told once)."""

    async def ensure(self) -> bool:
        """Ask about the current model unless already asked; True when the window changed."""
        model = self.book.model
        if not self.enabled or model in self.book.asked or self.base_url is None:
            return False
        task = self._pending.get(model)
        if task is None:
            task = asyncio.ensure_future(
                ask_window(self.base_url, model, self.api_key, timeout_s=self.timeout_s)
            )
            self._pending[model] = task
        before = self.book.resolve(model)
        try:
            answer = await asyncio.shield(task)
        except NotUp:
            self._pending.pop(model, None)
            return False
        self._pending.pop(model, None)
        if model in self.book.asked:
            return False
        self.book.asked.add(model)
        if answer is not None:
            self.book.learn(model, answer.tokens, answer.detail)
        return self.book.resolve(model) != before
