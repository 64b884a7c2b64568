"""The composition root: settings → model, session, meter, tools, agent (and later services).

Every front end (headless, plain REPL, Textual app) builds its runtime here, so they share
one core and differ only in how they show it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from pathlib import Path

from agent.carryover import CarriedOver, carried_over
from agent.hooks import Prepare
from agent.llm.discovery import WindowAsker
from agent.llm.windows import WindowBook
from agent.log.events import PolicySource, ProviderData
from agent.log.names import BadName, checked_name, rename
from agent.log.registry import EventRegistry
from agent.log.session import Session
from agent.log.store import default_home, new_session_id
from agent.loop import Agent
from agent.loop_settings import LoopSettings
from agent.mcp_wiring import attach, mcp_hub
from agent.meter import TokenMeter
from agent.provider import (
    PROVIDER_SETTINGS,
    Provider,
    provider_cache,
    resolve_provider,
    session_settings,
    where,
)
from agent.settings import Settings, SettingsError, config_dir, config_path, load_config_file
from agent.tokens import Estimator
from compact import backends
from compact.commands.compact import CompactCommand
from compact.contract.registry import build_registry
from compact.contract.service import BackendParts
from compact.parts.recall import moved_note, rebuild_missing
from tools.base import ApprovalPolicy, Approver
from tools.bash import BashTool
from tools.edit.tool import EditTool
from tools.sandbox import (
    Availability,
    SandboxChoice,
    SandboxUnavailable,
    choose,
    detect_soon,
    unavailable_notice,
)
from tools.snapshots.recording import Recorder
from tui.demo import ScriptedModel
from tui.runtime.chat_model import build_model
from tui.runtime.opening import NOTHING_TO_CONTINUE, open_session
from tui.runtime.restored import Resumed, restored_line
from tui.runtime.runtime import Runtime, StartupError
from tui.runtime.snapshots_soon import session_snapshots


def _compaction_source() -> str:
    """Where the compaction settings came from, for an error message (variable names in any
    case, as the settings read them)."""
    if any(name.upper().startswith("REEFLINE_COMPACTION__") for name in os.environ):
        return "REEFLINE_COMPACTION__* environment"
    path = config_path()
    try:
        in_file = "compaction" in load_config_file(path)
    except SettingsError:
        in_file = False
    return str(path) if in_file else "settings"


def _asking_hook(asker: WindowAsker, agent: Agent) -> Prepare:
    """Before each step's envelope is built (so compaction sees the answer): ask the server
    about the model in use, once per model; say so when it stays unknown."""

    async def ask() -> None:
        if await asker.ensure() or not asker.enabled:
            return
        if asker.book.model not in asker.book.asked:
            return  # the server is not up yet: the request says why, and the next step asks
        if asker.book.current.tokens is None and asker.book.model not in asker.told:
            asker.told.add(asker.book.model)
            agent.notify(
                f"The server did not say the context window of {asker.book.model} and it is "
                "not in the table: the gauge shows tokens only and automatic compaction is "
                "off. Set it with --context-window N."
            )

    return ask


def choose_sandbox(
    settings: Settings, home: Path, availability: Availability | None = None
) -> SandboxChoice:
    """The sandbox the settings ask for; besides the usual secrets it hides reefline's own
    home (other sessions, the prompt history; the spill folder stays reachable) and config.

    Raises:
        SettingsError: a confining mode was asked for where no sandbox can be had.
    """
    try:
        return choose(
            settings.sandbox,
            network=settings.sandbox_network,
            hidden=(home, config_dir(), config_path()),
            availability=availability,
        )
    except SandboxUnavailable as exc:
        raise SettingsError(str(exc)) from None


def session_provider(
    settings: Settings,
    resumed: Session | None,
    recorded: ProviderData | None,
    chosen: Collection[str],
) -> Provider:
    """The provider a session's requests go to (:func:`agent.provider.session_settings`).
    A change is logged, and so is the provider of a log older than the record, so the next
    resume finds it (the resume's one line says so: :mod:`tui.runtime.restored`)."""
    try:
        provider = resolve_provider(session_settings(settings, recorded, chosen))
    except SettingsError as exc:
        if resumed is None or recorded is None or PROVIDER_SETTINGS.intersection(chosen):
            raise
        raise SettingsError(
            f"session {resumed.id} was held with {where(recorded)}, and it cannot go on there: "
            f"{exc}. Fix that, or continue it elsewhere with --base-url / --model / "
            "--api-key-env / --demo"
        ) from None
    record = provider.record()
    if resumed is not None and record != recorded:
        resumed.append("session/provider", record)
    return provider


def approval_policy(
    settings: Settings,
    carried: CarriedOver,
    chosen: Collection[str],
    default: ApprovalPolicy,
) -> tuple[ApprovalPolicy, PolicySource]:
    """The policy a run begins with and what gave it: a flag or a setting, else the one
    chosen in the session, else the front end's default."""
    if settings.approve:
        return settings.approve, "flag" if "approve" in chosen else "setting"
    if carried.policy:
        return carried.policy, "chosen"
    return default, "default"


def build_runtime(
    settings: Settings,
    *,
    resume: str | None = None,
    continue_last: bool = False,
    chosen: Collection[str] = (),
    approver: Approver | None = None,
    default_approve: ApprovalPolicy = "ask",
    cwd: Path | None = None,
    scripted_delay_s: float = 0.0,
    begun: Recorder | None = None,
    name: str | None = None,
    runs_turns: bool = True,
) -> Runtime:
    """Build everything a front end needs. Raises StartupError / SettingsError.

    ``name``: the session's name (``--name``), given to a new or a resumed one.

    ``runs_turns``: False for a session tool that only compacts (``reefline compact``): its
    approval policy, which runs nothing, is not logged as the one a run began with.

    ``begun``: snapshots already begun (:func:`tui.runtime.snapshots_soon.begin_snapshots`), taken
    over when they record the session's folder, closed otherwise.

    ``chosen``: the settings the command line gave (flag names as settings keys); a resumed
    session goes on with its recorded provider unless one of them says otherwise.

    It is the composition root: the order of the statements is the order of the dependencies
    (provider, window, session, meter, tools, agent, compaction), which one function shows best.
    """
    sandbox_found = detect_soon()  # a trial run of bubblewrap, while the rest is built
    home = settings.home.expanduser() if settings.home else default_home()
    registry = build_registry()
    if name is not None:
        try:
            checked_name(name)
        except BadName as exc:
            raise StartupError(f"--name: {exc}") from None
    folder = str((cwd or Path.cwd()).resolve())
    resumed = open_session(
        home, registry, resume=resume, continue_last=continue_last, folder=folder
    )
    try:
        runtime = _build(
            settings,
            home,
            registry,
            resumed,
            sandbox_found,
            chosen=chosen,
            approver=approver,
            default_approve=default_approve,
            cwd=cwd,
            scripted_delay_s=scripted_delay_s,
            begun=begun,
            runs_turns=runs_turns,
        )
    except BaseException:
        if begun is not None:
            begun.close()
        if resumed is not None:
            resumed.close()
        raise
    if continue_last and resumed is None:
        runtime.notices.insert(0, NOTHING_TO_CONTINUE)
    if name is not None:
        try:
            rename(runtime.session, name)
        except BadName as exc:
            runtime.close()
            raise StartupError(f"--name: {exc}") from None
    return runtime


def _build(
    settings: Settings,
    home: Path,
    registry: EventRegistry,
    resumed: Session | None,
    sandbox_found: Callable[[], Availability],
    *,
    chosen: Collection[str],
    approver: Approver | None,
    default_approve: ApprovalPolicy,
    cwd: Path | None,
    scripted_delay_s: float,
    begun: Recorder | None,
    runs_turns: bool,
) -> Runtime:
    """:func:`build_runtime` once the session to resume (if any) is open."""
    carried = carried_over(resumed.events) if resumed is not None else CarriedOver()
    provider = session_provider(settings, resumed, carried.provider, chosen)
    policy, given_by = approval_policy(settings, carried, chosen, default_approve)
    notices = [provider.notice] if provider.notice else []
    if resumed is not None:
        now = Resumed(provider.record(), policy, given_by, chosen)
        notices.insert(0, restored_line(resumed.id, resumed.events, carried, now))
    estimator = Estimator(provider.model)
    if estimator.known_notice:
        notices.append(estimator.known_notice)
    session_id = resumed.id if resumed is not None else new_session_id()  # prompt_cache_key
    model = build_model(provider, settings, estimator, session_id)
    if isinstance(model, ScriptedModel):
        model.delay_s = scripted_delay_s
    windows = WindowBook(
        provider.model,
        configured=settings.context_window,
        lookup=model.context_window,
        lookup_source="demo" if provider.kind == "scripted" else "table",
    )
    asker = WindowAsker(
        windows,
        provider.base_url,
        provider.api_key,
        # The hosted APIs' windows are in the table; a window the user set is not asked.
        enabled=provider.name in ("local", "openai-compatible") and not settings.context_window,
    )
    window = windows.current.tokens
    try:
        compaction_settings = backends.load_settings(settings.compaction, window)
    except ValueError as exc:
        where = _compaction_source()
        lines = (f"{where}: {line}" for line in str(exc).splitlines())
        raise SettingsError("\n".join(lines)) from None
    if window is None and not asker.enabled:
        notices.append(
            f"The context window of {provider.model} is unknown: the gauge shows tokens only "
            "and automatic compaction is off. Set it with --context-window N."
        )
    sandbox = choose_sandbox(settings, home, sandbox_found())
    if (unsandboxed := unavailable_notice(sandbox)) is not None:
        notices.append(unsandboxed)
    if resumed is None:
        where_from = str((cwd or Path.cwd()).resolve())
        record = provider.record().model_dump()
        session = Session.create(
            home, cwd=where_from, registry=registry, provider=record, session_id=session_id
        )
    else:
        session = resumed
        # The recall transcripts its checkpoints name, and where they are if not there.
        if (note := moved_note(session, rebuild_missing(session))) is not None:
            session.append("context/message", {"content": note, "source": "recall"})
    notices += session.report.notices()
    meter = TokenMeter(session, estimator, windows)
    work_dir = session.cwd if os.path.isdir(session.cwd) else str(cwd or Path.cwd())
    bash = BashTool(
        cwd=work_dir,
        spill_dir=session.spill,
        policy=policy,
        approver=approver,
        hidden_env=[settings.api_key_env] if settings.api_key_env else (),
        sandbox=sandbox,
        snapshots=session_snapshots(begun, home, work_dir, notices),
    )
    if carried.cwd is not None and (moved := bash.resume_in(carried.cwd)) is not None:
        notices.append(moved)
    if bash.snapshots is not None and bash.policy != "deny":
        # From the start, in the background: a large tree's first snapshot takes seconds,
        # which the first command then waits for only in part (README: Snapshots).
        bash.snapshots.start()
    if runs_turns:
        session.append("session/approval", {"policy": policy, "given_by": given_by})
    cache = provider_cache(provider, settings)
    agent = Agent(
        session,
        model,
        provider.model,
        [bash, EditTool(workspace=work_dir, gate=bash)],
        settings=LoopSettings(
            max_steps=settings.max_steps,
            max_output_tokens=settings.max_output_tokens,
            loop_guard=settings.loop_guard,
            max_overflow_retries=compaction_settings.max_overflow_retries,
            cache_ttl_s=cache.ttl_s,
        ),
        context_window=windows,
        estimate_tokens=meter.estimate_messages,
        bound_tokens=estimator.messages_at_most,
    )
    agent.hooks.prepare.append(_asking_hook(asker, agent))
    mcp = mcp_hub(settings, bash, session.spill, estimator)
    attach(mcp, agent)
    service = backends.build(
        BackendParts(session, meter, model, compaction_settings, cache_plan=cache)
    )
    service.install(agent.hooks)
    return Runtime(
        settings=settings,
        provider=provider,
        home=home,
        session=session,
        model=model,
        estimator=estimator,
        meter=meter,
        bash=bash,
        agent=agent,
        mcp=mcp,
        compaction=service,
        compact_command=CompactCommand(service, session),
        windows=windows,
        window_asker=asker,
        notices=notices,
        default_approve=default_approve,
        scripted_delay_s=scripted_delay_s,
    )
