"""The basic compaction backend: the RFC's algorithm in parts.

:mod:`~compact.basic.service` orchestrates (when, what, the bracket's steps) and
:mod:`~compact.basic.ahead` adds summarizing ahead in the background; the parts beside them
choose the range (:mod:`~compact.basic.selection`), schedule the mark
(:mod:`~compact.basic.schedule`), read the history (:mod:`~compact.basic.reading`,
:mod:`~compact.basic.suffix`), write the summary (:mod:`~compact.basic.condense`,
:mod:`~compact.basic.summarizers`), prune tool results (:mod:`~compact.basic.prune`), trip
the breakers (:mod:`~compact.basic.guards`) and preview a compaction
(:mod:`~compact.basic.dry_run`). Front ends reach a backend only through the contract
(:mod:`compact.contract.service`); only the wiring that builds one names it.
"""

from compact.basic.ahead import AheadCompactService
from compact.basic.prune import Pruner
from compact.basic.service import BasicCompactService

__all__ = ["AheadCompactService", "BasicCompactService", "Pruner"]
