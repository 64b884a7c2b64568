"""The sandbox: which mode a command runs under, whether one can be had, and what it hides.

Three modes (:data:`~tools.base.SANDBOX_MODES`): ``off`` runs a command as the user, with
their files and network; ``read-only`` shows it the whole filesystem read-only with a private
``/tmp``; ``workspace-write`` also lets it write the session's working directory and its
output folder. Both confining modes hide the user's secrets (:func:`secret_paths`) behind
empty mounts, give the command a PID namespace and ``/proc`` of its own, an allow-listed
environment and no network unless asked. Bubblewrap does the confining
(:mod:`tools.bwrap`); this module decides, and says what it decided in words a person and a
model can act on.

Unless the user chose a mode, it follows the approval policy: commands that run without a
person reading them first (``auto``) are confined when a sandbox is available; a person who
approves each command sees it run as they would run it.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from tools.base import ApprovalPolicy, SandboxMode

INSTALL = (
    "install bubblewrap (Debian/Ubuntu: `apt install bubblewrap`, Fedora: `dnf install bubblewrap`)"
)
REMEDY = INSTALL + ", or choose `--sandbox off`"
"""What to do when a sandbox was asked for and none can be had."""

TRIAL = (
    "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
    "--unshare-net", "--die-with-parent", "--cap-drop", "ALL",
)  # fmt: skip
"""The namespaces and mounts every sandboxed command needs, tried once with ``true``."""

HOME_SECRETS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store",
    ".config/gcloud", ".config/gh", ".config/hub", ".local/share/keyrings",
    ".netrc", ".git-credentials", ".pgpass", ".pypirc", ".npmrc", ".vault-token",
    ".cargo/credentials", ".cargo/credentials.toml", ".bash_history", ".zsh_history",
)  # fmt: skip
"""Paths under ``$HOME`` that hold credentials (shell histories hold the tokens typed in
``export``): hidden from sandboxed commands, even for reading, when they exist."""

SYSTEM_SECRETS = ("/run/docker.sock", "/var/run/docker.sock")
"""Sockets that hand out more than the user's own rights (the docker daemon's is root's)."""


@dataclass(frozen=True)
class Availability:
    """Whether commands can be sandboxed here: ``bwrap`` is the bubblewrap that works, or
    None and ``reason`` says why there is none."""

    bwrap: str | None = None
    reason: str = "no sandbox was looked for"

    @property
    def available(self) -> bool:
        return self.bwrap is not None


def detect() -> Availability:
    """Find a working bubblewrap: on Linux, ``bwrap`` on ``PATH`` that can run ``true``
    with :data:`TRIAL` (user namespaces allowed). The trial runs once per process for each
    ``bwrap`` found; it costs a few milliseconds."""
    if not sys.platform.startswith("linux"):
        return Availability(reason=f"sandboxing needs Linux (bubblewrap); this is {sys.platform}")
    found = shutil.which("bwrap")
    if found is None:
        return Availability(reason="bubblewrap is not installed (no `bwrap` on PATH)")
    return _trial(found)


def detect_soon() -> Callable[[], Availability]:
    """:func:`detect` started now in a thread, so its trial overlaps whatever start-up does
    next; the function returned waits for the answer."""
    found: list[Availability] = []
    thread = threading.Thread(target=lambda: found.append(detect()), daemon=True)
    thread.start()

    def answer() -> Availability:
        thread.join()
        return found[0] if found else detect()

    return answer


@functools.cache
def _trial(bwrap: str) -> Availability:
    try:
        done = subprocess.run(
            [bwrap, *TRIAL, "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Availability(reason=f"{bwrap} could not be run ({exc})")
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        why = said[0] if said else f"exit {done.returncode}"
        return Availability(
            reason=f"{bwrap} cannot set up a sandbox here ({why}); user namespaces may be "
            "disabled (sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces)"
        )
    return Availability(bwrap)


class SandboxUnavailable(ValueError):
    """A confining mode was asked for where no sandbox can be had; the message says why
    and what to do."""


WHAT_IT_ALLOWS: dict[SandboxMode, str] = {
    "off": "commands run as you, with your files and your network",
    "read-only": "the filesystem read-only, secrets hidden, a private /tmp writable",
    "workspace-write": (
        "the working directory, the session's output folder and a private /tmp writable, "
        "the rest read-only, secrets hidden"
    ),
}


@dataclass(frozen=True)
class SandboxChoice:
    """How the bash tool confines commands: the mode the user asked for (None: follow the
    approval policy, see the module docstring), network or not, what can be had, and what
    else to hide besides :data:`HOME_SECRETS` (reefline's own home and config).

    Raises:
        SandboxUnavailable: ``read-only`` or ``workspace-write`` requested where no sandbox
            can be had: a command must never run unconfined when confinement was asked for.
    """

    requested: SandboxMode | None = "off"
    network: bool = False
    availability: Availability = Availability()
    hidden: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if self.requested in ("read-only", "workspace-write") and not self.availability.available:
            raise SandboxUnavailable(
                f"the sandbox setting asks for `{self.requested}`, but no sandbox can be had "
                f"here: {self.availability.reason}. To go on, {REMEDY}."
            )

    def mode(self, policy: ApprovalPolicy) -> SandboxMode:
        """The mode the next command runs under when the approval policy is ``policy``."""
        if self.requested is not None:
            return self.requested
        return "workspace-write" if policy == "auto" and self.availability.available else "off"

    def describe(self, policy: ApprovalPolicy) -> str:
        """``sandboxed (workspace-write, no network)`` or ``unsandboxed``: for the
        approval question and the status of a command."""
        mode = self.mode(policy)
        if mode == "off":
            return "unsandboxed"
        return f"sandboxed ({mode}, {'network allowed' if self.network else 'no network'})"

    def summary(self, policy: ApprovalPolicy) -> str:
        """One line for ``/context``: the mode, what it allows, and why it is what it is."""
        mode = self.mode(policy)
        if not self.availability.available:
            return f"off: no sandbox here — {self.availability.reason}; to have one, {INSTALL}"
        said = f"{mode}: {WHAT_IT_ALLOWS[mode]}"
        if mode != "off":
            return said + ("; network allowed" if self.network else "; no network")
        if self.requested is None:
            said += (
                " (the default unless commands run without asking; --sandbox "
                "workspace-write confines them anyway)"
            )
        return said


def choose(
    requested: SandboxMode | None,
    *,
    network: bool = False,
    hidden: Iterable[Path] = (),
    availability: Availability | None = None,
) -> SandboxChoice:
    """The sandbox the user's settings ask for (``availability`` defaults to :func:`detect`).

    Raises:
        SandboxUnavailable: see :class:`SandboxChoice`.
    """
    found = detect() if availability is None else availability
    return SandboxChoice(requested, network, found, tuple(hidden))


def unavailable_notice(choice: SandboxChoice) -> str | None:
    """What to say once at start when no sandbox can be had (None: there is one, or the
    user chose ``off`` and knows)."""
    if choice.availability.available or choice.requested == "off":
        return None
    return (
        f"No sandbox: {choice.availability.reason}. Commands run as you, with your files and "
        f"your network. To confine them, {INSTALL}; `--sandbox off` silences this notice."
    )


def secret_paths(extra: Iterable[Path] = ()) -> tuple[Path, ...]:
    """The credentials to hide that exist now, resolved (a symlink's target is hidden):
    :data:`HOME_SECRETS` under ``$HOME``, the user's runtime folder (``$XDG_RUNTIME_DIR``:
    the ssh, gpg and keyring agents' sockets), :data:`SYSTEM_SECRETS`, and ``extra``."""
    home = Path(os.environ.get("HOME") or Path.home())
    candidates = [home / name for name in HOME_SECRETS]
    if runtime_dir := os.environ.get("XDG_RUNTIME_DIR"):
        candidates.append(Path(runtime_dir))
    candidates += [Path(p) for p in SYSTEM_SECRETS]
    candidates += extra
    found: dict[Path, None] = {}
    for path in candidates:
        if os.path.lexists(path):
            found[Path(os.path.realpath(path))] = None
    return tuple(found)


_READ_ONLY = re.compile(r"Read-only file system")
_NO_NETWORK = re.compile(
    r"Network is unreachable|Temporary failure in name resolution|Could not resolve host"
    r"|Name or service not known|No address associated with hostname|Connection refused"
    r"|getaddrinfo failed|Failed to establish a new connection"
)


def blocked_note(mode: SandboxMode, network: bool, workspace: Path, output: str) -> str | None:
    """One line telling the model that the sandbox may have caused a failure ``output``
    shows (a write it does not allow, a connection with no network); None when the output
    shows none. A heuristic on the words the system prints: it can name a failure the
    sandbox did not cause, hence "may"."""
    reasons = []
    if mode != "off" and _READ_ONLY.search(output):
        where = "a private /tmp" if mode == "read-only" else f"{workspace} and a private /tmp"
        reasons.append(f"only {where} can be written")
    if mode != "off" and not network and _NO_NETWORK.search(output):
        reasons.append("there is no network (the user can allow it with --sandbox-network)")
    if not reasons:
        return None
    return f"[sandbox {mode} may have blocked this: {'; '.join(reasons)}; adapt, or ask the user]"
