"""What a resume restored, said in one line: the turns, the last checkpoint, the model and
its server, the approval policy, and why any of them is not what the session ran with.

``Resumed "api" (20261203-…): 12 turns · last checkpoint #3 (turn 9) · gpt-4.1 at
api.openai.com · approval ask, was auto: --approve holds only for the run it is given to
(give it again, or /approve auto).``
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from agent.carryover import CarriedOver
from agent.formatting import plural
from agent.log.events import Event, PolicySource, ProviderData, TurnStart
from agent.log.names import name_of
from agent.provider import PROVIDER_SETTINGS, where
from compact.reports.timeline import timeline
from tools.modes import ApprovalPolicy


@dataclass(frozen=True)
class Resumed:
    """What a resume goes on with, beside the log it read."""

    record: ProviderData
    """Where the requests go now."""
    policy: ApprovalPolicy
    given_by: PolicySource
    chosen: Collection[str]
    """The settings the command line gave."""


def restored_line(
    session_id: str, events: Sequence[Event], carried: CarriedOver, now: Resumed
) -> str:
    """The one line (see the module docstring); ``carried`` is the log's fold before this
    run added anything."""
    name = name_of(events)
    label = f"{name!r} ({session_id})" if name else session_id
    turns = sum(1 for event in events if isinstance(event, TurnStart))
    parts = [
        f"Resumed {label}: {plural(turns, 'turn')}",
        _checkpoint(events),
        _provider(carried.provider, now),
        _approval(carried, now),
    ]
    return " · ".join(parts) + "."


def _checkpoint(events: Sequence[Event]) -> str:
    standing = [
        record
        for record in timeline(events, closed=True)
        if record.kind == "compaction" and record.status == "done" and record.undone_by is None
    ]
    if not standing:
        return "no checkpoint"
    last = standing[-1]
    when = f"turn {last.turn}" if last.turn is not None else "/compact"
    return f"last checkpoint #{last.number} ({when})"


def _provider(recorded: ProviderData | None, now: Resumed) -> str:
    said = where(now.record)
    if recorded is None:
        return f"{said} (the log did not say where it ran: recorded now)"
    if (recorded.model, recorded.base_url) == (now.record.model, now.record.base_url):
        return said
    flags = sorted(f"--{key.replace('_', '-')}" for key in PROVIDER_SETTINGS & set(now.chosen))
    given = f" ({', '.join(flags)} given)" if flags else ""
    return f"{said}, was {where(recorded)}{given}"


def _approval(carried: CarriedOver, now: Resumed) -> str:
    said = f"approval {now.policy}"
    before, by = carried.ran_with, carried.ran_with_by
    if before is None or by is None or before == now.policy:
        if now.given_by == "chosen" and now.policy == "auto":
            return f"{said} (chosen in this session: /approve ask to be asked again)"
        return said
    if now.given_by == "flag":
        return f"{said} (--approve given now; was {before})"
    if now.given_by == "setting":
        return f"{said} (set by REEFLINE_APPROVE or the config file; was {before})"
    if by == "flag":
        return (
            f"{said}, was {before}: --approve holds only for the run it is given to "
            f"(give it again, or /approve {before})"
        )
    if by == "setting":
        return f"{said}, was {before} (set then by REEFLINE_APPROVE or the config file)"
    return f"{said}, was {before} (the default where it ran: the app asks, -p denies)"
