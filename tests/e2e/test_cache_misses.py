"""Cache misses, shown: the real CLI (``-p``, ``--plain``, ``reefline sessions``) against the
loopback server with a prefix cache (it reports, as cached, the leading messages an earlier
request sent) that is told to forget a prefix (a response's ``cached_tokens``).

A request whose prefix the previous request sent within the TTL but that the provider
reports mostly uncached is warned about once; a compaction's rewrite, a server with no cache
figure and a pause past the TTL are not."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agent.formatting import fmt_duration, fmt_tokens
from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.e2e.test_sessions_usage import usage_line
from tests.openai_server import OpenAIServer

LONG = "please read this: " + "lorem ipsum dolor " * 300
"""A first prompt long enough (about 1,500 tokens as the server counts) to be cached."""
MODEL = ("--model", "gpt-4.1", "--context-window", "64000")
WARNING = "the provider served "


def replies(log: Path) -> list[dict]:
    return [e["data"] for e in log_events(log) if e["type"] == "assistant/message"]


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if WARNING in line]


def test_p_warns_once_of_a_forgotten_prefix_and_sessions_counts_it(
    run_cli: Run, cli_env: dict[str, str], openai_server: OpenAIServer
) -> None:
    openai_server.prefix_cache = True
    url = ("--base-url", openai_server.base_url)
    first = run_cli("-p", LONG, *url, *MODEL)
    assert first.returncode == 0 and not warnings(first.stderr), first.stderr
    openai_server.push({"text": "forgot", "cached_tokens": 0})
    forgot = run_cli("-p", "and now?", *url, *MODEL, "--continue")
    assert forgot.returncode == 0, forgot.stderr
    hit = run_cli("-p", "and then?", *url, *MODEL, "--continue")
    assert hit.returncode == 0 and not warnings(hit.stderr), hit.stderr

    [log] = session_files(cli_env)
    one, two, three = replies(log)
    # What the second request expected cached: the whole first request, sent moments ago.
    expected = two["cache_expected"]
    assert expected["prefix_tokens"] == one["usage"]["prompt_tokens"] > 1024
    assert two["usage"]["cached_tokens"] == 0
    ago = fmt_duration(expected["since_s"])
    billed = fmt_tokens(expected["prefix_tokens"])
    line = f"reefline: the provider served 0% of a prefix it had {ago} ago: {billed} tokens billed in full"
    assert warnings(forgot.stderr) == [line]
    # The third request's prefix (the second) was served: a hit, no warning.
    assert three["usage"]["cached_tokens"] >= three["cache_expected"]["prefix_tokens"] // 2

    listing = run_cli("sessions")
    assert listing.returncode == 0, listing.stderr
    said = usage_line(listing.stdout, log.stem)
    # gpt-4.1: the miss billed its prefix at $2.00 rather than $0.50 per million.
    assert said.endswith(f" · 1 cache miss: {billed} tokens billed in full, ~<$0.01 est."), said


def test_a_compaction_is_not_warned_about(
    run_cli: Run, cli_env: dict[str, str], openai_server: OpenAIServer
) -> None:
    """After ``reefline compact`` the history is new from its first changed message: the
    provider serves only what comes before it, and that is no miss."""
    openai_server.prefix_cache = True
    openai_server.summarize = True
    url = ("--base-url", openai_server.base_url)
    assert run_cli("-p", LONG, *url, *MODEL).returncode == 0
    compacted = run_cli("compact", *url, *MODEL)
    assert compacted.returncode == 0 and compacted.stdout.startswith("Compacted"), compacted
    after = run_cli("-p", "go on", *url, *MODEL, "--continue")
    assert after.returncode == 0, after.stderr
    assert not warnings(after.stderr), after.stderr

    [log] = session_files(cli_env)
    one, two = replies(log)
    # The server did serve less than half of the first request: a miss had the whole of it
    # been expected. What was expected is only the prefix the rewrite left as it was.
    assert two["usage"]["cached_tokens"] < one["usage"]["prompt_tokens"] // 2
    assert two["cache_expected"]["prefix_tokens"] < 1024
    said = usage_line(run_cli("sessions").stdout, log.stem)
    assert "cache miss" not in said, said


def test_no_cache_figure_no_warning_and_not_reported(
    run_cli: Run, cli_env: dict[str, str], openai_server: OpenAIServer
) -> None:
    url = ("--base-url", openai_server.base_url)
    assert run_cli("-p", LONG, *url, *MODEL).returncode == 0
    again = run_cli("-p", "and now?", *url, *MODEL, "--continue")
    assert again.returncode == 0 and not warnings(again.stderr), again.stderr
    [log] = session_files(cli_env)
    said = usage_line(run_cli("sessions").stdout, log.stem)
    assert " · cache not reported" in said and "miss" not in said, said


def test_a_prefix_past_the_ttl_is_expected_cold(
    run_cli: Run, cli_env: dict[str, str], openai_server: OpenAIServer
) -> None:
    """``cache_ttl_s`` shorter than the pause between two runs: the second request expects
    nothing cached, so its miss is none."""
    Path(cli_env["REEFLINE_CONFIG"]).write_text("cache_ttl_s = 0.001\n")
    openai_server.prefix_cache = True
    url = ("--base-url", openai_server.base_url)
    assert run_cli("-p", LONG, *url, *MODEL).returncode == 0
    openai_server.push({"text": "forgot", "cached_tokens": 0})
    cold = run_cli("-p", "and now?", *url, *MODEL, "--continue")
    assert cold.returncode == 0 and not warnings(cold.stderr), cold.stderr
    [log] = session_files(cli_env)
    assert "cache_expected" not in replies(log)[1]


def test_plain_warns_shows_the_last_share_and_context_counts_the_miss(
    cli_env: dict[str, str], openai_server: OpenAIServer, workdir: Path
) -> None:
    openai_server.prefix_cache = True
    openai_server.push({"text": "one"}, {"text": "two"}, {"text": "three", "cached_tokens": 7})
    done = subprocess.run(
        [REEFLINE, "--plain", "--base-url", openai_server.base_url, *MODEL],
        input=f"{LONG}\nsecond\nthird\n/context\n/quit\n",
        cwd=workdir, env=cli_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [log] = session_files(cli_env)
    one, two, three = replies(log)
    out = done.stdout.splitlines()
    gauges = [line for line in out if line.startswith("ctx [")]
    # Each turn's gauge line says the newest reply's share: none cached at first, the
    # repeated prefix next, then the 7 tokens of a forgotten one.
    shares = []
    for gauge, reply in zip(gauges, (one, two, three), strict=False):
        usage = reply["usage"]
        shares.append(100 * usage["cached_tokens"] / usage["prompt_tokens"])
        assert f" · cache {shares[-1]:.0f}% · " in gauge, gauge
    assert len(gauges) >= 3 and shares[0] == 0 and shares[1] > 90 and shares[2] < 1, shares
    prefix = three["cache_expected"]["prefix_tokens"]
    said = [line for line in out if WARNING in line]
    assert len(said) == 1 and said[0].startswith(f"! {WARNING}0% of a prefix it had "), said
    assert said[0].endswith(f": {fmt_tokens(prefix - 7)} tokens billed in full")
    assert out.index(said[0]) > out.index("three")  # said after the reply it is about
    billed = f"{prefix - 7:,} tokens billed in full that the cache should have served"
    assert f"    misses   1: {billed} (~<$0.01 est.)" in out, "\n".join(out)
