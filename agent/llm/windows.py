"""The context window of the model in use, with one owner: :class:`WindowBook`.

What sets it, strongest first: the user (``--context-window``, ``context_windows`` in the
settings), the server (asked once per model, :mod:`agent.llm.discovery`), the table of published
windows (:mod:`agent.llm.window_table`). An overflow error that states the real limit lowers it.
The loop, the meter, the gauge and compaction all read the same book.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

WindowSource = Literal["set", "server", "table", "overflow", "demo"]
"""Where a window figure came from: the user's setting, the server's own answer, the
published table (:mod:`agent.llm.window_table`), a context-overflow error that stated the limit,
or the offline demo model's own."""

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
