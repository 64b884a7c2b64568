"""The watchdog (:mod:`tools.reaper`), run as reefline runs it: when reefline's pipe closes it
kills the groups still listed, and only groups reefline started."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tools import reaper


@pytest.fixture
def group_leader() -> Iterator[subprocess.Popen[bytes]]:
    """A ``sleep`` this test started, leading a process group of its own."""
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def watchdog_given(lines: str) -> None:
    """Start the watchdog, tell it ``lines``, close its pipe (reefline ended); wait for it."""
    watchdog = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", reaper._WATCHDOG], stdin=subprocess.PIPE
    )
    watchdog.communicate(lines.encode(), timeout=60)


def test_a_listed_group_is_killed_when_reefline_ends(
    group_leader: subprocess.Popen[bytes],
) -> None:
    start = reaper._start_time(group_leader.pid)
    watchdog_given(f"+ {group_leader.pid} {start}\n")
    assert group_leader.wait(timeout=60) == -9


def test_a_number_another_process_has_now_is_left_alone(
    group_leader: subprocess.Popen[bytes],
) -> None:
    """A command whose leader had exited before it was tracked goes without a start time.
    Its number, once the group is gone, can be given to another process leading a group of
    its own (here the test's ``sleep``): that group is not reefline's to kill."""
    watchdog_given(f"+ {group_leader.pid} \n")
    assert group_leader.poll() is None
    watchdog_given(f"+ {group_leader.pid} 1\n")  # a leader that started at another time
    assert group_leader.poll() is None
