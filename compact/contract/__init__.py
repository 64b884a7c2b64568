"""The compaction contract: what compaction does, never how.

:mod:`~compact.contract.service` is the capability a backend implements (results, errors,
notices), :mod:`~compact.contract.events` the ``compact/*`` events a backend writes,
:mod:`~compact.contract.registry` the event registry a session is opened with and
:mod:`~compact.contract.policy` the ``[compaction]`` settings. It imports nothing else of
compaction.
"""
