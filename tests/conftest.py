"""Fixtures shared by every test package."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer


@pytest.fixture(autouse=True)
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test has a reefline home and config folder of its own (tests run in parallel:
    nothing may meet in a shared one), and no terminal size in the environment: pytest-xdist's workers set
    COLUMNS=80 and LINES=24, which an app started in a wider tmux pane would believe."""
    monkeypatch.setenv("REEFLINE_HOME", str(tmp_path / "reefline-home"))
    # The user's own instruction file (~/.config/reefline/AGENTS.md) is not the test's.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (see tests/openai_server.py)."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def collector_on() -> Iterator[None]:
    """The garbage collector on at the start (a session another test built in a thread may
    have paused it meanwhile), and as it was at the end."""
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@pytest.fixture(scope="session")
def bwrap() -> str:
    """The bubblewrap that works here; skips (saying why) when there is none."""
    from tools.sandbox import detect

    found = detect()
    if found.bwrap is None:
        pytest.skip(f"no sandbox can be had here: {found.reason}")
    return found.bwrap


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A tiny project for agents to explore (deterministic, fast)."""
    d = tmp_path / "project"
    d.mkdir()
    (d / "README.md").write_text("# Sample project\n\nIt parses headers.\n")
    (d / "parser.py").write_text("def parse_header(line):\n    return line.split(':', 1)\n")
    return d


# The longest tests, longest first (the SIGKILL test alone takes over a third of the run).
_LONGEST = (
    "test_sigkill_at_many_points_loses_nothing",
    "test_timeline_compact_and_export",
    "test_crash_during_a_summary_is_harmless",
    "test_log_stops_accepting_writes_at_every_point_of_a_turn",
    "test_long_session_compacts_and_keeps_the_first_fact",
    "test_what_reaches_a_terminal_is_written_out_never_obeyed",
    "test_injected_tool_output_does_not_change_the_summary_instruction",
)


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, hand out tests two at a time (not in chunks of a quarter of
    each worker's share), so the longest tests start at once on different workers and the
    rest flows to whichever worker is free: a parallel run does not end waiting on one."""
    if getattr(config.option, "maxschedchunk", "absent") is None:
        config.option.maxschedchunk = 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first, each followed by an ordinary one (workers take two at a
    time: two long ones must not land on the same worker)."""
    rank = {name: i for i, name in enumerate(_LONGEST)}

    def name(item: pytest.Item) -> str:
        return getattr(item, "originalname", item.name)

    longest = sorted((i for i in items if name(i) in rank), key=lambda i: rank[name(i)])
    others = [i for i in items if name(i) not in rank]
    head = [x for pair in zip(longest, others, strict=False) for x in pair]
    items[:] = head + others[len(longest) :]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Collect once, then freeze what is left, before a pytest-xdist worker says it is done.

    After that message the worker still tears down, and pytest's teardown runs five full
    collections (for unraisable exceptions in garbage cycles) over the worker's whole heap,
    libraries and apps included. The main process meanwhile tells the worker to end, and
    execnet SIGINTs a worker still busy 5 s later: on a loaded machine those collections
    took longer, and the worker was interrupted inside them. This collection finds what they
    would have (pytest reports it the same way), and the frozen heap makes them instant."""
    gc.collect()
    gc.freeze()
