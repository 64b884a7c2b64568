"""Making a shadow repository (:mod:`tools.snapshots.shadow`): where it lives and where
none may be, private, with git's settings for it and its excludes, and bringing one made by
an older reefline to today's settings.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from tools.snapshots.git import Git
from tools.snapshots.user_repo import user_excludes

TUNING = (
    ("core.untrackedCache", "true"),
    # A smaller index (paths prefix-compressed), read and written by every git call.
    ("index.version", "4"),
    ("core.preloadIndex", "true"),
    # Each write of the index writes only the entries changed since the shared part: the
    # snapshot before a command that looked at a few paths rewrites a few entries, not all.
    ("core.splitIndex", "true"),
)

_SETTINGS = (
    *TUNING,
    ("core.autocrlf", "false"),
    ("core.symlinks", "true"),
    ("core.fileMode", "true"),
    ("core.quotePath", "false"),
    ("gc.auto", "0"),
)


def inside_home(home: Path, work_tree: Path) -> str | None:
    """Why ``work_tree`` gets no snapshots when it is reefline's ``home`` or lies inside it
    (the home is never recorded, and the shadow repository would record itself), else None.
    Both are compared resolved."""
    home = Path(os.path.realpath(home))
    work_tree = Path(os.path.realpath(work_tree))
    if work_tree != home and home not in work_tree.parents:
        return None
    where = "is reefline's home" if work_tree == home else f"is inside reefline's home {home}"
    return (
        f"No workspace snapshots: the working directory {work_tree} {where}, which is never "
        "recorded, so what commands change is not shown and /rewind cannot put files back. "
        "To have them, keep the home elsewhere (--home or REEFLINE_HOME)."
    )


def shadow_dir(home: Path, work_tree: Path) -> Path:
    """Where the shadow repository of ``work_tree`` lives under reefline's ``home``."""
    key = hashlib.sha256(os.fsencode(work_tree)).hexdigest()[:16]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in work_tree.name)[:40]
    return home / "snapshots" / f"{name or 'root'}-{key}"


def create(git: Git, home: Path, work_tree: Path) -> None:
    """Make the shadow repository of ``work_tree`` at ``git.git_dir`` (under ``home``,
    reefline's home); its excludes are the last thing made (one stopped half-way is made
    again).

    Raises:
        tools.snapshots.git.GitError: git failed.
        OSError: a file could not be written.
    """
    # Private even under umask 0, like everything else under the home.
    git.git_dir.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(git.git_dir.parent, 0o700)
    git.git_dir.mkdir(mode=0o700, exist_ok=True)
    git.run(["init", "-q", "--shared=0600", "--template="])  # no sample hooks
    # Added to the config init wrote in one write, not one git call each (ten processes at
    # the start of the first snapshot); a section named again is git's own syntax.
    sections: dict[str, list[str]] = {}
    for key, value in _SETTINGS:
        section, name = key.split(".")
        sections.setdefault(section, []).append(f"\t{name} = {value}\n")
    with (git.git_dir / "config").open("a") as config:
        config.write("".join(f"[{k}]\n" + "".join(v) for k, v in sections.items()))
    excludes = [".git"]
    if work_tree in home.parents:  # (the home itself gets no snapshots)
        excludes.append("/" + _pattern(home.relative_to(work_tree)))
    excludes.append(user_excludes(work_tree))
    info = git.git_dir / "info"
    info.mkdir(mode=0o700, exist_ok=True)
    os.chmod(info, 0o700)
    write_private(info / "exclude", "\n".join(excludes) + "\n")


def tune(git: Git) -> None:
    """Bring a repository made before :data:`TUNING` to it (nothing when its config has it).

    Raises:
        tools.snapshots.git.GitError: git failed.
    """
    with contextlib.suppress(OSError):
        config = (git.git_dir / "config").read_text().lower()
        if all(f"{k.split('.')[-1].lower()} = {v}" in config for k, v in TUNING):
            return
    for key, value in TUNING:
        git.run(["config", key, value])
    git.run(["update-index", "--index-version", "4"])


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable by this user only (never through a link)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _pattern(path: Path) -> str:
    """``path`` as a gitignore pattern matching only itself."""
    text = path.as_posix()
    for special in "\\*?[!#":
        text = text.replace(special, "\\" + special)
    return text
