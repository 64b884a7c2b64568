"""Token estimation that works with no network.

:class:`Estimator` counts tokens with tiktoken (``o200k_base``; ``cl100k_base`` for the older
GPT-4 / GPT-3.5 family), from vocab files seeded offline (:mod:`agent.vocab`). When tiktoken
cannot be used at all it falls back to ``ceil(chars / 4)`` and says so once
(:attr:`Estimator.notice`).

The tokenizer is loaded when first needed, not when the estimator is made: building it costs
about what importing the model SDK does. Until then an estimator can still give an *upper
bound* for free (:meth:`Estimator.message_bound`): a BPE token covers at least one byte, so a
text has at most as many tokens as UTF-8 bytes. That is enough to tell that a short history is
far from the compaction threshold, so the first request need not wait for the tokenizer, which
loads in the background meanwhile (:meth:`Estimator.warm`).

Chat framing: every message costs :data:`MESSAGE_OVERHEAD` tokens (role and separators) and
every content block or tool call another :data:`BLOCK_OVERHEAD` on top of its text. These are
the same fixed figures the upstream meter uses; they slightly over-count compared to OpenAI's
own "+3 per message" rule, which errs on the safe side for a compaction trigger.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent import vocab
from agent.vocab import CACHE_KEYS, default_cache_dir, ensure_offline_tiktoken

__all__ = [
    "BLOCK_OVERHEAD",
    "CACHE_KEYS",
    "CHARS_PER_TOKEN",
    "DEFAULT_ENCODING",
    "MESSAGE_OVERHEAD",
    "Estimator",
    "default_cache_dir",
    "encoding_for_model",
    "ensure_offline_tiktoken",
    "tools_json",
]

MESSAGE_OVERHEAD = 4
"""Tokens of chat framing per message (role marker and separators)."""
BLOCK_OVERHEAD = 4
"""Tokens of chat framing per content block or tool call within a message."""
CHARS_PER_TOKEN = 4
"""Divisor of the fallback estimate when tiktoken is unavailable."""

DEFAULT_ENCODING = "o200k_base"
LEGACY_ENCODING = "cl100k_base"

# Model families tokenized with cl100k_base. Newer families (gpt-4o, gpt-4.1, gpt-4.5, gpt-5,
# o-series) and every non-OpenAI model use o200k_base, the better default for modern vocabularies.
_LEGACY_PREFIXES = ("gpt-4", "gpt-3.5", "gpt-35")
_MODERN_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5")


def encoding_for_model(model: str | None) -> str:
    """The tiktoken encoding to estimate ``model`` with.

    ``cl100k_base`` for gpt-4, gpt-4-turbo and gpt-3.5 (and their dated snapshots);
    ``o200k_base`` for everything else, including unknown and non-OpenAI models.
    """
    if not model:
        return DEFAULT_ENCODING
    name = model.strip().lower().rsplit("/", 1)[-1]  # "openai/gpt-4" → "gpt-4"
    if name.startswith(_MODERN_PREFIXES):
        return DEFAULT_ENCODING
    if name.startswith(_LEGACY_PREFIXES):
        return LEGACY_ENCODING
    return DEFAULT_ENCODING


# --- the estimator ----------------------------------------------------------------------------


EXACT_CHARS = 200_000
"""Longer text is counted from samples (see :meth:`Estimator.count`)."""


class Estimator:
    """Counts tokens for one encoding; thread-safe, cheap to construct.

    Args:
        model: pick the encoding for this model (see :func:`encoding_for_model`).
        encoding_name: use this encoding instead (wins over ``model``).
        cache_dir: where to seed the vocab files if the user set no ``TIKTOKEN_CACHE_DIR``.

    The tokenizer loads on the first count (or in the background after :meth:`warm`). If it
    cannot be loaded, :attr:`fallback` is True, :meth:`count` returns ``ceil(len(text) / 4)``
    and :attr:`notice` says why (show it once: :meth:`take_notice`); the usual reasons (no
    tiktoken, no vocab file) are known at construction.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        encoding_name: str | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.encoding_name: str = encoding_name or encoding_for_model(model)
        self._cache_dir = cache_dir
        self._encoding: vocab.Encoding | None = None
        self._reason = vocab.prepare(self.encoding_name, cache_dir)
        self._warming: threading.Thread | None = None
        self._notice_taken = False

    # --- the tokenizer ------------------------------------------------------------------------

    def _resolve(self) -> vocab.Encoding | None:
        """The tokenizer, loading it (or waiting for the load) when needed; None: fallback."""
        if self._encoding is None and self._reason is None:
            loaded = vocab.load(self.encoding_name, self._cache_dir)
            if isinstance(loaded, str):
                self._reason = loaded
            else:
                self._encoding = loaded
        return self._encoding

    @property
    def ready(self) -> bool:
        """True when counting will not wait for the tokenizer to load."""
        return (
            self._encoding is not None
            or self._reason is not None
            or vocab.loaded(self.encoding_name)
        )

    def warm(self) -> None:
        """Start loading the tokenizer in a background thread, if it is not loaded yet.
        Idempotent; a count made meanwhile waits for that load instead of starting another."""
        if self.ready or self._warming is not None:
            return
        self._warming = threading.Thread(target=self._resolve, name="tokenizer", daemon=True)
        self._warming.start()

    async def warmed(self) -> None:
        """Wait, off the event loop, for the end of a load :meth:`warm` started (at once
        when none runs; done by then on an idle machine). The pre-step check waits for it at
        the checkpoint after the one that started it, so that the step sizes, which set the
        cost mark and the "compacting soon" forecast, are measured from there on however
        busy the machine: left to race the load, the mark came before the forecast did."""
        warming = self._warming
        if warming is not None and not self.ready:
            await asyncio.to_thread(warming.join)

    @property
    def notice(self) -> str | None:
        """Why counts are approximate, or None when tiktoken is in use (loads it)."""
        self._resolve()
        if self._reason is None:
            return None
        return (
            f"Token counts are approximate (about {CHARS_PER_TOKEN} characters per token): "
            f"{self._reason}."
        )

    @property
    def known_notice(self) -> str | None:
        """:attr:`notice` as far as it is known without loading the tokenizer."""
        return self.notice if self._reason is not None else None

    @property
    def fallback(self) -> bool:
        """True when counting by characters because tiktoken could not be used."""
        return self._resolve() is None

    def take_notice(self) -> str | None:
        """The fallback notice the first time it is asked for, then None."""
        if self._notice_taken:
            return None
        self._notice_taken = True
        return self.notice

    def count(self, text: str) -> int:
        """Tokens in ``text`` (special-token strings count as ordinary text).

        Bounded: text longer than :data:`EXACT_CHARS` is counted exactly at its head and
        tail and extrapolated in between, so a 50 MB message costs what 200 kB do (the
        estimate is for a gauge, not a bill)."""
        if not text:
            return 0
        encoding = self._resolve()
        if encoding is None:
            return math.ceil(len(text) / CHARS_PER_TOKEN)
        if len(text) <= EXACT_CHARS:
            return len(encoding.encode_ordinary(text))
        half = EXACT_CHARS // 2
        sampled = len(encoding.encode_ordinary(text[:half]))
        sampled += len(encoding.encode_ordinary(text[-half:]))
        return math.ceil(sampled * len(text) / EXACT_CHARS)

    @staticmethod
    def bound(text: str) -> int:
        """At least :meth:`count` of ``text``, whatever the encoding, without the tokenizer:
        a token covers at least one UTF-8 byte (and the fallback's chars/4 is less). Past
        :data:`EXACT_CHARS` the count is extrapolated, so the bound is 4 per character."""
        if len(text) > EXACT_CHARS:
            return 4 * len(text)
        return len(text.encode("utf-8", "surrogatepass"))

    # --- chat framing -------------------------------------------------------------------------

    def message_tokens(self, message: Mapping[str, Any]) -> int:
        """Price one OpenAI-style chat message: its text, tool calls and framing.

        ``MESSAGE_OVERHEAD`` per message plus, for each non-empty content block (a string
        ``content`` is one block) and each tool call, ``BLOCK_OVERHEAD`` and its tokens (a tool
        call's name and arguments). Roles, ids and ``type`` fields are covered by the framing.
        The text pieces are counted in one call (joined by newlines) to keep pricing cheap.
        """
        return _framed(message, self.count)

    def messages_tokens(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """Sum of :meth:`message_tokens` over ``messages``."""
        return sum(self.message_tokens(m) for m in messages)

    def system_tokens(self, system: str | None) -> int:
        """A system prompt as one framed message; 0 when empty."""
        return self.count(system) + MESSAGE_OVERHEAD if system else 0

    def tools_tokens(self, tools: Sequence[Mapping[str, Any]] | None) -> int:
        """Tool schemas priced as their JSON text plus one block of framing; 0 when none."""
        if not tools:
            return 0
        return self.count(tools_json(tools)) + BLOCK_OVERHEAD

    # --- upper bounds, free before the tokenizer loads ----------------------------------------

    def message_bound(self, message: Mapping[str, Any]) -> int:
        """At least :meth:`message_tokens` of ``message``; never loads the tokenizer."""
        return _framed(message, self.bound)

    def header_bound(self, system: str | None, tools: Sequence[Mapping[str, Any]] | None) -> int:
        """At least :meth:`system_tokens` + :meth:`tools_tokens`; never loads the tokenizer."""
        total = self.bound(system) + MESSAGE_OVERHEAD if system else 0
        return total + (self.bound(tools_json(tools)) + BLOCK_OVERHEAD if tools else 0)

    def messages_at_most(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """:meth:`messages_tokens` once the tokenizer is loaded, a bound of it before."""
        if self.ready:
            return self.messages_tokens(messages)
        return sum(self.message_bound(m) for m in messages)

    def __repr__(self) -> str:
        if not self.ready:
            mode = "tiktoken, not loaded yet"
        else:
            mode = "fallback chars/4" if self.fallback else "tiktoken"
        return f"Estimator({self.encoding_name!r}, {mode})"


def _framed(message: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """:meth:`Estimator.message_tokens` with ``count`` pricing the joined text."""
    pieces: list[str] = []
    blocks = 0
    content = message.get("content")
    if isinstance(content, str):
        if content:
            pieces.append(content)
            blocks += 1
    elif isinstance(content, Sequence):
        for part in content:
            text = _part_text(part)
            if text:
                pieces.append(text)
                blocks += 1
    for call in message.get("tool_calls") or ():
        function = call.get("function", call) if isinstance(call, Mapping) else {}
        pieces.append(str(function.get("name", "")))
        pieces.append(str(function.get("arguments", "")))
        blocks += 1
    text = "\n".join(p for p in pieces if p)
    return MESSAGE_OVERHEAD + BLOCK_OVERHEAD * blocks + (count(text) if text else 0)


def tools_json(tools: Sequence[Mapping[str, Any]]) -> str:
    """The canonical JSON text of tool schemas (what is priced and compared)."""
    return json.dumps(list(tools), ensure_ascii=False, sort_keys=True)


def _part_text(part: object) -> str:
    """Text of one multi-part content entry; non-text parts are priced by their JSON."""
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            return str(part["text"])
        return json.dumps(part, ensure_ascii=False, sort_keys=True)
    return str(part)
