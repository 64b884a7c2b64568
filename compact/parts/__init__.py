"""What every backend drives: the bracketed transaction (:mod:`~compact.parts.transaction`),
the checkpoint it asks for and frames (:mod:`~compact.parts.checkpoint`), the edges no range
may split (:mod:`~compact.parts.pairing`), the originals of pruned results
(:mod:`~compact.parts.originals`) and the recall transcripts of what a checkpoint replaced
(:mod:`~compact.parts.recall`). Built on the contract; never imports a backend.
"""
