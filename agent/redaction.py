"""Redaction: the one home of the rule that keeps secret values out of text.

Every :class:`~agent.secret.Secret` (an API key handed over at start-up) is remembered here
when it is made, so whatever shows or writes text can mask it without being handed the key:
the error translator (a provider may echo the key in an error), the reply builder (a model
may echo it in its text or reasoning) and the session log's one write path (anything else:
a prompt, a command's output, a tool call's arguments).

The rule: every whole occurrence of a secret becomes ``***``; so does a text's end that is
the start of a secret (at least :data:`PREFIX_CHARS` of it), since that is what a cut
through the secret leaves. Text is redacted *before* it is cut, and a cut text once more
(:func:`clip`). A stream, whose deltas may split a secret anywhere, goes through a
:class:`StreamRedactor`, which holds back a delta's end while it could still be the start
of a secret.
"""

from __future__ import annotations

import json
from typing import Any

MASK = "***"
MIN_SECRET_CHARS = 6
"""A shorter value (a placeholder such as ``x``) is no secret; masking it would garble text."""
PREFIX_CHARS = 6
"""The shortest start of a secret that is masked at a text's end (where a cut leaves it)."""
ELLIPSES = ("…", "...")
"""What a cut text may end with after the cut."""

_secrets: list[str] = []
"""Longest first, so that a secret holding another is masked whole."""


def remember(value: str) -> None:
    """Mask ``value`` from now on, wherever text is redacted (called by ``Secret``)."""
    if len(value) >= MIN_SECRET_CHARS and value not in _secrets:
        _secrets.append(value)
        _secrets.sort(key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with every secret masked, and a secret's start left at its end (before an
    ellipsis, if it has one) masked too."""
    if not _secrets:
        return text
    return _mask_tail(_mask_whole(text))


def clip(text: str, limit: int) -> str:
    """``text`` redacted, then cut to ``limit`` characters (marked with ``…``), then
    redacted again: the cut may leave a secret's start that was not one before."""
    longest = len(_secrets[0]) if _secrets else 0
    # Past this, nothing can change the first ``limit`` characters: a text of 100 MB is
    # not redacted whole to show 400 characters of it.
    head = text[: limit + longest + 1]
    masked = redact(head)
    if len(masked) <= limit and len(head) == len(text):
        return masked
    return redact(masked[:limit]) + "…"


def in_line(line: bytes) -> bool:
    """Whether a JSON line may hold a secret or a start of one worth masking: a cheap test
    (one substring search per secret) before :func:`redact_json` walks the value."""
    return any(_json_head(secret) in line for secret in _secrets)


def redact_json(value: Any) -> Any:
    """A JSON value (dicts, lists, strings...) with :func:`redact` applied to every string
    in it, keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k): redact_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    return value


class StreamRedactor:
    """Redacts a text that arrives in pieces: :meth:`feed` returns what can be shown of the
    text so far, holding back an end that may be the start of a secret the next piece
    completes; :meth:`flush` returns what is held, redacted, once the text is complete."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        if not _secrets:
            return piece
        text = _mask_whole(self._held + piece)
        keep = _open_start(text)
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return redact(held)


def _mask_whole(text: str) -> str:
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def _mask_tail(text: str) -> str:
    body, end = text, ""
    for ellipsis in ELLIPSES:
        if text.endswith(ellipsis):
            body, end = text[: -len(ellipsis)], ellipsis
            break
    started = _open_start(body)
    if started >= PREFIX_CHARS:
        return body[: len(body) - started] + MASK + end
    return text


def _open_start(text: str) -> int:
    """The length of the longest end of ``text`` that is a proper start of a secret."""
    longest = 0
    for secret in _secrets:
        first = secret[0]
        i = text.find(first, max(0, len(text) - len(secret) + 1))
        while i != -1 and len(text) - i > longest:
            if secret.startswith(text[i:]):
                longest = len(text) - i
                break
            i = text.find(first, i + 1)
    return longest


def _json_head(secret: str) -> bytes:
    """The first :data:`PREFIX_CHARS` characters of ``secret`` as a JSON line writes them."""
    return json.dumps(secret[:PREFIX_CHARS], ensure_ascii=False)[1:-1].encode()
