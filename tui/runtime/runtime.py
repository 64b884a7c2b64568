"""The runtime: the live objects of one open session, as the composition root built them.

Front ends hold a :class:`Runtime` and act through it: the session and its log, the model,
the meter, the bash tool, the agent, compaction and ``/compact``. It owns what several
parts share: the model in use and its window (through :attr:`Runtime.windows`), the
approval policy's logged changes, and closing everything on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent.llm.chat import ChatModel
from agent.llm.discovery import WindowAsker
from agent.llm.prices import PriceOf, price_book
from agent.llm.prompt_cache import CachePlan
from agent.llm.windows import WindowBook
from agent.log.keeping import close_or_discard
from agent.log.session import Observer, Session
from agent.loop import Agent
from agent.measurement import Measurement
from agent.meter import TokenMeter
from agent.provider import Provider, provider_cache
from agent.settings import Settings
from agent.tokens import Estimator
from agent.turns import StreamListener
from compact.commands.compact import CompactCommand
from compact.contract.service import CompactService, NoticeListener
from compact.reports.forecast import compacting_soon
from tools.base import ApprovalPolicy
from tools.bash import BashTool
from tools.mcp.hub import McpHub
from tools.snapshots.recording import FirstRecord
from tui.runtime.usage_reading import UsageReading


class StartupError(Exception):
    """The runtime cannot start (bad resume id, busy session...). Exit code 2.

    ``listing``: the session could not be found, so the message ends by saying where the
    stored ones are listed; the shell's words unless a front end says its own
    (:meth:`said_in`)."""

    def __init__(self, message: str, *, listing: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.listing = listing

    def said_in(self, where: str) -> str:
        """The message, pointing at ``where`` for the list of sessions when it should."""
        return f"{self.message}; list sessions with {where}" if self.listing else self.message

    def __str__(self) -> str:
        return self.said_in("`reefline sessions`")


@dataclass
class Runtime:
    settings: Settings
    provider: Provider
    home: Path
    session: Session
    model: ChatModel
    estimator: Estimator
    meter: TokenMeter
    bash: BashTool
    agent: Agent
    mcp: McpHub
    compaction: CompactService
    compact_command: CompactCommand
    windows: WindowBook
    window_asker: WindowAsker
    notices: list[str] = field(default_factory=list)
    default_approve: ApprovalPolicy = "ask"
    """The front end's approval policy for a session whose log chose none (``ask`` in the
    app, ``deny`` headless): what ``/resume`` gives such a session, as ``--resume`` does."""
    scripted_delay_s: float = 0.0
    """The demo model's delay between chunks: what the runtimes opened from this one get."""

    @property
    def cache_plan(self) -> CachePlan:
        """How this session's requests are shaped for the provider's prompt cache, and how
        long it keeps a prefix."""
        return provider_cache(self.provider, self.settings)

    async def pause_began(self) -> None:
        """A front end that waits for the person's next message calls this right after a
        turn ends (the app, ``--plain``; ``-p`` has no pause): compaction may use the pause
        while the provider's cache is warm (:meth:`CompactService.pause_began`). Returns once
        that work is under way; closing the runtime stops it."""
        await self.compaction.pause_began(self.agent.envelope(), self.cache_plan)

    def observe(
        self,
        on_event: Observer,
        on_stream: StreamListener,
        on_notice: NoticeListener,
    ) -> Callable[[], None]:
        """The one way a front end hears the core: each event appended to the log, each
        transient stream item (deltas, retries, notices), each compaction notice. Returns the
        function that stops all three. The callbacks run inside the core, synchronously."""
        with contextlib.suppress(RuntimeError):  # no loop runs yet: the first step starts them
            self.mcp.start()  # in the background, once there is someone to tell of a failure
        stops = [
            self.session.subscribe(on_event),
            self.agent.listen(on_stream),
            self.compaction.add_listener(on_notice),
        ]

        def detach() -> None:
            while stops:
                stops.pop()()

        return detach

    def observe_workspace(self, on_record: Callable[[FirstRecord], None]) -> Callable[[], None]:
        """Hear where the workspace's first snapshot is (it runs in the background from the
        session's start), on the running event loop (call this from it), the current state
        first. Returns the function that stops it."""
        recorder = self.bash.snapshots
        if recorder is None:
            return lambda: None
        loop = asyncio.get_running_loop()

        def hop(record: FirstRecord) -> None:  # on the snapshot's thread
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens
                loop.call_soon_threadsafe(on_record, record)

        return recorder.listen(hop)

    @property
    def first_record(self) -> FirstRecord | None:
        """Where the workspace's first snapshot is (None: no snapshots here)."""
        return None if self.bash.snapshots is None else self.bash.snapshots.first

    @property
    def busy(self) -> bool:
        """A turn is open or ``/compact`` runs: what a command that replaces or condenses the
        session waits for."""
        return self.agent.busy or self.compact_command.running

    @property
    def model_name(self) -> str:
        """The model the next request names; its one owner is :attr:`windows`."""
        return self.windows.model

    def switch_model(self, name: str) -> None:
        """Name ``name`` in the next request; the loop, the meter and the gauge read the
        model and its window from :attr:`windows`, so they all follow. Logged, so that a
        resume goes on with it."""
        self.windows.select(name)
        self.provider = dataclasses.replace(self.provider, model=name)
        self.agent.settings.cache_ttl_s = self.cache_plan.ttl_s  # a Claude model's may differ
        self.session.append("session/provider", self.provider.record())

    def measure(self) -> Measurement:
        """The size of the next request as it would go out now, system prompt and tool
        schemas included: the one reading the gauge, ``/context`` and the REPL show."""
        return self.meter.measure(self.agent.envelope())

    @property
    def price_of(self) -> PriceOf:
        """Model prices: the config's ``prices``, then the built-in table."""
        return price_book(self.settings.model_prices)

    def usage(self) -> UsageReading:
        """The session's usage and estimated cost, as the gauge and ``/context`` say it."""
        return UsageReading.of(self.meter.session_usage, self.price_of, self.settings.model_prices)

    @property
    def threshold_tokens(self) -> int | None:
        """The auto-compact threshold in tokens (None: window unknown or auto off)."""
        return self.compaction.threshold(self.windows.current.tokens)

    def compacting_soon(self, total: int) -> bool:
        """Whether automatic compaction is expected within about two steps of ``total``."""
        return compacting_soon(total, self.threshold_tokens, self.compaction.step_growth())

    def set_approval(self, policy: ApprovalPolicy) -> None:
        """Switch the bash approval policy, logged so that a resume keeps it."""
        self.bash.policy = policy
        command_id = f"cmd-{uuid.uuid4().hex[:12]}"
        run = {"command_id": command_id, "name": "approve", "args": policy}
        self.session.append("command/run", run)
        text = f"Bash approval policy: {policy}. Commands run {self.sandbox_words}."
        self.session.append("command/done", {"command_id": command_id, "ok": True, "text": text})

    @property
    def sandbox_words(self) -> str:
        """How the next command runs: ``sandboxed (workspace-write, no network)`` or
        ``unsandboxed``; the mode may follow the approval policy."""
        return self.bash.sandbox.describe(self.bash.policy)

    @property
    def sandbox_summary(self) -> str:
        """The sandbox as ``/context`` says it: the mode, what it allows and why."""
        return self.bash.sandbox.summary(self.bash.policy)

    @property
    def is_demo(self) -> bool:
        return self.provider.kind == "scripted"

    @property
    def model_label(self) -> str:
        if self.is_demo:
            return f"{self.model_name} (offline demo model)"
        return self.model_name

    def close(self) -> None:
        """End the bash tool's sandbox, stop observing and close the log (a session nothing
        happened in is removed: :func:`agent.log.keeping.close_or_discard`). The HTTP client
        needs a loop: see :meth:`aclose`."""
        self.bash.close()
        self.meter.close()
        self.compaction.close()
        close_or_discard(self.session)

    async def release_model(self) -> None:
        """Stop the MCP servers and close the model's HTTP connections, on the loop that
        opened them."""
        with contextlib.suppress(Exception):  # exiting: a failed close must not mask why
            await self.mcp.stop()
        with contextlib.suppress(Exception):
            await self.model.aclose()

    async def aclose(self) -> None:
        """:meth:`release_model`, then :meth:`close`."""
        await self.release_model()
        self.close()
