"""The base of every event payload (:mod:`agent.log.events`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Data(BaseModel):
    """Base of every event payload: immutable, and strict about unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")
