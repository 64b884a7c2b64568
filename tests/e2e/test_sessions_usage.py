"""``reefline sessions`` says what each session used and cost: the real CLI against the
loopback server (usage in OpenAI's and DeepSeek's shapes, summary calls included), then the
listing as a subprocess, with the config's ``prices``."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import Run, log_events, session_files
from tests.openai_server import OpenAIServer

REPLY = {
    "prompt_tokens": 1000,
    "completion_tokens": 50,
    "prompt_tokens_details": {"cached_tokens": 750},
}
SUMMARY = {"prompt_tokens": 3000, "completion_tokens": 100, "prompt_cache_hit_tokens": 2500,
           "prompt_cache_miss_tokens": 500}  # fmt: skip
WINDOW = ("--context-window", "4000")


def first_prompt(log: Path) -> str:
    return next(e["data"]["content"] for e in log_events(log) if e["type"] == "user/message")


def usage_line(listing: str, session_id: str) -> str:
    """The last indented line of a session's block, when it says what it used ("" else)."""
    lines = listing.splitlines()
    for n, line in enumerate(lines):
        if line.strip().startswith(session_id):
            block = []
            for after in lines[n + 1 :]:
                if not after.startswith("      "):
                    break
                block.append(after.strip())
            said = block[-1] if block else ""
            return said if said.startswith(("in ", "usage ")) else ""
    raise AssertionError(f"{session_id} not listed:\n{listing}")


def test_sessions_lists_input_cached_share_and_estimated_cost(
    run_cli: Run, cli_env: dict[str, str], openai_server: OpenAIServer
) -> None:
    url = ("--base-url", openai_server.base_url)
    for n in range(3):
        openai_server.push({"text": f"answer {n}", "words": 200, "usage": REPLY})
        out = run_cli("-p", f"question {n}", *url, "--model", "gpt-4.1", *WINDOW, "--continue")
        assert out.returncode == 0, out.stderr
    [log] = session_files(cli_env)
    # gpt-4.1 ($2.00 / $0.50 cached / $8.00 per million): 3 × (250 × 2 + 750 × 0.5 + 50 × 8)
    listing = run_cli("sessions")
    assert listing.returncode == 0, listing.stderr
    assert usage_line(listing.stdout, log.stem) == "in 3k · 75% cached · ~<$0.01 est."

    # A compaction's summary call counts too (its usage is on its compact/progress record).
    summary = "## Primary request and intent\n- questions 0 to 2, answered"
    openai_server.push({"text": summary, "usage": SUMMARY})
    out = run_cli("compact", *url, "--model", "gpt-4.1", *WINDOW)
    assert out.returncode == 0 and out.stdout.startswith("Compacted"), (out.stdout, out.stderr)
    listing = run_cli("sessions")
    # 6,000 in, 4,750 of them cached (79%); 1,250 × 2 + 4,750 × 0.5 + 250 × 8 = $0.0069
    said = usage_line(listing.stdout, log.stem)
    assert said == "in 6k · 79% cached · ~$0.01 est."
    assert len("      " + said) <= 80


def test_sessions_with_a_configured_price_no_price_and_no_cache_figure(
    run_cli: Run, cli_env: dict[str, str], openai_server: OpenAIServer, workdir: Path
) -> None:
    config = Path(cli_env["REEFLINE_CONFIG"])
    config.write_text('[prices."my-local"]\ninput = 1.0\ncached_input = 0.1\noutput = 2.0\n')
    url = ("--base-url", openai_server.base_url)
    usage = {"prompt_tokens": 400_000, "completion_tokens": 100_000}
    openai_server.push({"text": "priced", "usage": usage})
    assert run_cli("-p", "one", *url, "--model", "my-local", *WINDOW).returncode == 0
    openai_server.push({"text": "unpriced", "usage": usage})
    assert run_cli("-p", "two", *url, "--model", "other-local", *WINDOW).returncode == 0
    openai_server.push({"text": "silent", "usage": False})
    assert run_cli("-p", "three", *url, "--model", "my-local", *WINDOW).returncode == 0
    by_prompt = {first_prompt(log): log for log in session_files(cli_env)}
    priced, unpriced, silent = (by_prompt[p] for p in ("one", "two", "three"))
    listing = run_cli("sessions").stdout
    # No cache figure: all input at the full price, 400,000 × 1.0 + 100,000 × 2.0 = $0.60.
    assert usage_line(listing, priced.stem) == "in 400k · cache not reported · ~$0.60 est."
    assert usage_line(listing, unpriced.stem) == "in 400k · cache not reported"
    assert usage_line(listing, silent.stem) == "usage not reported"

    config.write_text('[prices."my-local"]\ninput = 1.0\noutptu = 2.0\n')
    bad = run_cli("sessions")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert str(config) in bad.stderr and "prices.my-local.outptu" in bad.stderr
