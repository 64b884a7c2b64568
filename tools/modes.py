"""The approval and sandbox vocabularies: how a command is approved, how the user answered,
and how it is confined. Values only, importing nothing heavy, so the command line's choices
and the log's fields name them without loading the tools."""

from __future__ import annotations

from typing import Literal

ApprovalPolicy = Literal["ask", "auto", "deny"]
POLICIES: tuple[ApprovalPolicy, ...] = ("ask", "auto", "deny")
"""How a command is approved: ask the user each time, run without asking, or never run."""

ApprovalDecision = Literal["once", "always", "deny"]
"""The user's answer: run this command, run this and every later command, or do not run it."""

SandboxMode = Literal["off", "read-only", "workspace-write"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("off", "read-only", "workspace-write")
"""How a command is confined (:mod:`tools.sandbox`): not at all, with nothing writable but
a private ``/tmp``, or with the working directory writable too."""
