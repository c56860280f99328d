"""A scripted model behind an OpenAI-style chat endpoint on 127.0.0.1: each chat completion gets the next
scripted reply (streamed as server-sent events when asked, as verifiers' eval client streams), and every
request is recorded. Importable (:class:`ScriptedModel`), or run as a script for a test that starts its
client in another process or network namespace:

    python scripted_openai.py REPLIES.json REQUESTS.jsonl PORT_FILE
"""

from __future__ import annotations

import json
import sys
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedModel:
    """Answers each chat completion with the next scripted reply (text, or ``{"tool_calls": [[name,
    arguments], ...]}`` for native calls), then ``{"tool": "submit"}``."""

    def __init__(self, replies: list[str], log: str | None = None):
        self.replies, self.requests = deque(replies), []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                model.requests.append(body)
                if log:
                    with open(log, "a", encoding="utf-8") as f:
                        f.write(json.dumps(body) + "\n")
                reply = model.replies.popleft() if model.replies else '{"tool": "submit"}'
                # a reply is text, or {"tool_calls": [[name, arguments], ...]}: native calls, ids call_<n>
                calls = reply.get("tool_calls") if isinstance(reply, dict) else None
                text = None if calls else reply
                tool_calls = [{"index": i, "id": f"call_{len(model.requests)}_{i}", "type": "function",
                               "function": {"name": name, "arguments": json.dumps(args)}}
                              for i, (name, args) in enumerate(calls or [])]
                finish = "tool_calls" if calls else "stop"
                message = {"role": "assistant", "content": text, **({"tool_calls": tool_calls} if calls else {})}
                usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
                head = {"id": "c1", "created": 0, "model": body.get("model", "m")}
                if body.get("stream"):
                    chunks = [{**head, "object": "chat.completion.chunk", "choices": [
                                  {"index": 0, "delta": message, "finish_reason": None}]},
                              {**head, "object": "chat.completion.chunk", "usage": usage,
                               "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]
                    data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"
                    kind = "text/event-stream"
                else:
                    for c in message.get("tool_calls", []):
                        c.pop("index")
                    data = json.dumps({**head, "object": "chat.completion", "usage": usage, "choices": [
                        {"index": 0, "message": message, "finish_reason": finish}]}).encode()
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


if __name__ == "__main__":
    replies_file, log_file, port_file = sys.argv[1:4]
    with open(replies_file, encoding="utf-8") as f:
        m = ScriptedModel(json.load(f), log=log_file)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(m.httpd.server_address[1]))
    import os

    os.replace(port_file + ".tmp", port_file)
    threading.Event().wait()
