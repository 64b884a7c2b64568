"""The compaction commands over the contract: ``/compact [focus]``
(:mod:`~compact.commands.compact`) and undoing a compaction
(:mod:`~compact.commands.uncompact`). They reach a backend only as
:class:`~compact.contract.service.CompactService`.
"""
