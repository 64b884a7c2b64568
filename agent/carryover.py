"""What a resumed session takes over from its log: where the shell was, the approval
policy the user chose in the session, and where its requests went (its provider).

Both are facts the model's history already assumes (it ran ``cd sub`` and was told so; the
user said "always"), so a resume that forgot them would make that history untrue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.log.events import (
    CommandRun,
    Event,
    PolicySource,
    ProviderData,
    SessionApproval,
    SessionProvider,
    SessionStart,
    ToolResult,
)
from tools.modes import POLICIES, ApprovalPolicy


@dataclass(frozen=True)
class CarriedOver:
    cwd: str | None = None
    """The working directory the last logged command left."""
    policy: ApprovalPolicy | None = None
    """The approval policy the user last chose in the session ("always this session" is
    ``auto``; ``/approve`` is logged as a command); None when they chose none."""
    provider: ProviderData | None = None
    """The provider the session's requests last went to; None for a log older than the
    record."""
    ran_with: ApprovalPolicy | None = None
    """The approval policy the session's last run ended with, when the log says it: the
    one chosen in it, or one its settings gave (which a resume does not restore)."""
    ran_with_by: PolicySource | None = None
    """What gave :attr:`ran_with`."""


def carried_over(events: Sequence[Event]) -> CarriedOver:
    """Fold the log (see the module docstring). O(events), once at start."""
    cwd: str | None = None
    policy: ApprovalPolicy | None = None
    provider: ProviderData | None = None
    ran: tuple[ApprovalPolicy, PolicySource] | None = None
    for event in events:
        if isinstance(event, SessionStart):
            provider = event.data.provider
        elif isinstance(event, SessionProvider):
            provider = event.data
        elif isinstance(event, ToolResult):
            if event.data.cwd:
                cwd = event.data.cwd
            if event.data.approval == "always":
                policy = "auto"
                ran = (policy, "chosen")
        elif isinstance(event, SessionApproval):
            ran = (event.data.policy, event.data.given_by)
        elif isinstance(event, CommandRun) and event.data.name == "approve":
            chosen = event.data.args.strip().lower()
            if chosen in POLICIES:
                policy = chosen
                ran = (policy, "chosen")
    if ran is None and policy is not None:
        ran = (policy, "chosen")
    return CarriedOver(cwd, policy, provider, *(ran or (None, None)))
