"""How the front ends say the session's first workspace snapshot while it runs in the
background (:class:`tools.snapshots.recording.FirstRecord`): one wording for the status
line, ``--plain`` and ``-p``'s stderr. Only a large one is said
(:attr:`FirstRecord.worth_saying`)."""

from __future__ import annotations

from collections.abc import Callable

from agent.formatting import fmt_duration
from tools.snapshots.recording import FirstRecord


def running_words(record: FirstRecord) -> str | None:
    """What the status line says while it runs (None: nothing to say)."""
    if record.done or not record.worth_saying:
        return None
    if record.waiting:
        return f"the command waits for the workspace record ({record.files:,} files)"
    return f"recording the workspace ({record.files:,} files)"


class RecordLines:
    """Says, through ``say``, the lines a front end prints as the first snapshot goes on,
    each once: that it runs, that a command waits for it, that it is done. Called with each
    :class:`FirstRecord` (a listener of :meth:`tui.runtime.runtime.Runtime.observe_workspace`)."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._said: set[str] = set()

    def __call__(self, record: FirstRecord) -> None:
        if not record.worth_saying:
            return
        files = f"{record.files:,} files"
        due: list[tuple[str, str]] = []
        if not record.done:
            due.append(("running", f"recording the workspace ({files})…"))
        if record.waiting:
            due.append(("waiting", "the command waits for the workspace record to finish"))
        if record.done:
            took = fmt_duration(record.seconds)
            due.append(("done", f"workspace recorded ({files} in {took})"))
        for key, line in due:
            if key not in self._said:
                self._said.add(key)
                self._say(line)
