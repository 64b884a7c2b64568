"""The garbage collector and a long session.

A resumed session keeps its events and their view for as long as it is open: tens of
thousands of objects that the collector's full passes would scan again and again. With a
5,000-event session each full pass took about 0.2 s, and one came every few pages of "show
earlier" — a visible stall. So the session the app opens with is frozen once it is loaded
(:func:`gc.freeze`: left out of every later pass, still freed by reference counting),
before any widget is built: widgets form reference cycles, and a frozen cycle is never
freed.

The collector is off from the moment ``reefline`` starts to open the session for the app
(:func:`defer_collection`) until that freeze: what loading makes is long-lived and free of
cycles, and each young pass would scan all of it again (a 10,000-event log cost two passes of
20-70 ms each, while the first screen waited). The freeze moves it out of the collector's
reach unscanned, and the collector is back on from then.

``reefline -p`` freezes what its turn starts with the same way (the libraries and the
session live until the process ends), and every ``reefline`` freezes its whole heap as it
exits (:func:`freeze_for_exit`).

When another session replaces it (``/new``, ``/resume``), or the app ends, the freeze is
lifted, so what the old one left can be collected; the new session is not frozen. Freezing
it safely would need the moment when nothing refers to the old widgets any more (Textual's
layout keeps them until its next pass), and a freeze before that moment would keep them
forever.
"""

from __future__ import annotations

import gc

_deferred = False
"""The collector was turned off by :func:`defer_collection` and is not back on yet."""


def defer_collection() -> None:
    """Turn the collector off until :func:`keep_loaded` (or :func:`resume_collection`):
    call it before the app's first session is opened."""
    global _deferred
    if gc.isenabled():
        gc.disable()
        _deferred = True


def keep_loaded() -> None:
    """Freeze everything alive now, and turn a deferred collector back on: call it once,
    before any widget is built."""
    gc.freeze()
    resume_collection()


def release_loaded() -> None:
    """Lift the freeze: what was frozen is the collector's again (its next full pass frees
    what is garbage; no pass is forced here, where a person waits)."""
    gc.unfreeze()


def resume_collection() -> None:
    """Turn a collector :func:`defer_collection` turned off back on (for when the session
    is never shown: it failed to open, or the app ended first); otherwise nothing."""
    global _deferred
    if _deferred:
        _deferred = False
        gc.enable()


def freeze_for_exit() -> None:
    """The process is ending: leave its heap to the exit's reference counting, without a
    last collector pass over it. That pass, over a heap full of imported libraries, cost
    about 0.2 s of CPU at every exit, a fifth of a ``reefline -p`` run. (What it would have
    found, cycles of objects, is freed with the process.)"""
    gc.freeze()
