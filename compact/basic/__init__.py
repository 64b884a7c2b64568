"""The basic compaction backend: the RFC's algorithm in parts.

:mod:`~compact.basic.service` orchestrates (when, what) from one reading of the context a
step (:mod:`~compact.basic.pressure`); its parts :mod:`~compact.basic.compactor` (one
compaction's bracket) and :mod:`~compact.basic.ahead` (the summary written ahead, in the
background) do the work; the modules beside them choose the range
(:mod:`~compact.basic.selection`), schedule the mark (:mod:`~compact.basic.schedule`), read
the history (:mod:`~compact.basic.reading`, :mod:`~compact.basic.suffix`), write the
summary (:mod:`~compact.basic.condense`, :mod:`~compact.basic.summarizers`), prune tool
results (:mod:`~compact.basic.prune`), trip the breakers (:mod:`~compact.basic.guards`) and
preview a compaction and its cost (:mod:`~compact.basic.dry_run`). Front ends reach a
backend only through the contract (:mod:`compact.contract.service`); only the backend
registry (:mod:`compact.backends`) names it.
"""

from compact.basic.prune import Pruner
from compact.basic.service import BasicCompactService
from compact.contract.service import BackendParts

__all__ = ["BasicCompactService", "Pruner", "build"]


def build(parts: BackendParts) -> BasicCompactService:
    """The basic backend for ``parts.session``, with its pruner and summaries written ahead
    (the registry's ``basic``)."""
    session, meter = parts.session, parts.meter
    pruner = Pruner(session, meter)
    return BasicCompactService(
        session,
        meter,
        parts.model,
        parts.settings,
        pruner=pruner,
        ahead=True,
        cache_plan=parts.cache_plan,
        clock=parts.clock,
    )
