"""Many files into the shadow repository at once, written straight into one pack.

``git update-index --add`` writes each new file as a loose object: one file of the
repository, a 4 KiB block on disk, per file of the working directory, and most of the time
of a first snapshot goes to making them. Here the files are read once (which also tells a
text file from one recorded by hash), their contents streamed to ``git fast-import`` with
the folders' trees (one pack). When the repository has no index yet (a first snapshot),
the index is written here too, from each file's stat and blob id
(:mod:`tools.snapshots.index_file`), except for the files ``.gitattributes`` converts
(``git check-attr`` says which, while the files are read): the caller adds those the usual
way. Otherwise the caller adds them all: ``update-index --add`` finds every object already
made and writes none (a file changed since it was read, or one ``.gitattributes`` converts,
is written as it is then, loose), reading each file a second time.

Only regular files are taken: a symlink, a folder, a FIFO, a file gone or unreadable is
left to the caller's usual way (:meth:`tools.snapshots.shadow.ShadowRepo`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from tools import beneath
from tools.snapshots import index_file, stopping, stubs
from tools.snapshots.git import Git, GitError

BULK_FROM = 500
"""Fewer files than this to store go the usual way (their few loose objects are packed with
the rest later: :mod:`tools.snapshots.packing`)."""

# Bound once: looked up for each of the (maybe 100,000) files of a first snapshot.
_open, _fstat, _read, _close, _is_regular = os.open, os.fstat, os.read, os.close, stat.S_ISREG
_SIZE_CAP = stubs.SIZE_CAP
_READ_FLAGS = beneath.READ_FLAGS  # the rules of tools.beneath, applied in a hot loop
_DIR_FLAGS = beneath.DIR_FLAGS
_REF = "refs/reefline/bulk"
_FS_ENCODING = sys.getfilesystemencoding()
_FS_ERRORS = sys.getfilesystemencodeerrors()
_PIPE_BYTES = 1 << 20
_BUFFER_BYTES = 64 << 10
"""Written to the import this many bytes at a time: it works while the next files are
read (a buffer the pipe's size held back a quarter of the files of a first snapshot of
small files, for the import to store after the last was read)."""
_CHECK_EVERY = 0x3FF
"""The stop is looked at once in this many files (and one more) of the loop."""
TREES_EVERY = 5_000
"""Files to a commit of the import (the trees built so far): a few dozen in a large tree."""
_CONVERTING = frozenset({b"text", b"eol", b"crlf", b"filter", b"ident", b"working-tree-encoding"})
"""Attributes under which what git stores may differ from the file's bytes (any mention,
even "unset", counts: those files go git's way)."""


@dataclass
class Sorted:
    """What became of the paths given to :func:`store`."""

    text: set[str] = field(default_factory=set)
    """Regular text files whose content (and folders' trees) is now in the pack."""
    by_hash: dict[str, os.stat_result] = field(default_factory=dict)
    """Regular files to record by hash (binary, or over :data:`stubs.SIZE_CAP`)."""
    indexed: set[str] = field(default_factory=set)
    """Those of :attr:`text` now in the index too, with their stat (``index=True`` only)."""


def store(git: Git, work_tree: Path, paths: list[str], *, index: bool = False) -> Sorted:
    """Store the regular text files among ``paths`` (relative) in one pack, with their
    folders' trees; say which they were and which are to be recorded by hash. ``index``
    (only when the repository has no index yet): write one holding those of them no
    ``.gitattributes`` converts (:attr:`Sorted.indexed`). Adding the others to the index
    is the caller's (``update-index --add`` finds each object made, and writes none again).

    Raises:
        GitError: git failed.
        OSError: the index could not be written.
        tools.snapshots.stopping.Stopped: this thread's stop was set meanwhile (nothing
            half-done stays in the index; the import is killed).
    """
    found = Sorted()
    entries: list[tuple[bytes, str]] = []  # mode, path; the blob of entry n is mark n
    read: list[index_file.Entry] | None = [] if index else None
    stop = stopping.current()
    converting = _Attributes(git, paths) if index else None
    try:
        importer = _start_import(git)
        if stop is not None:
            stop.adopt(importer)
        try:
            try:
                _send(importer, work_tree, paths, found, entries, read)
            finally:
                assert importer.stdin is not None
                with contextlib.suppress(OSError):  # it died: its status says why
                    importer.stdin.close()  # what was sent so far is packed
            found.text = {path for _, path in entries}
            encoded = None
            if converting is not None and read is not None:
                # Made while git still writes the trees.
                converted = converting.result()
                names = {p.encode(_FS_ENCODING, _FS_ERRORS) for p in converted}
                kept = [e for e in read if e[0] not in names] if names else read
                encoded = index_file.encode(kept)
                found.indexed = found.text.difference(converted)
        finally:
            try:
                _finish_import(importer)
            except GitError:
                if stop is not None:
                    stop.check()  # killed by the stop: say so, not that git failed
                raise
            finally:
                if stop is not None:
                    stop.release(importer)
        if encoded is not None:
            if stop is not None:
                stop.check()
            index_file.write(git.git_dir, encoded)
    finally:
        if converting is not None:
            converting.close()
    return found


def _send(
    importer: subprocess.Popen[bytes],
    work_tree: Path,
    paths: list[str],
    found: Sorted,
    entries: list[tuple[bytes, str]],
    read: list[index_file.Entry] | None,
) -> None:
    """Stream the text files among ``paths`` and their trees to ``importer``; note each in
    ``entries`` (and, given ``read``, its index entry), the others in ``found``.

    The loop runs once per file of the tree (maybe 100,000 while a first command waits):
    each file is read inline through its folder's descriptor (:class:`_Folders`), and what
    is looked up on each turn is bound to a local name first."""
    stop = stopping.current()
    folders = _Folders(work_tree)
    lines: list[bytes] = []  # the trees' lines since the last commit
    try:
        assert importer.stdin is not None
        send, folder = importer.stdin.write, folders.folder
        blob_id, packed, by_hash = index_file.blob_id, index_file.packed, found.by_hash
        keep, tree_line = entries.append, lines.append
        index_entry = read.append if read is not None else None
        open_, fstat, read_, close, is_regular = _open, _fstat, _read, _close, _is_regular
        flags, cap, sniff, encoding, errors = (
            _READ_FLAGS,
            _SIZE_CAP,
            stubs.SNIFF,
            _FS_ENCODING,
            _FS_ERRORS,
        )
        mark = 0
        for n, path in enumerate(paths):
            if stop is not None and not n & _CHECK_EVERY:
                stop.check()
            where, _, name = path.rpartition("/")
            try:
                fd = open_(name, flags, dir_fd=folder(where))
            except OSError:
                continue  # a link, gone, unreadable: the usual way takes it
            try:
                st = fstat(fd)
                if not is_regular(st.st_mode):
                    continue
                size = st.st_size
                data = read_(fd, size + 1) if size <= cap else None
            except OSError:
                continue
            finally:
                close(fd)
            if data is not None and len(data) > size:
                continue  # grown while read: the usual way takes it as it is then
            if data is None or data.find(b"\0", 0, sniff) >= 0:  # by_hash's rule
                by_hash[path] = st
                continue
            mode = b"100755" if st.st_mode & stat.S_IXUSR else b"100644"
            keep((mode, path))
            encoded = path.encode(encoding, errors)  # os.fsencode, without its cost
            if index_entry is not None:
                index_entry((encoded, packed(encoded, st, blob_id(data))))
            mark += 1
            send(b"blob\nmark :%d\ndata %d\n%b\n" % (mark, len(data), data))
            if b"\n" in encoded or encoded[:1] == b'"':
                encoded = _quoted(encoded)
            tree_line(b"M %b :%d %b\n" % (mode, mark, encoded))
            if len(lines) >= TREES_EVERY:
                _commit(send, lines)
        _commit(send, lines)
        if entries:  # the import's ref dropped (its trees and files stay in the pack)
            send(b"reset %b\nfrom %b\n\n" % (_REF.encode(), b"0" * 40))
    finally:
        folders.close()


class _Attributes:
    """Which of ``paths`` some attribute converts on the way into git: ``git check-attr``
    started at once, reading the paths from an unnamed file in the repository and writing
    to others (no thread feeds or reads it; killed with this thread's stop)."""

    def __init__(self, git: Git, paths: list[str]) -> None:
        self._stop = stopping.current()
        self._files = contextlib.ExitStack()
        try:
            listed = self._file(git)
            listed.write(("\0".join(paths) + "\0").encode(_FS_ENCODING, _FS_ERRORS))
            listed.seek(0)
            self._out, self._err = self._file(git), self._file(git)
            self._proc = git.popen(
                ["check-attr", "-z", "--stdin", "-a"],
                stdin=listed,
                stdout=self._out,
                stderr=self._err,
            )
        except (OSError, GitError):
            self._files.close()
            raise
        if self._stop is not None:
            self._stop.adopt(self._proc)

    def _file(self, git: Git) -> BinaryIO:
        return self._files.enter_context(tempfile.TemporaryFile(dir=git.git_dir))

    def result(self) -> set[str]:
        """The paths converted (their files then go git's way).

        Raises:
            GitError: git failed.
            tools.snapshots.stopping.Stopped: this thread's stop was set meanwhile.
        """
        returned = self._proc.wait()
        if self._stop is not None:
            self._stop.check()
        if returned != 0:
            self._err.seek(0)
            said = self._err.read().decode(errors="replace").strip()
            raise GitError(f"git check-attr failed: {said or returned}")
        self._out.seek(0)
        fields = self._out.read().split(b"\0")
        return {
            os.fsdecode(fields[n])
            for n in range(0, len(fields) - 2, 3)
            if fields[n + 1] in _CONVERTING
        }

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        if self._stop is not None:
            self._stop.release(self._proc)
        self._files.close()


class _Folders:
    """The folders of ``top`` that files are read through, each opened without following a
    link (a folder swapped for a link is not gone through), those of the last path kept
    open (listed paths come folder by folder): :mod:`tools.beneath`'s rules, walked
    incrementally here because the loop reading the files runs once per file."""

    def __init__(self, top: Path) -> None:
        self._top = top
        self._top_fd: int | None = None
        self._open: list[tuple[str, int]] = []  # the folders of the last path, outermost first
        self._last: tuple[str, int] | None = None  # the last path's folder and its descriptor

    def folder(self, where: str) -> int:
        """The descriptor of folder ``where`` (relative, "" for the top), each component
        opened without following a link.

        Raises:
            OSError: it cannot be opened so (gone, a link, not a folder).
        """
        last = self._last
        if last is not None and last[0] == where:
            return last[1]
        self._last = None
        fd = self._folder(where.split("/") if where else [])
        self._last = (where, fd)
        return fd

    def _folder(self, parts: list[str]) -> int:
        if self._top_fd is None:
            self._top_fd = beneath.open_root(self._top)
        keep = 0
        while keep < min(len(self._open), len(parts)) and self._open[keep][0] == parts[keep]:
            keep += 1
        while len(self._open) > keep:
            os.close(self._open.pop()[1])
        for part in parts[keep:]:
            parent = self._open[-1][1] if self._open else self._top_fd
            self._open.append((part, os.open(part, _DIR_FLAGS, dir_fd=parent)))
        return self._open[-1][1] if self._open else self._top_fd

    def close(self) -> None:
        self._last = None
        while self._open:
            os.close(self._open.pop()[1])
        if self._top_fd is not None:
            os.close(self._top_fd)
            self._top_fd = None


def _commit(send: Callable[[bytes], object], lines: list[bytes]) -> None:
    """The folders' trees as ``lines`` leave them, in the same pack: a commit on a ref of
    our own (dropped at the end of the import), each continuing the last (git builds them
    while the next files are read, not all at the end; a folder cut in two leaves one tree
    unused)."""
    if lines:
        send(b"commit %b\ncommitter reefline <> 0 +0000\ndata 0\n" % _REF.encode())
        send(b"".join(lines) + b"\n")
        lines.clear()


def _quoted(path: bytes) -> bytes:
    """``path`` as fast-import reads it: C-quoted when it would be misread raw."""
    if b"\n" not in path and not path.startswith(b'"'):
        return path
    escaped = path.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
    return b'"' + escaped + b'"'


def _start_import(git: Git) -> subprocess.Popen[bytes]:
    importer = git.popen(
        ["fast-import", "--quiet", "--force"], stdout=subprocess.DEVNULL, bufsize=_BUFFER_BYTES
    )
    assert importer.stdin is not None
    with contextlib.suppress(OSError, AttributeError):  # fewer switches between the two
        fcntl.fcntl(importer.stdin.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    return importer


def _finish_import(importer: subprocess.Popen[bytes]) -> None:
    """End the stream if still open (what was sent so far is packed) and wait."""
    assert importer.stdin is not None and importer.stderr is not None
    with contextlib.suppress(OSError):  # it died: its status says why
        importer.stdin.close()
    err = importer.stderr.read()
    if importer.wait() != 0:
        said = err.decode(errors="replace").strip().splitlines()
        raise GitError(f"git fast-import failed: {said[-1] if said else importer.returncode}")
