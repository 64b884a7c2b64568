"""When to compact: at the threshold, or earlier when holding a large context costs more
than rewriting it.

The cost model is a provider's prompt cache (or a local server's reuse of its KV cache):
every request re-reads the whole context, but the part an earlier request already sent
costs ``c`` of an uncached token (about 0.1 at Anthropic, DeepSeek and OpenAI; the time a
local server spends on it is as small). Appending keeps that prefix; a compaction rewrites
the head, so the request after it reads everything after the header anew. Per step, then,
holding a context of ``x`` tokens costs ``c·x``, and a compaction costs once ``K``:

- the summary call, which continues the conversation's last request (:mod:`compact.basic.suffix`):
  a cache hit but for the instruction after it;
- the first request after it, which reads the checkpoint and the older retained tail
  uncached: ``(1 − c)`` of them more than a cached read. The header is read uncached too
  when it is shorter than a provider caches (1,024 tokens); the newest step is not counted:
  it was never sent, so any request reads it uncached once.

Between two compactions the context grows ``g`` per step from what a compaction leaves,
``r``, to the trigger ``T``; the average cost per step ``c·(T + r)/2 + g·K/(T − r)`` is
lowest at

    T* = r + sqrt(2·g·K / c)

so the trigger is ``T*`` between a floor and the threshold. With a 1,500-token step and a few
hundred tokens of checkpoint that is about half of a 16k window. ``T*`` is never less than
two steps above ``r`` (a rewrite must free more than it costs to re-read), nor below a
quarter of the threshold: the cost model prices tokens only, and a summary by a real model
is lossy and takes a call, so a large window is not spent a few steps at a time (with 5k-token
steps and a 128k window ``T*`` is near 15k; the floor makes it 25.6k). With too few steps
measured, the threshold stands.

**A cold cache.** A provider keeps a prefix for a while after its last use (its TTL,
:class:`agent.llm.prompt_cache.CachePlan`); after a longer pause the next request reads the
whole context in full, ``x`` rather than ``c·x``. A rewrite due within the coming steps — the
mark ``M`` reached within :data:`REACH_STEPS` steps, ``n = ⌈(M − x)/g⌉`` — may then be made now
(:meth:`Schedule.cold_now`), when that costs less over the steps to the mark
(:func:`cold_saving`; what each step adds is read anew either way and left out):

- waiting, this step reads ``x`` in full and the ``n − 1`` steps after it hold the context
  cached, ``x + Σ_{i<n} c·(x + i·g)``; then the compaction at the mark;
- with a summary still to write, compacting now makes its call read the cold conversation
  in full, where at the mark it reads it cached: ``x + K + c·r`` now, against ``c·(x +
  (n−1)·g) + K + c·r`` at the mark. The re-read of what the compaction leaves costs as much
  either way, so a cold cache makes such a compaction no cheaper: compacting now saves the
  steps held, and is ``n`` steps further into the next cycle, worth ``n·ρ`` with ``ρ = c·(M +
  r)/2 + g·K/(M − r)`` the schedule's cost per step. It pays only where the mark is later
  than the cost model's best (the floor, the threshold, an undo), as it would warm;
- with its summary written already (in the background while the cache was warm,
  :mod:`compact.basic.ahead`; spent either way), both end at the same context, and
  compacting now reads what the summary leaves (the header too: no call warmed it),
  ``c·r + (1 − c)·(reread + h)``, instead of the whole context in full; at the mark the
  steps run meanwhile are read anew. Made now unless the mark is many steps away.

A local server's slot never expires (an infinite TTL): never cold.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from compact.contract.policy import CompactionSettings

FLOOR_SHARE = 0.25
"""The earliest mark, as a share of the threshold (see the module docstring)."""
WINDOW_STEPS = 8
"""Steps the typical growth is measured over (the newest ones)."""


@dataclass
class StepSizes:
    """The context size measured at each pre-step checkpoint of one session (what the
    service saw), and from it the typical growth of one step."""

    totals: list[int] = field(default_factory=list)

    def saw(self, total: int) -> None:
        self.totals.append(total)
        del self.totals[: -WINDOW_STEPS - 1]

    def growth(self) -> int | None:
        """The median growth of the steps that grew (a compaction's drop is not a step);
        None with fewer than two."""
        deltas = [b - a for a, b in zip(self.totals, self.totals[1:], strict=False) if b > a]
        return int(statistics.median(deltas)) if len(deltas) >= 2 else None


MIN_CACHED_TOKENS = 1_024
"""The shortest prefix providers cache (OpenAI, DeepSeek and Anthropic alike)."""
INSTRUCTION_TOKENS = 256
"""About what a summary call reads uncached after the cached conversation: its instruction."""


def header_cached(header: int) -> bool:
    """Whether a request header (system prompt and tools) of ``header`` tokens stays cached
    when everything after it changes: it is as long as the shortest prefix providers cache."""
    return header >= MIN_CACHED_TOKENS


def rewrite_reread(*, after: int, fresh: int, header: int) -> int:
    """What the first request after a compaction reads uncached that it would have read
    cached without the rewrite (the re-read part of ``K``): the context it leaves,
    ``after``, less the newest step ``fresh`` (new to any request) and the header when it
    is long enough to stay cached."""
    cached = header if header_cached(header) else 0
    return max(0, after - fresh - cached)


def cost_mark(*, growth: int, after: int, rewrite: float, cached_price: float) -> int:
    """``T*`` (see the module docstring): the context size at which compacting costs least
    per step, never less than two steps above what a compaction leaves (``after``).
    ``rewrite``: what one compaction costs, ``K``, in uncached tokens."""
    best = after + math.sqrt(2 * growth * rewrite / max(cached_price, 1e-6))
    return max(math.ceil(best), after + 2 * growth)


@dataclass
class Schedule:
    """Where one session's next automatic compaction starts. ``folds``: a compaction masks
    the retained tail's older outputs (so it leaves about one step of it, not all)."""

    settings: CompactionSettings
    folds: bool
    steps: StepSizes = field(default_factory=StepSizes)
    header: int = 0
    """Tokens of the newest request header measured (system prompt and tools)."""
    last_summary: int | None = None
    """Tokens of the newest checkpoint written."""
    left: int | None = None
    """Tokens of the context measured right after the newest compaction (a better "what a
    compaction leaves" than the model's estimate, when the tail keeps more than one step)."""
    excused: Callable[[], int] = lambda: 0
    """Tokens an undone compaction brought back (:class:`compact.commands.uncompact.Excused`): the
    mark moves up by as much (never past the window) until a compaction lands again, so
    only new content brings the next automatic compaction."""

    def mark(self, window: int) -> int:
        """The threshold, or earlier where compacting costs less over the coming steps;
        later by what an undo brought back."""
        excused = self.excused()
        return self._mark(window) if not excused else min(window, self._mark(window) + excused)

    def checkpoint_tokens(self, replaced: int, window: int | None) -> int:
        """What the next checkpoint is expected to cost: the newest one written, else half
        the output cap of a summary replacing ``replaced`` tokens."""
        return self.last_summary or self.settings.summary_cap(replaced, window) // 2

    def _mark(self, window: int) -> int:
        threshold = self.settings.threshold(window)
        terms = self.terms(window)
        if terms is None:
            return threshold
        best = cost_mark(
            growth=terms.growth,
            after=terms.after,
            rewrite=terms.rewrite,
            cached_price=terms.price,
        )
        return min(threshold, max(best, math.ceil(threshold * FLOOR_SHARE)))

    def terms(self, window: int) -> Terms | None:
        """The cost model's terms for ``window`` (None: too few steps measured, or no cache
        price: the threshold stands)."""
        threshold = self.settings.threshold(window)
        growth = self.steps.growth()
        if growth is None or self.settings.cache_price <= 0:
            return None
        price = self.settings.cache_price
        summary = self.checkpoint_tokens(threshold, window)
        kept = growth if self.folds else max(growth, self.settings.retain(window))
        after = max(self.header + summary + kept, self.left or 0)
        # The newest step in what is kept is new to any request; older kept steps are not.
        reread = rewrite_reread(after=after, fresh=growth, header=self.header)
        rewrite = (1 - price) * reread + INSTRUCTION_TOKENS
        cached = self.header if header_cached(self.header) else 0
        return Terms(growth, after, cached, reread, rewrite, price)

    def cold_now(self, tokens: int, window: int, *, written: bool = False) -> bool:
        """At a checkpoint whose cache is cold (the provider's TTL passed since the last
        request), with a context of ``tokens`` below the mark: whether the compaction due
        within :data:`REACH_STEPS` steps costs less made now (the module docstring's cold
        cache). ``written``: its summary is written already (ahead), so compacting now makes
        no summary call."""
        mark = self.mark(window)
        terms = self.terms(window)
        if terms is None or tokens >= mark:
            return False
        return cold_saving(terms, tokens, mark, written=written) > 0


REACH_STEPS = 3
"""How many steps ahead of the mark a cold checkpoint considers compacting."""


@dataclass(frozen=True)
class Terms:
    """The cost model's terms (see the module docstring), in tokens."""

    growth: int
    """``g``: a step's typical growth."""
    after: int
    """``r``: what a compaction leaves."""
    cached_header: int
    """``h``: the header, when long enough to be cached."""
    reread: int
    """What the request after a compaction reads anew, beyond the header and newest step."""
    rewrite: float
    """``K``: one compaction's cost at the mark, in uncached tokens."""
    price: float
    """``c``: a cached token's price against an uncached one."""

    def per_step(self, mark: int) -> float:
        """``ρ``: what each step costs on average with compactions at ``mark``."""
        span = max(mark - self.after, self.growth)
        return self.price * (mark + self.after) / 2 + self.growth * self.rewrite / span


def cold_saving(terms: Terms, tokens: int, mark: int, *, written: bool = False) -> float:
    """What compacting now saves, in uncached tokens, at a cold checkpoint ``tokens`` into a
    cycle whose compaction comes at ``mark`` (negative: waiting is cheaper; minus infinity:
    the mark is more than :data:`REACH_STEPS` steps away). The module docstring gives the
    terms; what every step adds is read anew either way and left out."""
    g, r, c = terms.growth, terms.after, terms.price
    steps = max(1, math.ceil((mark - tokens) / g))
    if steps > REACH_STEPS:
        return -math.inf
    # Waiting: this step reads the context in full, the steps to the mark hold it cached.
    held = tokens + sum(c * (tokens + i * g) for i in range(1, steps))
    if written:
        # The same summary lands either way, so both end at the same context; at the mark
        # the steps run meanwhile stay verbatim and are read anew.
        wait = held + c * (r + steps * g) + (1 - c) * (terms.reread + steps * g)
        now = c * r + (1 - c) * (terms.reread + terms.cached_header)
        now += sum(c * (r + i * g) for i in range(1, steps + 1))
        return wait - now
    # The summary at the mark reads what the step before it sent, cached; the one made now
    # reads it in full, as this step would have. Compacting now is ``steps`` steps further
    # into the next cycle: worth ``steps`` steps at the schedule's cost per step.
    wait = held + c * (tokens + (steps - 1) * g) + terms.rewrite + c * r
    now = tokens + terms.rewrite + c * r + steps * terms.per_step(mark)
    return wait - now
