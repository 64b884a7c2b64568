"""A credential held in memory, which nothing that prints objects can show.

An API key travels from the launcher's hand-over (:mod:`agent.secret_env`) through the
provider, the model client and the window asker to the HTTP header. On the way it sits in
objects a log line, an error message or a crash report may print; as a :class:`Secret` each of
those prints ``Secret('***')``. Only :meth:`Secret.reveal` gives the value, and it is called
where the value is used: the SDK client's key, the ``Authorization`` header. Made, a Secret
hands its value to :mod:`agent.redaction`, which masks it in every text shown or logged.
"""

from __future__ import annotations

import hmac

from agent.redaction import remember


class Secret:
    """A string that ``repr``, ``str`` and ``format`` never show, and that redaction masks
    from now on. Not picklable (a pickle would hold the value); equal to another Secret of
    the same value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value
        remember(value)

    def reveal(self) -> str:
        """The value itself: only where it is sent or compared, never to show it."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError("a Secret is not pickled: the pickle would hold it in clear")
