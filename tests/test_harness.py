"""The fixed harness: spec fingerprints, the bench runner (resume, refusals), and a real `openai` episode."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import tomli_w

from frog_gym.agents.oracle import hunks
from frog_gym.agents.registry import make_agent
from frog_gym.bench.runner import bench, load_results
from frog_gym.errors import FrogGymError, SpecError, UnknownNameError
from frog_gym.bench.harness import HarnessSpec, run_episode, tomllib
from frog_gym.bench.suites import SUITES, resolve, select
from frog_gym.catalog.task import load_task

FAST = ["inflection__handwritten-0002", "inflection__handwritten-0003", "inflection__handwritten-0004"]


def spec_of(**overrides: Any) -> HarnessSpec:
    base = {"suite": "t", "suite_version": "1", "tasks": (("a", "h1"), ("b", "h2")), "tools_hash": "pinned"}
    return HarnessSpec(**{**base, **overrides})


# -- fingerprints -----------------------------------------------------------------------------------
def test_fingerprint_is_pinned_for_a_fixed_spec():
    # Canonical JSON of the spec, sha256: a change here silently invalidates every stored result.
    assert spec_of().fingerprint() == spec_of().fingerprint()
    assert spec_of().fingerprint() == "0e752a2c1bf7a9c7"  # since visible_tests (hidden tests by default)


def test_fingerprint_survives_a_toml_round_trip_and_key_order(tmp_path):
    spec = HarnessSpec.for_suite(",".join(FAST[:2]), max_steps=40)
    path = spec.save(tmp_path / "h.toml")
    assert HarnessSpec.load(path) == spec
    assert HarnessSpec.load(path).fingerprint() == spec.fingerprint()
    data = tomllib.loads(path.read_text())
    shuffled = {k: dict(reversed(list(v.items()))) for k, v in reversed(list(data.items()))}
    assert HarnessSpec.from_toml(tomli_w.dumps(shuffled)).fingerprint() == spec.fingerprint()


@pytest.mark.parametrize("field,value", [
    ("tools", ("bash", "submit")), ("prompt_version", "2"), ("max_steps", 7), ("wall_time_s", 10.0),
    ("command_timeout_s", 5.0), ("output_cap_bytes", 100), ("grade_timeout_s", 60.0), ("partial_credit", True),
    ("backend", "docker"), ("image_digests", (("toolz", "sha256:ab"),)), ("seed", 3), ("samples_per_task", 4),
    ("suite_version", "2"), ("tasks", (("a", "h1"), ("b", "CHANGED"))), ("harness_version", 99),
    ("impact_selection", True),
])
def test_every_field_changes_the_fingerprint(field, value):
    changed = spec_of().replace(**{field: value})
    assert changed.fingerprint() != spec_of().fingerprint()


def test_a_hand_edited_file_is_refused_until_its_fingerprint_line_goes(tmp_path):
    spec = HarnessSpec.for_suite(FAST[0])
    text = spec.to_toml().replace("max_steps = 100", "max_steps = 99")
    with pytest.raises(SpecError, match="edited by hand"):
        HarnessSpec.from_toml(text)
    edited = "\n".join(ln for ln in text.splitlines() if not ln.startswith("fingerprint"))
    assert HarnessSpec.from_toml(edited).max_steps == 99


def test_a_changed_task_is_detected_against_the_registry():
    spec = HarnessSpec.for_suite(FAST[0])
    spec.check_tasks()
    stale = spec.replace(tasks=((FAST[0], "0" * 16),))
    with pytest.raises(FrogGymError, match="changed since this harness was written"):
        stale.check_tasks()


def test_spec_validation_says_what_to_set():
    with pytest.raises(SpecError, match="'submit' must be enabled"):
        spec_of(tools=("bash",))
    with pytest.raises(SpecError, match="unknown tools"):
        spec_of(tools=("bash", "submit", "teleport"))
    with pytest.raises(SpecError, match="max_steps"):
        spec_of(max_steps=0)


# -- suites -----------------------------------------------------------------------------------------
def test_suites_are_deterministic_stratified_and_hash_their_tasks():
    smoke = resolve("smoke")
    assert smoke == resolve("smoke") and smoke.hash == resolve("smoke").hash
    assert len(smoke.tasks) == min(SUITES["smoke"].size, len(resolve("full").tasks))
    assert all(load_task(t).content_hash == h for t, h in smoke.tasks)
    ids = sorted(resolve("full").task_ids)
    assert ids and not any(t.startswith("frogtoy__") for t in ids)  # the toy family is no benchmark
    small = select(dataclasses.replace(SUITES["smoke"], size=6), ids)
    assert select(dataclasses.replace(SUITES["smoke"], size=6), list(reversed(ids))) == small
    assert len({load_task(t).repo for t in small.task_ids}) > 1  # round-robin over repositories
    other = select(dataclasses.replace(SUITES["smoke"], size=6, version=SUITES["smoke"].version + 1), ids)
    assert other.hash != small.hash


def test_unknown_suite_suggests_the_nearest():
    with pytest.raises(UnknownNameError, match="Did you mean 'smoke'"):
        resolve("smok")


# -- episodes and runs ------------------------------------------------------------------------------
def test_a_disabled_tool_costs_a_step_and_says_so(tmp_path):
    spec = HarnessSpec.for_suite(FAST[0], tools=("bash", "submit"))
    agent = make_agent("replay", {"actions": [{"tool": "view", "path": "."}]})
    result = run_episode(spec, agent, "replay", FAST[0], 0, trajectory=tmp_path / "t.jsonl")
    records = [json.loads(ln) for ln in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [r["type"] for r in records] == ["header", "step", "step", "result"]
    assert records[1]["observation"].startswith("Error: the tool 'view' is disabled in this harness")
    assert result.steps == 2 and result.submitted and not result.resolved
    assert result.fingerprint == spec.fingerprint()


def test_a_run_directory_refuses_another_harness_or_agent(tmp_path):
    spec = HarnessSpec.for_suite(FAST[0])
    bench(spec, "noop", {}, tmp_path, progress=False)
    with pytest.raises(FrogGymError, match="are not comparable: use another --out"):
        bench(spec.replace(max_steps=5), "noop", {}, tmp_path, progress=False)
    with pytest.raises(FrogGymError, match="holds a run of agent 'noop'"):
        bench(spec, "oracle", {}, tmp_path, progress=False)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "frog_gym.cli", *args]


@pytest.mark.parametrize("sig,workers", [(signal.SIGINT, 1), (signal.SIGTERM, 2)])
def test_resume_after_interruption_skips_finished_episodes(tmp_path, sig, workers):
    out = tmp_path / "run"
    # Each episode sleeps 4 s in its sandbox, so the signal, sent once the first result is written, lands
    # while later episodes still run, however fast the machine (a noop episode can finish in milliseconds).
    slow = tmp_path / "slow.jsonl"
    slow.write_text(json.dumps({"action": {"tool": "bash", "command": "sleep 4"}}) + "\n")
    cmd = _cli("bench", "--agent", "replay", "--agent-opt", f"actions={slow}", "--suite", ",".join(FAST),
               "--out", str(out), "--no-progress", "--workers", str(workers))
    # A shell without job control starts background jobs with SIGINT ignored, and Python then never
    # raises KeyboardInterrupt: give the child Ctrl-C's default disposition, as a terminal would.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = out / "results.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (results.exists() and results.read_text().count("\n") >= 1):
        time.sleep(0.2)
    proc.send_signal(sig)  # Ctrl-C, or kill
    output, _ = proc.communicate(timeout=120)
    first = load_results(out)
    assert proc.returncode == 130, output
    assert "rerun the same command to resume" in output
    assert 1 <= len(first) < len(FAST)
    rerun = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"{len(first)} already done" in rerun.stdout
    final = load_results(out)
    assert sorted(r.task_id for r in final) == sorted(FAST)
    assert results.read_text().count("\n") == len(FAST)  # nothing ran twice
    kept = {r.task_id: r.finished_at for r in first}
    assert all(r.finished_at == kept[r.task_id] for r in final if r.task_id in kept)
    assert all((out / "trajectories" / f"{t}__s0.jsonl").exists() for t in FAST)


# -- the openai agent through the harness ------------------------------------------------------------
class ScriptedServer:
    """A local chat-completions server answering from a script: (status, body, headers, delay)."""

    def __init__(self, replies: list[tuple[int, Any, dict[str, str], float]]):
        self.replies = deque(replies)
        self.requests: list[dict[str, Any]] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                server.requests.append(body)
                status, payload, headers, delay = (server.replies.popleft() if server.replies
                                                   else (500, {"error": "script over"}, {}, 0.0))
                if delay:
                    server.release.wait(delay)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up on a delayed reply

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def tool_call(name: str, args: dict[str, Any] | str, usage: tuple[int, int] = (100, 20)):
    arguments = args if isinstance(args, str) else json.dumps(args)
    message = {"role": "assistant", "content": None,
               "tool_calls": [{"id": f"call_{name}", "type": "function",
                               "function": {"name": name, "arguments": arguments}}]}
    body = {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}}
    return (200, body, {}, 0.0)


def test_openai_agent_drives_real_bench_episodes(tmp_path):
    solved, broken = FAST[0], FAST[1]
    path, old, new = hunks(load_task(solved).patch)[0]
    server = ScriptedServer([
        # episode 1 (tasks run in id order): a 429, a malformed body, a timeout, then a fix and submit
        (429, {"error": "slow down"}, {"Retry-After": "0"}, 0.0),
        (200, b"<html>gateway hiccup</html>", {}, 0.0),
        (200, {}, {}, 3.0),  # answered after the client's 1 s timeout: retried
        tool_call("str_replace", {"path": path, "old_str": old, "new_str": new}),
        tool_call("submit", "{}"),
        # episode 2: the endpoint keeps failing: an infrastructure failure, not the agent's
        (503, {"error": "overloaded"}, {}, 0.0), (503, {"error": "overloaded"}, {}, 0.0),
        (503, {"error": "overloaded"}, {}, 0.0),
    ])
    try:
        spec = HarnessSpec.for_suite(f"{solved},{broken}")
        opts = {"model": "scripted", "base_url": server.base_url, "tool_mode": "native", "timeout_s": "1",
                "max_retries": "2", "backoff_base_s": "0.01", "backoff_cap_s": "0.05"}
        summary = bench(spec, "openai", opts, tmp_path, workers=1, label="scripted", progress=False)
    finally:
        server.close()
    by_task = {r.task_id: r for r in summary.results}
    good, bad = by_task[solved], by_task[broken]
    assert good.resolved and good.infra_failure is None
    assert good.steps == 3  # the malformed reply cost a step; the retried ones did not
    assert (good.prompt_tokens, good.completion_tokens, good.model_calls) == (200, 40, 3)
    assert good.model_patch.startswith("diff --git")
    records = [json.loads(ln) for ln in (tmp_path / "trajectories" / f"{solved}__s0.jsonl").read_text().splitlines()]
    steps = [r for r in records if r["type"] == "step"]
    assert steps[0]["observation"].startswith("Error:")
    result = records[-1]
    assert result["agent_stats"]["extra"]["http_retries"] == 2
    roles = [m["role"] for m in result["messages"]]
    assert roles[:2] == ["system", "user"] and "assistant" in roles and "tool" in roles
    assert bad.infra_failure and "failed 3 times" in bad.infra_failure and not bad.resolved
    # an infrastructure failure is retried on the next run; the solved episode is not
    assert {(r.task_id) for r in load_results(tmp_path) if not r.infra_failure} == {solved}


def test_unknown_agent_and_option_errors_teach():
    with pytest.raises(UnknownNameError, match="Did you mean 'oracle'"):
        make_agent("oracel")
    with pytest.raises(FrogGymError, match="has no option 'max_step'. Did you mean 'max_steps'"):
        make_agent("apr", {"max_step": "3"})
    with pytest.raises(FrogGymError, match="needs a model"):
        make_agent("openai", {})
    agent = make_agent("python:frog_gym.agents.simple:NoopAgent")
    assert agent.act("x") == {"tool": "submit"}


def test_cli_writes_a_harness_file(tmp_path):
    path = tmp_path / "h.toml"
    cmd = _cli("bench", "--agent", "noop", "--suite", FAST[0], "--write-harness", str(path))
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert HarnessSpec.load(path).fingerprint() in out.stdout
