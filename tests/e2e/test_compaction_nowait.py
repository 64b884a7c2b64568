"""No wait at a turn's first compaction, end to end: the summary written in the person's pause
(``--plain``) and the one sent with a turn's first step request (``-p``).

Each step reads data.txt (about 530 tokens); with a 6,000-token window and the cost schedule
off (``cache_price = 0``) the mark stays at 4,800 tokens. Six reads and a long final answer
leave the context within reach of the mark."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests.e2e.conftest import REEFLINE, Run, log_events, session_files
from tests.e2e.test_compaction_ahead import brackets, is_summary, wait_for
from tests.openai_server import OpenAIServer

FIXED_MARK = {"REEFLINE_COMPACTION": json.dumps({"cache_price": 0})}


def flags(server: OpenAIServer) -> list[str]:
    model = ["--base-url", server.base_url, "--model", "m"]
    return [*model, "--approve", "auto", "--context-window", "6000"]


def reads(count: int, **spec: Any) -> list[dict[str, Any]]:
    """``count`` scripted replies, each calling bash to read data.txt (``spec`` on the first)."""
    call = {"name": "bash", "arguments": {"command": "cat data.txt"}}
    replies: list[dict[str, Any]] = [{"tool_calls": [{**call}]} for _ in range(count)]
    if replies:
        replies[0].update(spec)
    return replies


def setup(workdir: Path, server: OpenAIServer) -> None:
    (workdir / "data.txt").write_text("\n".join(f"record {i}: value {i * 7}" for i in range(60)))
    server.summarize = True


def near_the_mark(words: int = 300) -> list[dict[str, Any]]:
    """A turn that ends within reach of the mark: six reads and a long answer (about 4,350
    tokens with 300 words, over the mark with 700)."""
    return [*reads(6), {"text": "Read it six times.", "words": words}]


def summary_times(server: OpenAIServer) -> list[float]:
    return [server.arrived[i] for i, body in enumerate(list(server.requests)) if is_summary(body)]


def turn_events(events: list[dict[str, Any]], turn: int) -> list[dict[str, Any]]:
    start = next(
        e["seq"] for e in events if e["type"] == "turn/start" and e["data"]["turn"] == turn
    )
    return events[start:]


def test_a_turn_starting_near_the_mark_sends_its_summary_with_its_first_step_request(
    run_cli: Run, openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """Two ``-p`` turns, each a process of its own. The second starts within a step of the
    mark: its summary request reaches the server while the first step's reply is held (the
    step has not ended), and the second checkpoint commits it without waiting. A compaction
    later in the same turn is still written ahead, as before."""
    setup(workdir, openai_server)
    openai_server.push(*near_the_mark())
    first = run_cli("-p", "read data.txt", *flags(openai_server), env=FIXED_MARK)
    assert first.returncode == 0, first.stderr
    assert not summary_times(openai_server), "the first turn stayed below the mark"
    openai_server.push(*reads(10, stall_after=1, stall_s=120), {"text": "Done."})
    proc = subprocess.Popen(
        [REEFLINE, "-p", "read it again", "--continue", *flags(openai_server)],
        cwd=workdir,
        env={**cli_env, **FIXED_MARK},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    [log] = session_files(cli_env)
    try:
        wait_for(lambda: bool(summary_times(openai_server)), "the summary request", proc)
        # The first step's reply is still held: its step has not ended.
        second = turn_events(log_events(log), 2)
        assert [e["type"] for e in second if e["type"].startswith(("step/", "assistant"))] == [
            "step/start"
        ]
        step_request = len(openai_server.requests) - 2
        assert not is_summary(openai_server.requests[step_request])
        assert openai_server.arrived[step_request] <= summary_times(openai_server)[0]
        openai_server.unstalled.set()
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
    events = log_events(log)
    landed = [b for b in brackets(turn_events(events, 2)) if b[0]["type"] == "compact/start"]
    landed = [b for b in landed if not b[-1]["data"].get("error")]
    assert len(landed) >= 2, [e["type"] for e in events]
    asked = summary_times(openai_server)
    for bracket in landed[:2]:
        # Written ahead and whole at its checkpoint: its summary was asked for before it.
        assert bracket[0]["data"].get("ahead") is True
        assert [e["data"]["status"] for e in bracket if e["type"] == "compact/progress"] == ["ok"]
        assert any(t < bracket[0]["time"] for t in asked)
    # The first at the second checkpoint: after the first step, before the second.
    before = events[landed[0][0]["seq"] - 1]
    assert before["type"] == "step/end" and before["data"]["step"] == 1


class Plain:
    """The ``--plain`` REPL with a pipe for stdin: a prompt is written when the test says,
    and each turn's end is seen on stdout (its gauge line, printed once the pause began)."""

    def __init__(
        self, cli_env: dict[str, str], workdir: Path, server: OpenAIServer, env: dict[str, str]
    ) -> None:
        self.env = {**cli_env, **FIXED_MARK, **env}
        self.proc = subprocess.Popen(
            [REEFLINE, "--plain", *flags(server)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
            env=self.env,
            text=True,
        )
        self.gauges = 0
        self.seen = threading.Condition()
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.seen:
                self.lines.append(line)
                if line.startswith("ctx "):
                    self.gauges += 1
                self.seen.notify_all()

    def turn(self, prompt: str) -> None:
        """Send ``prompt`` and wait until its turn ended and the pause began."""
        assert self.proc.stdin is not None
        with self.seen:
            expected = self.gauges + 1
        self.proc.stdin.write(prompt + "\n")
        self.proc.stdin.flush()
        with self.seen:
            ok = self.seen.wait_for(lambda: self.gauges >= expected or self.proc.poll(), 60)
        assert ok and self.gauges >= expected, "".join(self.lines)

    def command(self, line: str, said: str) -> None:
        """Send ``line`` and wait until a line of output holds ``said``."""
        assert self.proc.stdin is not None
        with self.seen:
            before = len(self.lines)
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        with self.seen:
            ok = self.seen.wait_for(
                lambda: any(said in x for x in self.lines[before:]) or self.proc.poll(), 60
            )
        assert ok and self.proc.poll() is None, "".join(self.lines)

    def end(self) -> str:
        """Close stdin (the session ends); its stderr."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        assert self.proc.stderr is not None
        stderr = self.proc.stderr.read()
        assert self.proc.returncode == 0, stderr
        return stderr


def test_a_final_answer_near_the_mark_is_summarized_in_the_pause_and_committed_at_once(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """The first turn's long answer takes the context over the mark. While the person
    reads it the summary is written (the test types only once it is answered); the next
    turn's first checkpoint commits it, asking the server for no other summary."""
    setup(workdir, openai_server)
    openai_server.push(*near_the_mark(words=700), *reads(1), {"text": "Done."})
    repl = Plain(cli_env, workdir, openai_server, {})
    repl.turn("read data.txt")
    [log] = session_files(cli_env)
    ended = next(e for e in log_events(log) if e["type"] == "turn/end")
    assert openai_server.summarized.wait(60), "no summary in the pause"
    assert [t > ended["time"] for t in summary_times(openai_server)] == [True]
    repl.turn("read it again")
    repl.end()
    events = log_events(log)
    second = turn_events(events, 2)
    [bracket] = [b for b in brackets(second) if b[0]["type"] == "compact/start"]
    assert bracket[0]["data"].get("ahead") is True and not bracket[-1]["data"].get("error")
    # At the turn's first checkpoint: after its prompt, before its first step.
    kinds = [e["type"] for e in second]
    assert kinds.index("compact/start") < kinds.index("step/start")
    # The call made in the pause is the bracket's one call: nothing was asked for in it.
    assert [e["data"]["status"] for e in bracket if e["type"] == "compact/progress"] == ["ok"]
    assert len(summary_times(openai_server)) == 1


def pause_brackets(log: Path) -> list[list[dict[str, Any]]]:
    """The summaries written ahead that were discarded (here: at the session's end)."""
    found = [b for b in brackets(log_events(log)) if b[0]["type"] == "compact/start"]
    return [b for b in found if b[0]["data"].get("ahead") and b[-1]["data"].get("discarded")]


def test_a_cold_cache_or_a_far_mark_starts_no_summary_in_the_pause(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    """A turn far below the mark starts nothing in the pause; one near it does (the session
    ends in that pause, so the summary is discarded and logged as such). With a cache whose
    prefix expired before the pause began (a tiny ``cache_ttl_s``), the same turn starts
    none."""
    setup(workdir, openai_server)
    openai_server.push({"text": "Hello."}, *near_the_mark())
    repl = Plain(cli_env, workdir, openai_server, {})
    repl.turn("hello")  # far below the mark
    repl.turn("read data.txt")  # within reach of it
    repl.end()
    [log] = session_files(cli_env)
    [discarded] = pause_brackets(log)
    assert discarded[0]["data"]["turn"] == 2, "started in the second pause, not the first"
    assert len(summary_times(openai_server)) == 1

    cold_env = {**cli_env, "REEFLINE_HOME": str(tmp_path / "cold-home")}
    asked = len(openai_server.requests)
    openai_server.push(*near_the_mark())
    repl = Plain(cold_env, workdir, openai_server, {"REEFLINE_CACHE_TTL_S": "0.001"})
    repl.turn("read data.txt")
    repl.end()
    [cold] = session_files(cold_env)
    assert pause_brackets(cold) == []
    assert not any(is_summary(b) for b in openai_server.requests[asked:])


def test_new_during_a_summary_in_the_pause_stops_it_and_logs_it_as_discarded(
    openai_server: OpenAIServer, cli_env: dict[str, str], workdir: Path
) -> None:
    """``/new`` while the pause's summary call is in flight (held by the server): the call is
    stopped and the session left records it as a discarded compaction, its call failed;
    nothing else (no open bracket), and the new session has no trace of it."""
    setup(workdir, openai_server)
    openai_server.summary_stall_s = 120
    openai_server.push(*near_the_mark())
    repl = Plain(cli_env, workdir, openai_server, {})
    repl.turn("read data.txt")
    [old] = session_files(cli_env)
    wait_for(openai_server.stalled.is_set, "the summary in the pause", repl.proc)
    repl.command("/new", "Session ")
    repl.end()
    events = log_events(old)
    found = [b for b in brackets(events) if b[0]["type"] == "compact/start"]
    [discarded] = found
    assert discarded[0]["data"].get("ahead") is True and discarded[-1]["data"]["discarded"]
    assert [e["data"]["status"] for e in discarded if e["type"] == "compact/progress"] == ["failed"]
    assert not any(e["type"] == "compact/summary" for e in events)
    [new] = [log for log in session_files(cli_env) if log != old] or [None]
    assert new is None or not any(e["type"].startswith("compact/") for e in log_events(new))
