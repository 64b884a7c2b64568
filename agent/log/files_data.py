"""What a command changed in the working directory, as its ``tool/result`` records it, and
the ``files/restore`` event a rewind that put files back logs (:mod:`tools.snapshots`)."""

from __future__ import annotations

from pydantic import Field

from agent.log.event_data import Data
from tools.modes import ChangeKind


class FileChangeData(Data):
    """One changed path, relative to the session's working directory. ``added`` and
    ``removed`` count lines; None for a file recorded by hash (binary, too large)."""

    path: str
    kind: ChangeKind
    added: int | None = None
    removed: int | None = None
    old_path: str | None = None


class FilesData(Data):
    """The snapshot ids before and after a command (git tree ids in the working
    directory's shadow repository) and the paths that differ between them."""

    before: str
    after: str
    changes: list[FileChangeData] = Field(default_factory=list)


class FilesRestoreData(Data):
    """Files put back by a rewind: ``before`` is the snapshot taken just before (restore
    it to undo), ``after`` the one just after; ``restored`` the paths written or removed,
    ``refused`` each path left alone with why."""

    before: str
    after: str
    restored: list[str] = Field(default_factory=list)
    refused: dict[str, str] = Field(default_factory=dict)
    undo_of: int | None = None
    """The seq of the ``files/restore`` this one undid (None: a rewind's restore)."""
    at_seq: int | None = None
    """The seq the files were put back to (in the parent session)."""
