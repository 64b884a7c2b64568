"""How many steps ahead a summary starts: from the session's own step and summary times."""

from __future__ import annotations

from compact.basic.pace import FIRST_LEAD, MAX_LEAD, Pace


def steps(pace: Pace, turn: int, seconds: list[float], start: float = 0.0) -> float:
    """Checkpoints of ``turn`` ``seconds`` apart (each checkpoint itself instant)."""
    now = start
    pace.arrived(turn, now)
    pace.left(turn, now)
    for gap in seconds:
        now += gap
        pace.arrived(turn, now)
        pace.left(turn, now)
    return now


def test_before_a_summary_was_timed_the_lead_is_the_first_guess() -> None:
    pace = Pace()
    steps(pace, 1, [3.0, 3.0])
    assert pace.lead() == FIRST_LEAD
    pace = Pace()
    pace.summarized(5.0)
    assert pace.lead() == FIRST_LEAD  # no step measured yet


def test_a_summarizer_faster_than_a_step_starts_one_step_ahead() -> None:
    pace = Pace()
    steps(pace, 1, [6.0, 6.0, 6.0])
    pace.summarized(5.0)
    assert pace.lead() == 1


def test_a_slower_summarizer_starts_as_many_steps_ahead_as_it_needs_up_to_the_cap() -> None:
    pace = Pace()
    steps(pace, 1, [3.0, 3.0, 3.0])
    pace.summarized(5.0)
    assert pace.lead() == 2
    pace.summarized(12.5)
    pace.summarized(12.5)
    assert pace.lead() == 4  # the median summary: 12.5 s over 3 s steps, less its fifth
    pace.summarized(60.0)
    pace.summarized(60.0)
    assert pace.lead() == MAX_LEAD


def test_a_summary_at_most_a_quarter_slower_than_a_step_is_waited_for_not_started_earlier() -> None:
    """3 s summaries beside 2.5 s steps: the checkpoint waits half a second (a sixth of the
    summary) rather than every commit reading one step anew."""
    pace = Pace()
    steps(pace, 1, [2.5, 2.5, 2.5])
    pace.summarized(3.0)
    assert pace.lead() == 1
    pace.summarized(3.2)
    pace.summarized(3.2)
    assert pace.lead() == 2  # 3.2 s is more than a quarter over 2.5 s


def test_the_pause_between_turns_and_the_checkpoint_itself_are_not_steps() -> None:
    pace = Pace()
    now = steps(pace, 1, [2.0, 2.0])
    # A person reads and types for ten minutes; the next turn's first checkpoint compacts
    # in the foreground for 30 s before its step begins.
    pace.arrived(2, now + 600)
    pace.left(2, now + 630)
    pace.arrived(2, now + 632)
    assert pace.steps == [2.0, 2.0, 2.0]
