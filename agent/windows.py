"""Context windows of well-known models.

The table holds only figures the vendors publish for their own serving. Self-hosted models
(llama, qwen) list the window the weights support natively; a server may be started with a
smaller one (llama.cpp's ``--ctx-size``, vLLM's ``--max-model-len``), which is what settings
overrides are for. An unknown model gets ``None``: the gauge says so rather than guessing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

KNOWN_CONTEXT_WINDOWS: Mapping[str, int] = {
    # OpenAI
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
    "gpt-5-chat": 128_000,  # the ChatGPT snapshot has a smaller window than the API models
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    # DeepSeek API (V3.x behind both names)
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
    # Open weights, native window. Ollama spells them "llama3.1:8b", Hugging Face
    # "meta-llama/Llama-3.1-8B-Instruct"; both forms are listed.
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "llama-3.1": 131_072,
    "llama-3.2": 131_072,
    "llama-3.3": 131_072,
    # Qwen2.5 and Qwen3 reach 131,072 only with YaRN scaling switched on in the server; the
    # native figure is the safe one (an overestimate means overflow errors, not early compaction).
    "qwen2.5": 32_768,
    "qwen3": 32_768,
    "smollm2": 8_192,
}

# A table key matches a longer name only at one of these separators, so "o3" covers
# "o3-2025-04-16" but "gpt-4" would never swallow "gpt-4o".
_SEPARATORS = ("-", ":", "@", "_")


def _normalize(model: str) -> str:
    # Routers and Hugging Face ids carry an owner prefix ("openai/gpt-4o"); the window belongs
    # to the model, not the owner.
    return model.strip().lower().rsplit("/", 1)[-1]


def _lookup(name: str, table: Mapping[str, int]) -> int | None:
    if name in table:
        return table[name]
    best: str | None = None
    for key in table:
        at_separator = name.startswith(key) and name[len(key)] in _SEPARATORS
        if at_separator and (best is None or len(key) > len(best)):
            best = key
    return table[best] if best is not None else None


def known_context_window(model: str, overrides: Mapping[str, int] | None = None) -> int | None:
    """The context window of ``model`` in tokens, or ``None`` when it is not known.

    ``overrides`` (from settings) win over the built-in table. Lookup is case-insensitive,
    ignores an owner prefix such as ``openai/``, and falls back to the longest key that is a
    prefix of the name at a separator, so dated variants (``gpt-4o-2024-08-06``) and tagged
    ones (``llama3.1:8b``) resolve to their family.
    """
    if overrides:
        if model in overrides:
            return overrides[model]
        folded = {_normalize(k): v for k, v in overrides.items()}
        found = _lookup(_normalize(model), folded)
        if found is not None:
            return found
    return _lookup(_normalize(model), KNOWN_CONTEXT_WINDOWS)


WindowSource = Literal["set", "server", "table", "overflow", "demo"]
"""Where a window figure came from: the user's setting, the server's own answer, the table
above, a context-overflow error that stated the limit, or the offline demo model's own."""

_SOURCE_WORDS: Mapping[str, str] = {
    "set": "set",
    "server": "from server",
    "table": "from table",
    "overflow": "from the server's error",
    "demo": "of the demo",
}


@dataclass(frozen=True)
class Window:
    """A context window figure and where it came from (``tokens`` None: unknown)."""

    tokens: int | None
    source: WindowSource | None = None
    detail: str = ""
    """How it was found, for /context (``llama.cpp /props``, ``vLLM max_model_len``...)."""

    @property
    def where(self) -> str:
        """``from server``, ``from table``, ``set``... (empty when unknown)."""
        return _SOURCE_WORDS.get(self.source or "", "")

    def label(self) -> str:
        """``window 4,096 from server``, or ``window unknown``."""
        if self.tokens is None:
            return "window unknown"
        return f"window {self.tokens:,} {self.where}".rstrip()


class WindowBook:
    """The one owner of the context window in use: the loop's output cap, the meter, the
    gauge and compaction all read :attr:`current`; nothing else keeps a copy.

    Per model, the figure is resolved as: a limit stated by a context-overflow error, when it
    is below everything else; else the window the user set (``--context-window``); else the
    server's own answer (:meth:`learn`, cached per model for the life of the book, which
    serves one base URL); else ``lookup`` (the built-in table). ``lookup`` is the model
    object's ``context_window``.
    """

    def __init__(
        self,
        model: str,
        *,
        configured: int | None = None,
        lookup: Callable[[str], int | None] | None = None,
        lookup_source: WindowSource = "table",
    ) -> None:
        self.model = model
        self.configured = configured
        self._lookup = lookup or (lambda name: None)
        self._lookup_source: WindowSource = lookup_source
        self._server: dict[str, Window] = {}
        self._lowered: dict[str, Window] = {}
        self.asked: set[str] = set()
        """Models the server has been asked about (answer or not): ask once per model."""

    @classmethod
    def fixed(cls, tokens: int | None) -> WindowBook:
        """A book that always answers ``tokens`` (source ``set``), for tests and tools."""
        return cls("", configured=tokens)

    @property
    def current(self) -> Window:
        return self.resolve(self.model)

    def resolve(self, model: str) -> Window:
        """The window ``model`` would have (see the class docstring for the order)."""
        if self.configured is not None:
            chosen = Window(self.configured, "set")
        elif model in self._server:
            chosen = self._server[model]
        else:
            table = self._lookup(model)
            chosen = Window(table, self._lookup_source if table is not None else None)
        lowered = self._lowered.get(model)
        below = lowered is not None and (chosen.tokens or 0) > (lowered.tokens or 0) > 0
        if lowered is not None and (below or chosen.tokens is None):
            return lowered
        return chosen

    def select(self, model: str) -> Window:
        """Switch to ``model``; returns its window."""
        self.model = model
        return self.current

    def learn(self, model: str, tokens: int, detail: str) -> None:
        """Record the server's answer for ``model``."""
        self.asked.add(model)
        self._server[model] = Window(tokens, "server", detail)

    def lower(self, limit: int, detail: str) -> bool:
        """A context-overflow error said the limit is ``limit``: use it for the current model
        from now on when it is below the window in use. True when the window changed."""
        now = self.current.tokens
        if limit <= 0 or (now is not None and limit >= now):
            return False
        self._lowered[self.model] = Window(limit, "overflow", detail)
        return True
