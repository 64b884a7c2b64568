"""A call's result as the text the model reads: the text content joined, anything else (an
image, audio, a resource) as a one-line placeholder, capped and spilled as bash output is
(:class:`tools.capture.Capture`, which also strips terminal escapes from it)."""

from __future__ import annotations

import itertools
import json
from typing import Any

from tools.capture import Capture
from tools.spill import SpillFolder

_SEQ = itertools.count(1)


def content_text(result: Any) -> str:
    """The parts of a ``CallToolResult`` joined by blank lines; structured content alone
    when there is no content (as JSON)."""
    parts = [_part(block) for block in result.content or ()]
    if not parts and getattr(result, "structured_content", None) is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n\n".join(parts)


def _part(block: Any) -> str:
    kind = getattr(block, "type", "?")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        size = len(getattr(block, "data", "") or "") * 3 // 4
        mime = getattr(block, "mime_type", None) or kind
        return f"[{kind} not shown: {mime}, about {size:,} bytes]"
    if kind == "resource_link":
        return f"[resource link not shown: {getattr(block, 'uri', '?')}]"
    if kind == "resource":
        uri = getattr(getattr(block, "resource", None), "uri", "?")
        return f"[embedded resource not shown: {uri}]"
    return f"[{kind} content not shown]"


def capped(text: str, cap: int, spill: SpillFolder) -> tuple[str, bool, str | None]:
    """``text`` as the model sees it: sanitized, and past ``cap`` characters its head and
    tail with the whole saved to a spill file. Returns the text, whether it was cut, and
    the spill file's path."""
    capture = Capture(cap, spill, next(_SEQ))
    capture.feed(text.encode())
    shown, truncated = capture.render()
    return shown, truncated, capture.spill_path
