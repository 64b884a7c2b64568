"""Consumer tier: the ``/compact [focus]`` command, over the compaction contract only.

Arrives with the compaction seam; the import contract that keeps it off the basic backend
is already enforced.
"""
