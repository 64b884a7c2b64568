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

Its first screen is frozen as well, once it is up (:func:`settle`, :data:`SETTLE_S` after
the replay, or at the first "show earlier" if that comes sooner): the newest entries and the
app's own widgets also live as long as the session, and left unfrozen they were half of what
every full pass scanned while paging back through history ("show earlier" brings a full pass
every page or two). A full collection first frees what building the screen left over (~800
objects), so no garbage is frozen.

Paging back through history unmounts a page for each one it mounts, and the widgets it
unmounts are garbage in reference cycles. Left to the collector, three or four pages of it
piled up into one full pass that freed 15,000-25,000 objects inside some later page (20-60
ms, most of the slowest page). So each page's garbage is collected on its own
(:func:`tidy`, about 5 ms): once paging pauses for :data:`TIDY_S`, so a person reading page
by page never pays for the page before, or else (a held key) at the start of the next page.

When another session replaces it (``/new``, ``/resume``), or the app ends, the freeze is
lifted, so what the old one left can be collected; the new session is not frozen. Freezing
it safely would need the moment when nothing refers to the old widgets any more (Textual's
layout keeps them until its next pass), and a freeze before that moment would keep them
forever.
"""

from __future__ import annotations

import gc

SETTLE_S = 0.5
"""How long after the first screen is built :func:`settle` runs: the screen is drawn
and the app idle by then, and a person has not started reading back yet."""

TIDY_S = 0.15
"""How long paging must pause before :func:`tidy` collects what it unmounted."""

_settling = False
"""The first screen is built and waits for :func:`settle`."""
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


def settle_soon() -> None:
    """The first screen is built: :func:`settle` will freeze it."""
    global _settling
    _settling = True


def settle() -> None:
    """If the first screen waits for it (:func:`settle_soon`): collect, then freeze
    everything alive now (see the module docstring). About 20-30 ms, once."""
    global _settling
    if _settling:
        _settling = False
        gc.collect()
        gc.freeze()


def tidy() -> None:
    """Collect now (paging paused; see the module docstring). A few milliseconds with the
    first session frozen: what the pages left, and the pages still mounted."""
    gc.collect()


def release_loaded() -> None:
    """Lift the freeze: what was frozen is the collector's again (its next full pass frees
    what is garbage; no pass is forced here, where a person waits). A first screen not
    frozen yet will not be."""
    global _settling
    _settling = False
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
