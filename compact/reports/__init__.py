"""What the log says about compaction, for the front ends: the timeline fold
(:mod:`~compact.reports.timeline`) and its records (:mod:`~compact.reports.records`), how
they are said (:mod:`~compact.reports.wording`), whether a compaction comes soon
(:mod:`~compact.reports.forecast`), a dry run in plain lines
(:mod:`~compact.reports.dry_run`) and what a compaction costs and saves
(:mod:`~compact.reports.compaction_cost`). Pure readings: nothing here writes the log.
"""
