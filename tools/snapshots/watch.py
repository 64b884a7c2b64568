"""Whether anything in a working directory changed since a moment: Linux inotify, read
through ``ctypes`` from libc, so that the snapshot before a command can be the one after the
last command when nothing was written in between (:mod:`tools.snapshots.recording`).

Every directory of the tree gets a watch, except any ``.git`` and the folders the shadow
repository ignores (they are not recorded, so what happens there does not matter). No thread
runs: events wait in the kernel's queue on a non-blocking descriptor, read when asked.
A created directory gets its watch when the queue is read; anything written in it before
that is covered because its creation already counts as a change.

The contract is one-sided: :meth:`TreeWatch.changed` may say True when nothing recorded
changed (a write in a folder ignored since, an ``IN_ATTRIB``), never False when something
did, as far as the kernel reports it. Whenever that cannot be promised (a queue overflow, a
watch the kernel dropped while its folder still exists, a watch that cannot be added, e.g.
ENOSPC from ``fs.inotify.max_user_watches``, more than ``max_dirs`` folders, a filesystem
whose changes may come from elsewhere (NFS, FUSE, 9p, SMB), no Linux, any error) it raises
:class:`WatchUnavailable` and the caller scans every time.

Known gaps, accepted: inotify does not report writes through a shared ``mmap`` (the kernel
only updates the file's mtime), nor writes through a hard link whose other name is outside
the watched tree. Such a write made between two commands is not seen before the second one;
the scan after it (which always runs) finds it by its stat, so it shows among that
command's changes and a rewind of that command would put the file back as it was before.
Programs that write files that way (databases, some build caches) mostly keep them in
ignored folders.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import stat
import struct
import sys
import weakref
from collections.abc import Callable
from pathlib import Path

from tools.snapshots.git import Git, GitError

MAX_DIRS = 20_000
"""A tree with more folders than this is scanned every time rather than watched."""
MAX_PATHS = 1_000
"""More paths changed than this since the last reset: :meth:`TreeWatch.paths` says None."""

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x1000000
IN_DONT_FOLLOW = 0x2000000
IN_EXCL_UNLINK = 0x4000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

WATCHED = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)
_ADD = WATCHED | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK
_EVENT = struct.Struct("iIII")

# statfs f_type of the filesystems whose every change passes through this kernel.
_LOCAL_FS = {
    0xEF53: "ext2/3/4",
    0x58465342: "xfs",
    0x9123683E: "btrfs",
    0x01021994: "tmpfs",
    0xF2F52010: "f2fs",
    0x794C7630: "overlay",
    0x2FC12FC1: "zfs",
    0xCA451A4E: "bcachefs",
}

# Those where a folder's link count is 2 plus its subfolders (so 2: none); others (btrfs:
# always 1; overlay: 1 for a merged folder; ext4 past 65,000 subfolders: 1) are listed.
_COUNTS_FOLDERS = frozenset({0xEF53, 0x01021994, 0x58465342})  # ext2/3/4, tmpfs, xfs


class WatchUnavailable(RuntimeError):
    """The tree cannot be watched (any more); the message says why."""


def _libc() -> ctypes.CDLL:
    if not sys.platform.startswith("linux"):
        raise WatchUnavailable("inotify is Linux only")
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.statfs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    except (OSError, AttributeError) as exc:
        raise WatchUnavailable(f"no inotify in libc: {exc}") from exc
    return libc


class TreeWatch:
    """Changes in ``work_tree`` since the last :meth:`reset` (or since :meth:`start`).

    Not thread-safe: the caller serialises. Every method but :meth:`close` may raise
    :class:`WatchUnavailable`, after which the watch is closed for good.
    """

    def __init__(
        self, work_tree: Path, git: Git, max_dirs: int = MAX_DIRS, max_paths: int = MAX_PATHS
    ) -> None:
        self.work_tree = work_tree
        self._git = git
        self._max_dirs = max_dirs
        self._max_paths = max_paths
        self._libc = _libc()
        self._fd = -1
        self._dirs: dict[int, str] = {}  # watch descriptor: folder, relative ("" the top)
        self._dirty = False
        self._stale = False  # folders moved or .gitignore edited: watch anew at reset
        self._paths: set[str] | None = set()  # None: not known (too many, a folder moved)
        self._counts_folders: dict[int, bool] = {}  # device: its folders' link counts tell
        self._closer: weakref.finalize[[int], TreeWatch] | None = None

    def start(self) -> None:
        """Watch the tree from now on. Raises :class:`WatchUnavailable`."""
        self._guard(self._start)

    def changed(self) -> bool:
        """Whether anything in the tree changed since the last reset (or start)."""
        self._guard(self._drain)
        return self._dirty

    def paths(self) -> frozenset[str] | None:
        """The paths (relative to the tree; for a folder, the folder) where something was
        created, written, deleted or moved from or to since the last reset; every change
        the kernel reported is at or under one of them. None when that set is not known:
        more than ``max_paths`` of them, a folder moved, a ``.gitignore`` edited, an event
        on the top folder itself."""
        self._guard(self._drain)
        return None if self._paths is None or self._stale else frozenset(self._paths)

    def reset(self) -> None:
        """Forget what changed until now: call right before the scan that records the
        tree, so that a change during that scan counts for the next time."""
        self._guard(self._drain)
        self._dirty = False
        self._paths = set()
        if self._stale:
            self.close()
            self._guard(self._start)

    def close(self) -> None:
        """Stop watching (idempotent)."""
        if self._closer is not None:
            self._closer()
            self._closer = None
        self._fd = -1
        self._dirs.clear()

    @property
    def watching(self) -> bool:
        return self._fd >= 0

    def _guard(self, step: Callable[[], None]) -> None:
        try:
            step()
        except WatchUnavailable:
            self.close()
            raise
        except (OSError, GitError, ValueError, struct.error) as exc:
            self.close()
            raise WatchUnavailable(f"cannot watch {self.work_tree}: {exc}") from exc

    def _start(self) -> None:
        self._dirty = self._stale = False
        self._paths = set()
        ignored = self._ignored([])
        fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            raise WatchUnavailable(f"inotify_init1: {os.strerror(ctypes.get_errno())}")
        self._fd = fd
        self._closer = weakref.finalize(self, os.close, fd)
        self._watch_tree("", ignored)

    def _ignored(self, under: list[str]) -> set[str]:
        """The folders the shadow repository ignores (only ``under`` these, when given)."""
        args = ["ls-files", "-z", "-o", "-i", "--directory", "--exclude-standard"]
        out = self._git.run([*args, "--", *under] if under else args)
        return {p.rstrip("/") for p in os.fsdecode(out).split("\0") if p.endswith("/")}

    def _watch_tree(self, top: str, ignored: set[str]) -> None:
        """Watch ``top`` and every folder under it but ``.git`` and ``ignored`` ones: the
        watch first, then the listing, so a folder made meanwhile is an event or listed. A
        folder gone meanwhile is skipped: its parent's watch reported it."""
        pending = [top]
        while pending:
            rel = pending.pop()
            try:
                if not self._add(rel) or not self._may_hold_folders(rel):
                    continue
                with os.scandir(self.work_tree / rel) as entries:
                    children = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
            except (FileNotFoundError, NotADirectoryError):
                continue
            for name in children:
                child = f"{rel}/{name}" if rel else name
                if name != ".git" and child not in ignored:
                    pending.append(child)

    def _add(self, rel: str) -> bool:
        """Watch folder ``rel``; False when it is no longer a folder."""
        if len(self._dirs) >= self._max_dirs:
            raise WatchUnavailable(f"more than {self._max_dirs} folders to watch")
        path = os.fsencode(self.work_tree / rel)
        parent = os.lstat(os.path.dirname(path)) if rel else None
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            return False
        if parent is None or parent.st_dev != st.st_dev:  # the top, or a mount point
            kind = self._check_filesystem(path)
            self._counts_folders[st.st_dev] = kind in _COUNTS_FOLDERS
        wd = self._libc.inotify_add_watch(self._fd, path, _ADD)
        if wd < 0:
            err = ctypes.get_errno()
            if err in (errno.ENOENT, errno.ENOTDIR) and rel:
                return False  # replaced since the lstat: its parent's watch said so
            raise WatchUnavailable(f"inotify_add_watch {rel or '.'}: {os.strerror(err)}")
        self._dirs[wd] = rel
        return True

    def _may_hold_folders(self, rel: str) -> bool:
        """Whether folder ``rel``, watched already, may hold folders: not when its
        filesystem counts them in its link count (:data:`_COUNTS_FOLDERS`) and that says
        none (no listing of its files needed). Looked at after the watch was added: a
        folder made since is an event."""
        st = os.lstat(self.work_tree / rel)
        return not (self._counts_folders.get(st.st_dev) and st.st_nlink == 2)

    def _check_filesystem(self, path: bytes) -> int:
        """The filesystem type of ``path``; raises :class:`WatchUnavailable` unless local."""
        buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on x86_64
        if self._libc.statfs(path, buf) != 0:
            raise WatchUnavailable(f"statfs: {os.strerror(ctypes.get_errno())}")
        kind = ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF
        if kind not in _LOCAL_FS:
            raise WatchUnavailable(f"filesystem type {kind:#x} may change from elsewhere")
        return kind

    def _drain(self) -> None:
        if self._fd < 0:
            raise WatchUnavailable("the watch is closed")
        created: list[str] = []
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, size = _EVENT.unpack_from(data, offset)
                raw = data[offset + _EVENT.size : offset + _EVENT.size + size]
                offset += _EVENT.size + size
                name = os.fsdecode(raw.rstrip(b"\0"))
                self._event(wd, mask, name, created)
        if created:
            self._watch_new(created)

    def _event(self, wd: int, mask: int, name: str, created: list[str]) -> None:
        if mask & IN_Q_OVERFLOW:
            raise WatchUnavailable("inotify queue overflowed")
        if mask & IN_UNMOUNT:
            raise WatchUnavailable("a watched filesystem was unmounted")
        if mask & IN_IGNORED:
            if wd in self._dirs:  # dropped while its folder was not deleted
                raise WatchUnavailable(f"the watch on {self._dirs[wd] or '.'} was dropped")
            return
        self._dirty = True
        folder = self._dirs.get(wd)
        self._note(folder, name)
        if mask & IN_DELETE_SELF:
            self._dirs.pop(wd, None)  # its IN_IGNORED follows
            return
        if mask & IN_MOVE_SELF or (mask & IN_ISDIR and mask & (IN_MOVED_FROM | IN_MOVED_TO)):
            self._stale = True  # folders' names changed: watched anew at reset
        elif name == ".gitignore":
            self._stale = True  # what is ignored may have changed
        elif mask & IN_ISDIR and mask & IN_CREATE and folder is not None:
            created.append(f"{folder}/{name}" if folder else name)

    def _note(self, folder: str | None, name: str) -> None:
        if self._paths is None:
            return
        if folder is None or not (folder or name):  # an unknown watch, or the top itself
            self._paths = None
            return
        self._paths.add(f"{folder}/{name}" if folder and name else folder or name)
        if len(self._paths) > self._max_paths:
            self._paths = None

    def _watch_new(self, created: list[str]) -> None:
        if self._stale:
            return  # all of it is watched anew at reset
        # Which of them, or of the folders already in them, are ignored (a new checkout
        # brings its own build folder): one git call, only when folders were made.
        ignored = self._ignored(created)
        for rel in created:
            if rel not in ignored and rel.rsplit("/", 1)[-1] != ".git":
                self._watch_tree(rel, ignored)
