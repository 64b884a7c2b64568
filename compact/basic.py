"""Basic compaction backend (the RFC algorithm). Arrives with the compaction seam."""
