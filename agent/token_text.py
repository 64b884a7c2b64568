"""How a token count is written for people: one home, free of the event models, so a
tool that loads nothing heavy (``reefline sessions``) writes counts as every view does."""

from __future__ import annotations

__all__ = ["fmt_tokens"]


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
