"""What a compaction will cost and save, said before it runs, through the real process:
``reefline compact --dry-run``, ``--plain``'s ``/compact --dry-run``, its gauge line and
``/context`` while compacting is near, and ``-p``'s "compacting soon" line on stderr; the
money only where the model's price is known (a ``[prices."m"]`` entry in the config)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.e2e.conftest import REEFLINE, Run
from tests.e2e.test_recall_undo import flags, two_turns_of_history
from tests.openai_server import OpenAIServer

PRICES = '[prices."m"]\ninput = 100.0\ncached_input = 10.0\noutput = 400.0\n'
"""Dollars per million tokens, large enough that every figure is cents or more."""
MONEY = re.compile(r" · ~\$[\d.,]+ est\.")


def cost_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("Cost: ", "Saves: "))]


def plain(server: OpenAIServer, env: dict[str, str], cwd: Path, stdin: str, *extra: str) -> str:
    done = subprocess.run(
        [REEFLINE, "--plain", *flags(server)[:4], *extra],
        input=stdin,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def test_the_dry_run_prices_the_compaction_alike_in_the_cli_and_plain_and_in_money_with_a_price(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    openai_server.summarize = True
    two_turns_of_history(run_cli, openai_server)
    asked = len(openai_server.requests)
    cli = run_cli("compact", "--dry-run", *flags(openai_server)[:4])
    assert cli.returncode == 0, cli.stderr
    lines = cost_lines(cli.stdout)
    assert [line.split(":")[0] for line in lines] == ["Cost", "Saves"], cli.stdout
    cost, saves = lines
    assert re.fullmatch(
        r"Cost: summary call ~[\d.]+k? in \(~[\d.]+k? cached\), ~\d+ out; then ~\d+ re-read "
        # reefline's own system prompt and tools are shorter than a provider caches alone
        r"uncached \(the header, too short to cache alone, the checkpoint and the kept tail\)\.",
        cost,
    ), cost
    assert re.fullmatch(
        r"Saves: ~[\d.]+k? tokens re-read per step, ~[\d.]+k? over the next 10 steps\.", saves
    ), saves
    # The same figures in the plain REPL's /compact --dry-run.
    repl = plain(openai_server, cli_env, workdir, "/compact --dry-run\n", "--continue")
    assert cost_lines(repl) == lines, repl
    # A price for the model: the same tokens, and what they cost in dollars.
    Path(cli_env["REEFLINE_CONFIG"]).write_text(PRICES)
    priced = run_cli("compact", "--dry-run", *flags(openai_server)[:4])
    priced_lines = cost_lines(priced.stdout)
    assert all(MONEY.search(line) for line in priced_lines), priced.stdout
    assert [MONEY.sub("", line).rstrip(".") for line in priced_lines] == [
        line.rstrip(".") for line in lines
    ]
    assert len(openai_server.requests) == asked  # nothing was sent to the model


def test_a_cold_cache_makes_the_rewrite_free_and_the_summary_call_uncached(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    """The provider's cache kept for a millisecond: by the dry run it has expired."""
    openai_server.summarize = True
    two_turns_of_history(run_cli, openai_server)
    Path(cli_env["REEFLINE_CONFIG"]).write_text("cache_ttl_s = 0.001\n")
    cold = run_cli("compact", "--dry-run", *flags(openai_server)[:4])
    [cost, _] = cost_lines(cold.stdout)
    assert "(the cache is cold: none cached)" in cost, cost
    assert "re-read at no extra cost (a cold cache reads all anew)" in cost, cost


def test_headless_says_what_the_coming_compaction_costs_and_saves(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str]
) -> None:
    def soon_lines() -> list[str]:
        openai_server.agent_commands = ["seq 1 400"] * 14
        done = run_cli(
            "-p",
            "count things",
            *flags(openai_server)[:4],
            "--context-window",
            "16000",
            "--approve",
            "auto",
        )
        assert done.returncode == 0, done.stderr
        lines = [s for s in done.stderr.splitlines() if "reefline: compacting soon" in s]
        assert lines, done.stderr
        return lines

    openai_server.summarize = True
    pattern = (
        r"reefline: compacting soon \(context ~[\d.]+k, the automatic mark at ~[\d.]+k\): it "
        r"costs summary call ~[\d.]+k in \(~[\d.]+k cached\), ~\d+ out; then ~[\d.]+k? re-read "
        r"uncached \((the header, too short to cache alone, )?the checkpoint and the kept tail\)"
        r"{money}; saves ~[\d.]+k tokens re-read "
        r"per step, ~[\d.]+k over the \d+ steps until the next automatic compaction{money}"
    )
    for line in soon_lines():
        assert re.fullmatch(pattern.format(money=""), line), line
    Path(cli_env["REEFLINE_CONFIG"]).write_text(PRICES)
    for line in soon_lines():
        assert re.fullmatch(pattern.format(money=MONEY.pattern), line), line


def test_plain_says_the_cost_under_its_gauge_line_as_context_says_it(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """Each gauge line that says compacting is near is followed by what it costs, and
    ``/context`` right after says the same."""
    openai_server.summarize = True
    Path(cli_env["REEFLINE_CONFIG"]).write_text(PRICES)
    stdin = "".join(f"part {n}: " + "word " * 700 + "\n/context\n" for n in range(13))
    out = plain(openai_server, cli_env, workdir, stdin, "--context-window", "12000")
    lines = out.splitlines()
    told = [i for i, line in enumerate(lines) if line.startswith("compacting soon: costs ")]
    assert told, out
    for i in told:
        assert "compacting soon" in lines[i - 1] and lines[i - 1].startswith("ctx ["), out
        assert MONEY.search(lines[i]), lines[i]
        row = next(line for line in lines[i + 1 :] if line.startswith("  compacting soon: "))
        assert row.strip() == lines[i], (row, lines[i])
