"""Workspace snapshots: the working directory's files recorded in a shadow git repository
under reefline's home before and after each command that may write, so that what a command
changed can be shown (:mod:`tools.snapshots.changes`) and put back
(:mod:`tools.snapshots.restore`). The user's own ``.git``, index and stash are never touched:
every git call names the shadow repository and the working directory explicitly."""
