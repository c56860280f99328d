"""The verifiers adapter with the real verifiers (v1): a scripted rollout through ``load_environment``,
verifiers' null harness in its subprocess runtime, and a scripted model on 127.0.0.1 (an OpenAI-style
chat endpoint answering with server-sent events, as verifiers' eval client streams)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

vf = pytest.importorskip("verifiers.v1", reason="the 'verifiers' extra is not installed")

TOY = "frogtoy__handwritten-0003"


class ScriptedModel:
    """Answers each chat completion with the next scripted reply (streamed when asked) and records the
    messages it was sent."""

    def __init__(self, replies: list[str]):
        self.replies, self.requests = deque(replies), []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                model.requests.append(body)
                text = model.replies.popleft() if model.replies else '{"tool": "submit"}'
                usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
                head = {"id": "c1", "created": 0, "model": body.get("model", "m")}
                if body.get("stream"):
                    chunks = [{**head, "object": "chat.completion.chunk", "choices": [
                                  {"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
                              {**head, "object": "chat.completion.chunk", "usage": usage,
                               "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
                    data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"
                    kind = "text/event-stream"
                else:
                    data = json.dumps({**head, "object": "chat.completion", "usage": usage, "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}).encode()
                    kind = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


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


@pytest.mark.slow  # the first run syncs the null harness's chat program with uv (a minute)
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


@pytest.mark.slow
def test_an_unfixed_bug_scores_zero_at_the_step_budget(monkeypatch):
    episode, _ = _rollout(["```bash\nls\n```"] * 3, monkeypatch, max_steps=3)
    (trace,) = episode.traces
    assert not episode.errors and trace.rewards["frog_resolved"].score == 0.0
    assert trace.info["frog"]["steps"] == 3 and trace.info["frog"]["status"] == "RESOLVED_NO"
