"""The verifiers adapter with the real verifiers (v1): a scripted rollout through ``load_environment`` and
through ``vf-eval`` itself (in a network namespace with only loopback), FrogSWE's offline harness in its
subprocess runtime, and a scripted model on 127.0.0.1 (an OpenAI-style chat endpoint answering with
server-sent events, as verifiers' eval client streams: ``scripted_openai.py``)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_openai import ScriptedModel

vf = pytest.importorskip("verifiers.v1", reason="the 'verifiers' extra is not installed")

TOY = "frogtoy__handwritten-0003"


def _rollout(replies: list[str], monkeypatch, **kwargs):
    from frog_gym.adapters.verifiers import load_environment

    monkeypatch.setenv("SCRIPTED_MODEL_KEY", "unused")
    model = ScriptedModel(replies)
    env = load_environment(task_ids=[TOY], env_id="FrogSWE-Toy-v0", **kwargs)
    ctx = vf.ModelContext(model="scripted", client=vf.EvalClientConfig(base_url=model.base_url,
                                                                         api_key_var="SCRIPTED_MODEL_KEY"))

    async def run():
        async with env.serving():
            return await env.run_episode(next(iter(env.taskset)), ctx)

    try:
        return asyncio.run(run()), model.requests
    finally:
        model.close()


def test_a_scripted_rollout_fixes_the_bug_and_is_rewarded(monkeypatch):
    from frog_gym.agents.oracle import OracleAgent

    oracle = OracleAgent()
    oracle.reset("", {"task_id": TOY})
    fix = [json.dumps(oracle.act("")) for _ in range(len(oracle._queue))]
    episode, requests = _rollout(["```bash\ngit status --short\n```", "what now?", *fix], monkeypatch)
    assert not episode.errors
    (trace,) = episode.traces
    assert trace.rewards["frog_resolved"].score == 1.0, (trace.info, trace.stop_condition, requests[-1]["messages"][-2:])
    assert trace.info["frog"] == {"task_id": TOY, "resolved": True, "steps": 2 + len(fix), "status": "RESOLVED_FULL"}
    first = requests[0]["messages"]
    assert [m["role"] for m in first] == ["system", "user"] and "/testbed" in first[1]["content"]
    assert requests[2]["messages"][-1]["content"].startswith("Error:")  # "what now?" was malformed: an observation


def test_requests_carry_the_tools_and_native_calls_are_answered_by_tool_messages(monkeypatch):
    from frog_gym.agents.oracle import OracleAgent
    from frog_gym.env.toolspec import openai_tools

    oracle = OracleAgent()
    oracle.reset("", {"task_id": TOY})
    fix = [dict(oracle.act("")) for _ in range(len(oracle._queue))]
    calls = [[a.pop("tool"), a] for a in fix]
    episode, requests = _rollout([{"tool_calls": [["bash", {"command": "git status --short"}]]},
                                  {"tool_calls": calls}], monkeypatch)  # the fix and submit in one reply
    assert not episode.errors
    (trace,) = episode.traces
    assert trace.rewards["frog_resolved"].score == 1.0 and trace.info["frog"]["status"] == "RESOLVED_FULL"
    assert all(r["tools"] == openai_tools() for r in requests) and len(requests) == 2
    answer = requests[1]["messages"][-1]
    assert answer["role"] == "tool" and answer["tool_call_id"] == "call_1_0" and "[exit code 0]" in answer["content"]
    assert requests[1]["messages"][-2]["tool_calls"][0]["function"]["name"] == "bash"


def test_an_unfixed_bug_scores_zero_at_the_step_budget(monkeypatch):
    episode, _ = _rollout(["```bash\nls\n```"] * 3, monkeypatch, max_steps=3)
    (trace,) = episode.traces
    assert not episode.errors and trace.rewards["frog_resolved"].score == 0.0
    assert trace.info["frog"]["steps"] == 3 and trace.info["frog"]["status"] == "RESOLVED_NO"


def test_episodes_run_concurrently_on_one_event_loop(monkeypatch):
    """Four rollouts at once on verifiers' loop: their 3 s commands run at the same time (the adapter awaits the
    env's astep, so no episode waits for another's command). Each command prints when it ran, by the sandbox's
    clock; the test counts how many ran at once."""
    from frog_gym.adapters.verifiers import load_environment

    monkeypatch.setenv("SCRIPTED_MODEL_KEY", "unused")
    n = 4
    span = '```bash\ns=$(date +%s.%N); sleep 3; echo "span $s $(date +%s.%N)"\n```'
    model = ScriptedModel([span] * (2 * n))
    env = load_environment(task_ids=[TOY], env_id="FrogSWE-Toy-v0", max_steps=2)
    ctx = vf.ModelContext(model="scripted", client=vf.EvalClientConfig(base_url=model.base_url,
                                                                         api_key_var="SCRIPTED_MODEL_KEY"))
    task = next(iter(env.taskset))

    async def run():
        async with env.serving():
            return await asyncio.gather(*(env.run_episode(task, ctx) for _ in range(n)))

    try:
        episodes = asyncio.run(run())
        spans = {tuple(map(float, line.split()[1:3])) for r in model.requests for m in r["messages"]
                 if m["role"] == "user" for line in str(m["content"]).splitlines() if line.startswith("span ")}
    finally:
        model.close()
    for episode in episodes:
        (trace,) = episode.traces
        assert not episode.errors and trace.rewards["frog_resolved"].score == 0.0
        assert trace.info["frog"]["steps"] == 2 and trace.info["frog"]["status"] == "RESOLVED_NO"
    assert len(spans) == n  # one per episode: the second command ends it (the budget), its output reaches no model
    at_once = max(sum(a <= t < b for a, b in spans) for t, _ in spans)
    assert at_once >= 3, sorted(spans)


def _oracle_replies() -> list[str]:
    from frog_gym.agents.oracle import OracleAgent

    oracle = OracleAgent()
    oracle.reset("", {"task_id": TOY})
    return [json.dumps(oracle.act("")) for _ in range(len(oracle._queue))]


HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VF_EVAL = shutil.which("vf-eval")


@pytest.mark.skipif(VF_EVAL is None or shutil.which("unshare") is None, reason="needs vf-eval and unshare")
def test_vf_eval_runs_the_documented_command_with_no_network(tmp_path):
    (tmp_path / "replies.json").write_text(json.dumps(["```bash\ngit status --short\n```", *_oracle_replies()]))
    # The model and vf-eval share a network namespace where only loopback exists: nothing is downloaded.
    script = ("ip link set lo up; "
              f"{sys.executable} {HERE / 'scripted_openai.py'} replies.json requests.jsonl port >model.log 2>&1 & "
              "model=$!; for i in $(seq 100); do [ -f port ] && break; sleep 0.1; done; "
              f"{VF_EVAL} frog-gym-verifiers -m scripted --no-push -o out "
              "--client.base-url http://127.0.0.1:$(cat port)/v1 --client.api-key-var SCRIPTED_MODEL_KEY "
              "--env.taskset.env-id FrogSWE-Toy-v0 --env.taskset.task-ids " + TOY + "; rc=$?; kill $model; exit $rc")
    p = subprocess.run(["unshare", "--net", "bash", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                       timeout=600, env={**os.environ, "SCRIPTED_MODEL_KEY": "unused", "PYTHONPATH": str(ROOT),
                                         "PRIME_API_KEY": ""})
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    assert "frog-gym-verifiers harness" in out and "subprocess" in out
    assert "reward=1.00" in out and "frog_resolved 1.00" in out, out[-3000:]  # verifiers' own log agrees with us
    (traces,) = (tmp_path / "out").rglob("traces.jsonl")
    (episode,) = [json.loads(ln) for ln in traces.read_text().splitlines()]
    (trace,) = episode["traces"]
    assert episode["ok"] and trace["info"]["frog"]["status"] == "RESOLVED_FULL", trace["info"]
    requests = [json.loads(ln) for ln in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert requests and requests[0]["messages"][0]["role"] == "system"


def test_an_infrastructure_failure_is_verifiers_sandbox_error_not_a_reward(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")  # a sandbox that cannot start
    episode, requests = _rollout([], monkeypatch, env_kwargs={"backend": "docker"})
    assert requests == [] and not any(t.rewards for t in episode.traces)  # no reward recorded anywhere
    errors = [*episode.errors, *(e for t in episode.traces for e in t.errors)]
    assert errors and errors[0].type == "SandboxError", errors
    assert errors[0].message.startswith("FrogSWE infrastructure failure (not scored): No Docker engine answers")
