"""A sandboxed command against reefline's own folders: it plants symlinks at every name
reefline uses in every folder the sandbox lets it write, swaps the folders themselves for
links, and renames the folders on the way to reefline's home; reefline, which runs outside
the sandbox, must never write, truncate or delete anything through them. Each attack runs
through the real CLI (``--approve auto``: sandboxed in ``workspace-write``) against the
loopback server, with a window small enough that outputs are compacted mid-turn (which
writes copies of them to the spill folder, under the names the links are planted at)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer
from tests.reliability.conftest import REEFLINE, log_events, only_session

KEY = "ssh-ed25519 AAAAC3Nza-attacker-key attacker@evil\n"
NAMES = 200
"""Seqs and call numbers planted for: more than the session below ever reaches."""
BULK = "seq 100000 101300"
"""A command whose output (about 2.5k tokens) fits the bash cap (so the pruner spills it
itself) and fills a 12k window in a few steps."""


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    """A $HOME whose ~/.ssh (hidden from sandboxed commands) holds one key."""
    home = tmp_path / "user"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAA-the-user's-own-key\n")
    return home


def run_attack(
    env: dict[str, str], cwd: Path, server: OpenAIServer, plant: str
) -> subprocess.CompletedProcess[str]:
    """One turn: ``plant``, then bulky outputs (each printing the key) until a compaction
    has read them and so written spill files of its own."""
    server.summarize = True
    server.agent_commands = [plant] + [f"echo {shlex.quote(KEY.strip())}; {BULK}"] * 6
    args = ["-p", "look around", "--base-url", server.base_url, "--model", "m"]
    args += ["--approve", "auto", "--context-window", "12000"]
    # A tail of two steps, and room for the summary to read all of it: each compaction masks
    # the older one, so it writes copies of outputs (at the names the links are planted at).
    policy = '{"cache_price": 0, "threshold_ratio": 0.6, "retain_tokens": 3000}'
    env = {**env, "REEFLINE_COMPACTION": policy}
    return subprocess.run(
        [REEFLINE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_links_planted_in_every_writable_folder_are_never_followed(
    bwrap: str,
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    workdir: Path,
    tmp_path: Path,
    user_home: Path,
) -> None:
    target = user_home / ".ssh" / "authorized_keys"
    before = target.read_bytes()
    victim = tmp_path / "victim"  # a folder outside the sandbox's reach
    victim.mkdir()
    for n in range(1, NAMES):
        (victim / str(n)).write_text("keep me\n")
    spills = Path(cli_env["REEFLINE_HOME"]) / "sessions"
    t, v = shlex.quote(str(target)), shlex.quote(str(victim))
    plant = f"""
        for spill in {shlex.quote(str(spills))}/*.spill; do
          for n in $(seq 0 {NAMES}); do
            ln -s {t} "$spill/result-$n.out"
            ln -s {t} "$spill/$(date +%Y%m%d-%H%M%S)-$n.out"
            for rec in "$spill"/.cwd-*; do ln -s {t} "$rec/$n" || ln -s {t} "$rec-$n"; done
          done
          for rec in "$spill"/.cwd-*; do mv "$rec" /tmp/moved && ln -s {v} "$rec"; done
          ls -la "$spill" | head -5
        done 2>&1 | sort | uniq -c | sort -rn | head -8
        echo planted
    """
    env = {**cli_env, "HOME": str(user_home)}
    out = run_attack(env, workdir, openai_server, plant)
    assert out.returncode == 0, out.stderr
    # Nothing reached the key file, nothing outside was deleted.
    assert target.read_bytes() == before
    assert sorted(p.name for p in victim.iterdir()) == sorted(str(n) for n in range(1, NAMES))
    events = log_events(only_session(cli_env))
    results = [e["data"] for e in events if e["type"] == "tool/result"]
    assert results[0]["sandbox"] == "workspace-write" and "planted" in results[0]["content"]
    assert "Read-only file system" in results[0]["content"]  # the output folder is not theirs
    # The compaction wrote copies of outputs for what it read or masked (the names the
    # links were planted at): each is the output itself, in a regular file.
    spilled = sorted(spills.glob("*.spill/result-*.out"))
    assert len(spilled) >= 2, [r["content"][:80] for r in results]
    originals = {r["content"] for r in results}
    for path in spilled:
        assert not path.is_symlink() and path.read_text() in originals


def test_folders_on_the_way_to_reefline_home_cannot_be_swapped(
    bwrap: str,
    openai_server: OpenAIServer,
    cli_env: dict[str, str],
    tmp_path: Path,
    user_home: Path,
) -> None:
    """Started in $HOME, whose ~/.local/share holds reefline's home: a command renames
    ~/.local away and builds a tree of its own (with links where the spill files go) in its
    place. The folders on the way are mount points in the sandbox: the rename fails, and
    reefline's files stay where they were."""
    home = user_home / ".local" / "share" / "reefline"
    env = {**cli_env, "HOME": str(user_home), "REEFLINE_HOME": str(home)}
    target = user_home / ".ssh" / "authorized_keys"
    before = target.read_bytes()
    t = shlex.quote(str(target))
    plant = f"""
        id=$(basename "$(ls -d ~/.local/share/reefline/sessions/*.spill)" .spill)
        mv ~/.local ~/.local-gone || mv ~/.local/share ~/.local/share-gone || echo kept
        fake=~/.local/share/reefline/sessions/$id.spill
        mkdir -p "$fake" && for n in $(seq 0 {NAMES}); do ln -s {t} "$fake/result-$n.out"; done
        echo planted
    """
    out = run_attack(env, user_home, openai_server, plant)
    assert out.returncode == 0, out.stderr
    assert not (user_home / ".local-gone").exists()
    assert not (user_home / ".local" / "share-gone").exists()
    results = [e["data"] for e in log_events(only_session(env)) if e["type"] == "tool/result"]
    assert "kept" in results[0]["content"]
    assert list((home / "sessions").glob("*.spill/result-*.out"))  # written where it was
    assert target.read_bytes() == before
