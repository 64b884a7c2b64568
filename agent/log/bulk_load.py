"""Loading a log in bulk without the garbage collector's full passes.

Replaying a long log creates tens of thousands of objects that all stay alive; each pass the
collector makes meanwhile scans every one of them (and all the process held before), to
free nothing: events hold no reference cycles. So the collector pauses while a log is
replayed and resumes as it was afterwards; what the load left is collected by its next pass.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def without_collector(load: Callable[P, R]) -> Callable[P, R]:
    """``load`` with the garbage collector paused while it runs (restored even on error)."""

    @functools.wraps(load)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return load(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return paused
