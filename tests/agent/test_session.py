"""Session persistence: reload, repair, torn tails, write failures, observers, files."""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
from pathlib import Path

import pytest

from agent.log.load_report import ReentrantAppend, SessionLoadError
from agent.log.registry import EventError
from agent.log.repair import NOT_STARTED, OUTCOME_UNKNOWN
from agent.log.session import Session
from agent.log.store import InvalidSessionId, SessionBusy, list_sessions
from tests.agent.conftest import assistant, replace, result, user


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_create_writes_session_start_with_private_permissions(home: Path, tmp_path: Path) -> None:
    s = Session.create(home, cwd=str(tmp_path))
    s.close()
    [start] = lines(s.path)
    assert start["seq"] == 0 and start["type"] == "session/start"
    assert start["data"]["id"] == s.id and start["data"]["cwd"] == str(tmp_path)
    assert stat.S_IMODE(s.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(s.path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


@pytest.mark.parametrize(
    "bad", ["../x", "a/b", "..", "x..y", "", ".hidden", "a\\b", "a b", "x" * 200]
)
def test_session_ids_validated(home: Path, bad: str) -> None:
    with pytest.raises(InvalidSessionId, match="invalid session id"):
        Session.open(home, bad)
    with pytest.raises(InvalidSessionId):
        Session.create(home, cwd="/", session_id=bad)


def test_unknown_session_id(home: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no session 'nope'"):
        Session.open(home, "nope")


def test_reload_reproduces_surface_generation_and_messages(session: Session, home: Path) -> None:
    session.append("turn/start", {"turn": 1})
    seqs = [user(session, f"m{i}").seq for i in range(4)]
    first = replace(session, seqs[0], seqs[1], "S1")
    assistant(session, calls=["a"])
    result(session, "a")
    replace(session, first.seq, seqs[2], "S2")
    session.append("turn/end", {"turn": 1, "reason": "completed"})
    before = (list(session.surface), session.replace_generation, session.derive_messages())
    session.close()

    again = Session.open(home, session.id)
    assert (list(again.surface), again.replace_generation, again.derive_messages()) == before
    assert again.events[-1].type == "session/resume"
    assert again.last_resume_seq == again.events[-1].seq
    assert again.report.repaired == [] and again.report.torn_bytes == 0
    again.close()


def test_repair_closes_only_the_open_tail_turn(session: Session, home: Path) -> None:
    session.append("turn/start", {"turn": 1})
    user(session, "first")
    session.append("turn/end", {"turn": 1, "reason": "completed"})
    session.append("turn/start", {"turn": 2})
    user(session, "second")
    session.append("step/start", {"turn": 2, "step": 1})
    call = assistant(session, calls=["done", "running", "never"], turn=2)
    session.append(
        "tool/start", {"turn": 2, "step": 1, "call_id": "done", "name": "bash", "arguments": "{}"}
    )
    result(session, "done", turn=2)
    start = session.append(
        "tool/start",
        {"turn": 2, "step": 1, "call_id": "running", "name": "bash", "arguments": "{}"},
    )
    n = len(session.events)
    session.close()

    again = Session.open(home, session.id)
    tail = [e for e in again.events[n:]]
    assert [e.type for e in tail] == [
        "tool/result",
        "tool/result",
        "step/end",
        "turn/end",
        "session/resume",
    ]
    running, never = tail[0], tail[1]
    assert running.data.call_id == "running" and running.data.content == OUTCOME_UNKNOWN
    assert running.source_event_seqs == [call.seq, start.seq]
    assert never.data.call_id == "never" and never.data.content == NOT_STARTED
    assert running.data.is_error and never.data.is_error
    assert (
        tail[2].data.step == 1 and tail[3].data.turn == 2 and tail[3].data.reason == "interrupted"
    )
    assert again.report.repaired == [e.seq for e in tail[:4]]
    # Every tool call on the surface now has its result.
    roles = [m["role"] for m in again.derive_messages()]
    assert roles == ["user", "user", "assistant", "tool", "tool", "tool"]
    again.close()

    # A second open finds nothing left to repair: only a new resume.
    third = Session.open(home, session.id)
    assert third.report.repaired == []
    assert [e.type for e in third.events[-2:]] == ["session/resume", "session/resume"]
    third.close()


def test_repair_without_open_step(session: Session, home: Path) -> None:
    session.append("turn/start", {"turn": 1})
    user(session, "hi")
    session.close()
    again = Session.open(home, session.id)
    assert [e.type for e in again.events[-2:]] == ["turn/end", "session/resume"]
    again.close()


def test_torn_tail_is_saved_then_cut(session: Session, home: Path) -> None:
    user(session, "kept")
    session.close()
    good = session.path.read_bytes()
    torn = b'{"seq": 2, "type": "user/mess'
    with open(session.path, "ab") as f:
        f.write(torn)

    again = Session.open(home, session.id)
    assert again.report.torn_bytes == len(torn)
    side = again.report.torn_path
    assert side is not None and side.parent == session.path.parent
    assert side.read_bytes() == torn
    assert stat.S_IMODE(side.stat().st_mode) == 0o600
    assert any("incomplete line" in n and str(side) in n for n in again.report.notices())
    assert again.path.read_bytes().startswith(good)
    assert [e.type for e in again.events] == ["session/start", "user/message", "session/resume"]
    assert again.events[-1].seq == 2  # the cut line's seq is reused by a well-formed event
    again.close()
    assert list_sessions(home)[0].id == session.id  # side files are not sessions


@pytest.mark.parametrize(
    "bad_line, reason",
    [
        (b"not json", "Invalid JSON"),
        (
            b'{"seq": 1, "type": "user/message", "time": 1, "data": {"content": "x"}}',
            "requires surface_op",
        ),
        (b'{"seq": 7, "type": "turn/start", "time": 1, "data": {"turn": 1}}', "seq 7 where 1"),
        (b'{"seq": 1, "type": "who/knows", "time": 1, "data": {}}', "unknown event type"),
    ],
)
def test_bad_line_names_file_and_line_and_leaves_file_untouched(
    session: Session, home: Path, bad_line: bytes, reason: str
) -> None:
    session.close()
    with open(session.path, "ab") as f:
        f.write(bad_line + b"\n")
        f.write(b'{"seq": 2, "type": "session/resume", "time": 1, "data": {}}\n')
    before = session.path.read_bytes()
    with pytest.raises(SessionLoadError) as info:
        Session.open(home, session.id)
    assert info.value.line == 2 and str(session.path) in str(info.value)
    assert reason in str(info.value)
    assert session.path.read_bytes() == before


def test_failed_write_leaves_memory_and_file_consistent(session: Session, home: Path) -> None:
    user(session, "small")
    surface = list(session.surface)
    n = len(session.events)
    size = session.path.stat().st_size
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    # A real OS write failure: the file may not grow past its current size + 100 bytes.
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 100, old_limit[1]))
    try:
        with pytest.raises(OSError):
            user(session, "x" * 5000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)
    assert len(session.events) == n and list(session.surface) == surface
    assert session.path.stat().st_size == size  # the partial line was cut
    ev = user(session, "after")
    assert ev.seq == n
    session.close()
    again = Session.open(home, session.id)
    assert [e.type for e in again.events] == [
        "session/start",
        "user/message",
        "user/message",
        "session/resume",
    ]
    again.close()


def test_invalid_event_changes_nothing(session: Session) -> None:
    size = session.path.stat().st_size
    with pytest.raises(EventError):
        session.append("turn/start", {"turn": 0})
    assert session.path.stat().st_size == size and len(session.events) == 1


def test_observers_see_committed_events_and_may_not_append(session: Session) -> None:
    seen: list[tuple[int, int]] = []

    def observer(event) -> None:
        seen.append((event.seq, len(session.events)))

    unsubscribe = session.subscribe(observer)
    e = user(session, "a")
    assert seen == [(e.seq, e.seq + 1)]
    unsubscribe()
    user(session, "b")
    assert len(seen) == 1

    def rude(event) -> None:
        session.append("user/message", {"content": "again"})

    session.subscribe(rude)
    with pytest.raises(ReentrantAppend):
        user(session, "c")
    assert [m["content"] for m in session.derive_messages()] == ["a", "b", "c"]


def test_second_writer_is_refused_and_readonly_open_touches_nothing(
    session: Session, home: Path
) -> None:
    session.append("turn/start", {"turn": 1})
    with pytest.raises(SessionBusy, match="another reefline process"):
        Session.open(home, session.id)
    before = session.path.read_bytes()
    view = Session.open(home, session.id, readonly=True)
    assert len(view.events) == 2 and view.readonly
    with pytest.raises(Exception, match="read-only"):
        view.append("turn/end", {"turn": 1, "reason": "completed"})
    assert session.path.read_bytes() == before


def test_list_newest_first(home: Path, tmp_path: Path) -> None:
    a = Session.create(home, cwd=str(tmp_path), session_id="aaa")
    b = Session.create(home, cwd=str(tmp_path), session_id="bbb")
    a.close()
    b.close()
    os.utime(a.path, (2_000_000_000, 2_000_000_000))
    assert [s.id for s in list_sessions(home)] == ["aaa", "bbb"]
    os.utime(b.path, (2_100_000_000, 2_100_000_000))
    assert [s.id for s in list_sessions(home)] == ["bbb", "aaa"]
    assert list_sessions(tmp_path / "nowhere") == []


def test_spill_dir_is_next_to_the_log(session: Session) -> None:
    assert session.spill_dir.parent == session.path.parent
    assert session.id in session.spill_dir.name
