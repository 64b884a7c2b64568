"""How numbers, durations and text are written for people: one home for every layer above
the tools (the loop's notices, compaction's records, every front end), free of the event
models and of anything heavy, so a tool that loads nothing (``reefline sessions``) writes
figures as every view does."""

from __future__ import annotations

import math

__all__ = ["fmt_duration", "fmt_tokens", "one_line", "plural"]


def fmt_tokens(n: int) -> str:
    """A token count in at most three significant digits: ``950``, ``38.1k``, ``1.05M``."""
    if n < 0:
        return "-" + fmt_tokens(-n)
    if n < 1000:
        return str(n)
    value = float(n)
    for unit in ("k", "M", "G"):
        value /= 1000
        # Roll over before rounding would print four digits (999_999 -> "1M", not "1000k").
        if value < 999.5 or unit == "G":
            digits = 2 if value < 9.995 else 1 if value < 99.95 else 0
            text = f"{value:.{digits}f}"
            if "." in text:
                text = text.rstrip("0").rstrip(".")
            return text + unit
    raise AssertionError("unreachable")


def fmt_duration(seconds: float | None) -> str:
    """A short duration: ``4ms``, ``0.4s``, ``4.2s``, ``42s``, ``3m 05s``, ``1h 02m``; ``—``
    if unknown. The one duration format of every front end."""
    if seconds is None or math.isnan(seconds):
        return "—"
    s = max(0.0, seconds)
    if s < 0.095:
        return f"{round(s * 1000)}ms"
    if s < 9.95:
        return f"{s:.1f}s"
    if s < 59.5:
        return f"{round(s)}s"
    total = round(s)
    if total < 3600:
        return f"{total // 60}m {total % 60:02d}s"
    return f"{total // 3600}h {total % 3600 // 60:02d}m"


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` chars with ``…``."""
    flat = " ".join(text.split())
    if limit is not None and len(flat) > limit:
        return flat[: max(0, limit - 1)] + "…"
    return flat


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word``, or its plural (``many``, else ``word`` + "s") when n is not 1."""
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"
