"""The fidelity benchmark's targets, checked on every test run (the figures themselves are
written to BENCHMARKS.md by ``make bench``).

The scripted session of :mod:`tests.bench.bench_fidelity`: facts planted in the first user
message and in five bash outputs, a silent model (never repeats what it saw) and a noting one
(its next step repeats a fact it just read). On the 4-turn session masking keeps the context
below the threshold, so reefline's ladder writes no checkpoint and the masked facts must be in
spill files the final request names; on the 10-turn session the ladder must summarize, and the
checkpoint, written from the originals, must carry every fact planted before it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.tokens import Estimator
from tests.bench.bench_fidelity import FACTS, LONG_TURNS, TURNS, WINDOW, run_one

ALL = sorted(f.key for f in FACTS)


@pytest.fixture(scope="module")
def estimator() -> Estimator:
    return Estimator()


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A folder with a path as short as the benchmark's: the session's file paths are in every
    command and placeholder the model is sent, so a long test path would change the figures."""
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


def test_four_turns_silent_keeps_every_fact_in_view_or_in_a_named_spill_file(
    tmp_path: Path, estimator: Estimator
) -> None:
    ladder = run_one(tmp_path, "ladder", "silent", estimator, TURNS)
    assert ladder.completed
    assert ladder.model.largest <= WINDOW
    assert sorted(ladder.visible + ladder.recoverable) == ALL
    assert all(k in ladder.visible for k in ladder.before_checkpoint)


def test_four_turns_noting_keeps_all_six_facts_in_view_and_sends_no_more_than_summaries(
    tmp_path: Path, estimator: Estimator
) -> None:
    ladder = run_one(tmp_path, "ladder", "noting", estimator, TURNS)
    summary = run_one(tmp_path, "summary only", "noting", estimator, TURNS)
    assert ladder.completed and summary.completed
    assert sorted(ladder.visible) == ALL
    assert ladder.model.largest <= WINDOW
    assert ladder.model.prompt_tokens <= summary.model.prompt_tokens


def test_ten_turns_silent_checkpoint_carries_what_the_originals_said(
    tmp_path: Path, estimator: Estimator
) -> None:
    ladder = run_one(tmp_path, "ladder", "silent", estimator, LONG_TURNS)
    assert ladder.completed
    assert ladder.model.largest <= WINDOW
    assert ladder.checkpoints >= 1
    # The facts sit in turns 1-4; the checkpoint came later, so all of them were masked
    # before it was written, and only the originals could have carried them into it.
    assert sorted(ladder.before_checkpoint) == ALL
    assert sorted(ladder.visible) == ALL
