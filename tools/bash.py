"""The ``bash`` tool: run one command per call in a persistent working directory.

Each call runs ``bash -c`` in its own session and process group with stdin on /dev/null and
stderr merged into stdout; when the sandbox says so (:mod:`tools.sandbox`), inside the
tool's long-lived bubblewrap jail (:mod:`tools.jail`), which :meth:`BashTool.close` ends.
Everything the command prints is written to a spill file as it arrives, while memory holds
only a bounded head and tail, so a command printing gigabytes costs the agent a few hundred
kilobytes. The model sees a sanitized, capped excerpt and a one-line footer with the exit
code and duration (above it, one line when the sandbox may have blocked something).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import os
import signal
import time
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tools import cwd_trap
from tools.base import (
    POLICIES,
    ApprovalDecision,
    ApprovalPolicy,
    Approver,
    OutputListener,
    SandboxMode,
    ToolInterrupted,
    ToolNotStarted,
    ToolOutput,
)
from tools.bash_call import bash_schema, parse_call
from tools.bwrap import Jail
from tools.capture import Capture
from tools.jail import Jails
from tools.outcome import outcome
from tools.process import (
    DRAIN_GRACE_S,
    REAP_WAIT_S,
    TERM_GRACE_S,
    LiveOutput,
    Running,
    command_environment,
    settle,
    spawn,
)
from tools.sandbox import SandboxChoice, secret_paths
from tools.snapshots.recording import Recorder
from tools.spill import SpillFolder

NOT_RUN = "Command not run"
"""How the output of a command the approval policy stopped begins."""
HIDDEN_ENV: tuple[str, ...] = ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "REEFLINE_API_KEY")
"""Variables commands never see: the model's API keys. A command's output goes to the log and
to the model, so ``env`` (or a prompt injection asking for it) would leak the key there."""


class BashTool:
    """The ``bash`` tool (see the module docstring and :meth:`schema`).

    Args:
        cwd: Starting working directory; also the fallback when the current one vanishes.
        spill_dir: Folder for full outputs (created 0700; files are 0600).
        policy: Approval policy; ``"always"`` from the approver switches it to ``"auto"``.
        approver: Asks the user about a command when the policy is ``"ask"``.
        max_output_chars: Cap on the output characters the model sees.
        default_timeout: Seconds a command may run when the model gives no timeout.
        max_timeout: Upper bound on any timeout the model asks for.
        hidden_env: More environment variables to keep from commands (besides
            :data:`HIDDEN_ENV`), e.g. the one ``--api-key-env`` names.
        sandbox: How commands are confined; the working directory ``cwd`` is what
            ``workspace-write`` lets them write. Default: never.
        snapshots: Records the working directory before and after each command that may
            write (:mod:`tools.snapshots`); None: no snapshots.
    """

    name: str = "bash"

    def __init__(
        self,
        *,
        cwd: str | Path,
        spill_dir: str | Path | SpillFolder,
        policy: ApprovalPolicy = "ask",
        approver: Approver | None = None,
        max_output_chars: int = 16_000,
        default_timeout: float = 120,
        max_timeout: float = 600,
        hidden_env: Iterable[str] = (),
        sandbox: SandboxChoice | None = None,
        snapshots: Recorder | None = None,
    ) -> None:
        if max_output_chars < 200:
            raise ValueError(f"max_output_chars must be at least 200, got {max_output_chars}")
        if not (default_timeout > 0 and max_timeout > 0):
            raise ValueError("timeouts must be positive")
        self._home = Path(cwd).resolve()
        self._cwd = self._home
        self._spill = spill_dir if isinstance(spill_dir, SpillFolder) else SpillFolder(spill_dir)
        # Where the shell records its directory: the one folder of reefline's a sandboxed
        # command may write, read back only through its descriptor (tools.spill).
        self._records = self._spill.child(f".cwd-{os.getpid()}-{id(self):x}")
        self.policy = policy
        self.approver = approver
        self.max_output_chars = max_output_chars
        self.default_timeout = default_timeout
        self.max_timeout = max_timeout
        self.hidden_env = frozenset((*HIDDEN_ENV, *hidden_env))
        self.sandbox = sandbox or SandboxChoice()
        self.snapshots = snapshots
        self._running = 0
        self._seq = itertools.count(1)
        self._jails = Jails(self._records)
        weakref.finalize(self, self._jails.close)  # a tool dropped unclosed ends its jail

    @property
    def cwd(self) -> Path:
        """Working directory of the next command; a ``cd`` in one call sticks for the next."""
        return self._cwd

    @property
    def policy(self) -> ApprovalPolicy:
        """Current approval policy (``ask``, ``auto`` or ``deny``)."""
        return self._policy

    @policy.setter
    def policy(self, value: ApprovalPolicy) -> None:
        if value not in POLICIES:
            raise ValueError(f"unknown approval policy {value!r}")
        self._policy = value

    @property
    def sandbox_mode(self) -> SandboxMode:
        """The sandbox the next command runs under (it may follow the approval policy)."""
        return self.sandbox.mode(self.policy)

    @property
    def running(self) -> bool:
        """True while a command's process group is alive (not while awaiting approval)."""
        return self._running > 0

    def schema(self) -> dict[str, Any]:
        """Return the OpenAI Chat Completions tool entry for ``bash``."""
        return bash_schema(
            self.name,
            max_output_chars=self.max_output_chars,
            default_timeout=self.default_timeout,
            max_timeout=self.max_timeout,
        )

    async def run(
        self, arguments: dict[str, Any], on_output: OutputListener | None = None
    ) -> ToolOutput:
        """Check the arguments, get approval, run the command and report its output.

        Returns an error output (``is_error=True``) when the arguments are invalid, the
        command is not approved, bash cannot start, or the command times out. On timeout the
        process group is SIGKILLed, the output so far is kept and ``exit_code`` is None. A
        command that exits non-zero is not an error; ``exit_code`` is its status, 128 + N
        when bash was killed by signal N.

        When bash exits while background jobs still hold its output pipe, they get
        ``DRAIN_GRACE_S`` to finish, then the group is SIGKILLed and the output says so;
        background jobs with redirected output keep running.

        ``on_output`` hears the output as it arrives (:class:`~tools.process.LiveOutput`).

        Raises:
            ToolInterrupted: when the calling task is cancelled while the command runs, after
                its process group got SIGTERM and, after a short grace, SIGKILL; it carries
                what the command printed until then (capped like any output, marked
                ``interrupted``).
            asyncio.CancelledError: when it is cancelled before the command started.
            Exception: whatever the approver raises (a front-end bug) propagates.
        """
        parsed = self._parse(arguments)
        if isinstance(parsed, ToolOutput):
            return parsed
        command, timeout = parsed
        asked = self.policy == "ask" and self.approver is not None
        # Decided before asking: the command runs as the person was told, even when their
        # "always" makes the next ones follow ``auto`` into the sandbox.
        mode = self.sandbox_mode
        refusal = await self._approve(command)
        if refusal is not None:
            return refusal
        before = None if self.snapshots is None else await self.snapshots.before(mode)
        try:
            output = await self._execute(command, timeout, mode, on_output)
        except ToolInterrupted as stop:
            if self.snapshots is not None:
                files = await self.snapshots.after_interrupted(before)
                stop.output = dataclasses.replace(stop.output, files=files)
            raise
        if self.snapshots is not None:
            output = dataclasses.replace(output, files=await self.snapshots.after(before))
        approval: ApprovalDecision | None = None
        if asked:
            approval = "always" if self.policy == "auto" else "once"
        return dataclasses.replace(output, cwd=str(self._cwd), approval=approval)

    def resume_in(self, cwd: str) -> str | None:
        """Go on in ``cwd`` (where the last logged call left off). When it no longer exists
        the session's own directory stays, and the sentence returned says so."""
        if os.path.isdir(cwd):
            self._cwd = Path(cwd)
            return None
        return (
            f"The working directory the last command left, {cwd}, no longer exists; "
            f"commands run in {self._home}."
        )

    def _parse(self, arguments: dict[str, Any]) -> tuple[str, float] | ToolOutput:
        parsed = parse_call(arguments, self.default_timeout, self.max_timeout)
        return _error(parsed) if isinstance(parsed, str) else parsed

    async def _approve(self, command: str) -> ToolOutput | None:
        if self.policy == "auto":
            return None
        hint = "The user can allow commands with `--approve auto` or `/approve auto`."
        if self.policy == "deny":
            return _error(f"{NOT_RUN}: the user's approval policy denies all commands. " + hint)
        if self.approver is None:
            return _error(
                f"{NOT_RUN}: commands need the user's approval, and no one can approve "
                "them in this session. " + hint
            )
        try:
            decision = await self.approver(command)
        except asyncio.CancelledError:
            raise ToolNotStarted() from None  # interrupted while asking: nothing ran
        if decision == "always":
            self.policy = "auto"
        elif decision != "once":
            return dataclasses.replace(
                _error("The user declined to run this command."), approval="deny"
            )
        return None

    async def _execute(
        self,
        command: str,
        timeout: float,
        mode: SandboxMode,
        on_output: OutputListener | None = None,
    ) -> ToolOutput:
        """One function because spawning, the watchdog's tracking, cancellation and reaping must
        sit in one try/finally: every exit path kills the group and records the working
        directory."""
        before: list[str] = []  # notes shown above the output
        after: list[str] = []  # and below it
        if not self._cwd.is_dir():
            if not self._home.is_dir():
                return _error(f"Could not run: the working directory {self._home} is gone.")
            before.append(
                f"[working directory {self._cwd} no longer exists; ran in {self._home} instead]"
            )
            self._cwd = self._home
        seq = next(self._seq)
        jail = self._jail(mode)
        # A jail's command records its directory in the one folder it may write; any other
        # beside it, in the output folder (which no sandboxed command can write).
        records, record = (
            (self._records, str(seq)) if jail else (self._spill, f"{self._records.path.name}-{seq}")
        )
        try:
            records.fd()
        except OSError as exc:
            return _error(f"Could not run: cannot create the output folder: {exc}")
        argv = ["bash", "-c", cwd_trap.wrap(command, records.path / record)]
        env = command_environment(self.hidden_env, self._cwd)
        capture = Capture(self.max_output_chars, self._spill, seq)
        loop = asyncio.get_running_loop()
        live = None if on_output is None else LiveOutput(on_output, loop, self.max_output_chars)
        started = time.monotonic()
        starting = asyncio.ensure_future(self._start(argv, env, jail, capture, live))
        cancelled = False
        try:
            # Shielded: a cancel that lands while the command is being started would
            # otherwise leave it (and its children, or a jail) running unseen.
            running = await asyncio.shield(starting)
        except OSError as exc:
            return _error(str(exc))
        except asyncio.CancelledError:
            try:
                running = await starting
            except Exception:
                capture.discard()
                raise asyncio.CancelledError() from None
            # It started: stopped and logged like a command interrupted while running.
            cancelled = True
        self._running += 1
        interrupted = timed_out = False
        try:
            if cancelled:
                raise asyncio.CancelledError
            timed_out = not await settle(running.exited, timeout=timeout)
            if timed_out:
                running.kill()
                await settle(running.exited, timeout=REAP_WAIT_S)
            duration = time.monotonic() - started
            if not await settle(running.drained, timeout=DRAIN_GRACE_S):
                # Background jobs still hold the output pipe: stop them rather than wait
                # for the timeout or leave them writing into a pipe nobody reads.
                running.kill()
                await settle(running.drained, timeout=DRAIN_GRACE_S)
                after.append(
                    "[background processes kept the output open after the command finished "
                    "and were killed; redirect their output (`cmd > log 2>&1 &`) to keep them "
                    "running]"
                )
        except asyncio.CancelledError:
            try:
                running.signal(signal.SIGTERM)
                await settle(running.exited, running.drained, timeout=TERM_GRACE_S)
            finally:
                running.kill()
            await settle(running.exited, timeout=REAP_WAIT_S)
            duration = time.monotonic() - started
            interrupted = True  # raised below, once the group is reaped and cwd recorded
        finally:
            if live is not None:
                live.flush()
            running.close()
            self._running -= 1
            self._cwd = cwd_trap.recorded(records, record) or self._cwd
        returncode = None if interrupted else running.returncode
        ran_into = timeout if timed_out else None
        output = outcome(capture, before, after, returncode, duration, ran_into, running.lost, jail)
        if interrupted:
            raise ToolInterrupted(dataclasses.replace(output, cwd=str(self._cwd)))
        return output

    async def _start(
        self,
        argv: list[str],
        env: dict[str, str],
        jail: Jail | None,
        capture: Capture,
        live: LiveOutput | None,
    ) -> Running:
        """Start ``argv``, unconfined or in ``jail``'s shape.

        Raises:
            OSError: it could not be started; the message is what to tell the model.
        """
        if jail is not None:
            environment = Jail.environment(env)
            try:
                return await self._jails.run(
                    jail, argv, cwd=self._cwd, env=environment, capture=capture, live=live
                )
            except OSError as exc:
                raise OSError(f"Could not run: cannot start the sandbox: {exc}") from exc
        try:
            return await spawn(argv, cwd=self._cwd, env=env, capture=capture, live=live)
        except OSError as exc:
            raise OSError(f"Could not start {argv[0]}: {exc}") from exc

    def close(self) -> bool:
        """End the sandbox kept for the next commands, and whatever still runs in it (a
        server started in the background), returning once all of it is gone; whether one
        was up. The tool stays usable: a later sandboxed command starts a new one. The
        snapshots' watch on the tree closes too."""
        ended = self._jails.close()
        if self.snapshots is not None:
            self.snapshots.close()
        return ended

    def _jail(self, mode: SandboxMode) -> Jail | None:
        """The jail of a command in ``mode`` (None: it runs unconfined). The secrets are
        looked up for each command: a ``~/.aws`` made during the session changes the shape,
        and the next jail hides it too."""
        if mode == "off":
            return None
        bwrap = self.sandbox.availability.bwrap
        assert bwrap is not None, "a confining mode without a sandbox (SandboxChoice refuses it)"
        secrets = secret_paths(self.sandbox.hidden)
        return Jail(
            bwrap,
            mode,
            self.sandbox.network,
            self._home,
            self._spill.path,
            self._records.path,
            secrets,
        )


def _error(message: str) -> ToolOutput:
    return ToolOutput(content=message, is_error=True)
