"""The vocabularies of a command: how it is approved, how the user answered, how it is
confined and what it did to a file. Values only, importing nothing heavy, so the command
line's choices and the log's fields name them without loading the tools."""

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

ChangeKind = Literal["added", "modified", "deleted", "renamed", "mode", "type"]
"""How a path changed between two snapshots (:mod:`tools.snapshots.changes`), as a
``tool/result``'s ``files`` records it."""
