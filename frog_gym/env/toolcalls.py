"""Native tool calls: reading the calls chat models write when given our tools as a ``tools=`` schema, and
the messages that answer them.

A model prompted through its chat template with ``tools=openai_tools()`` (:mod:`frog_gym.env.toolspec`) writes
its calls in its family's own syntax, learned from that template:

- ``hermes`` (Qwen2.5, Qwen3, Hermes and the many models trained on their template): text, then one or more
  ``<tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>`` blocks.
- ``llama3`` (Llama 3.1, 3.2, 3.3 Instruct): the whole reply is ``{"name": NAME, "parameters": {...}}``,
  sometimes after ``<|python_tag|>``; several calls are separated by ``;``.

:func:`parse_tool_calls` turns a reply into a :class:`Reply`: the text outside the calls, the well-formed
calls (each with an id, since these families write none), and one message per malformed call. It never
raises: a reply the model got wrong is data, which :func:`step_reply` turns into an error observation that
costs a step, as the env does for any malformed action. Results go back as ``role: "tool"`` messages that
carry the call's id (:func:`tool_message`).

Example:
    >>> r = parse_tool_calls('Let me look.\\n<tool_call>\\n{"name": "bash", "arguments": {"command": "ls"}}\\n</tool_call>')
    >>> r.content, r.calls[0].name, r.calls[0].arguments
    ('Let me look.', 'bash', {'command': 'ls'})
    >>> parse_tool_calls('{"name": "view", "parameters": {"path": "setup.py"}}').calls[0].action()
    {'name': 'view', 'arguments': {'path': 'setup.py'}}
    >>> parse_tool_calls('<tool_call>{"name": "bash"').errors[0][:44]
    'A <tool_call> block is not closed with </too'
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

FAMILIES = ("hermes", "llama3")
"""The tool-call syntaxes :func:`parse_tool_calls` reads (``auto`` picks one per reply)."""

PYTHON_TAG = "<|python_tag|>"


@dataclass(frozen=True)
class ToolCall:
    """One well-formed call: its id (made up here: these families write none), the tool and its arguments."""

    id: str
    name: str
    arguments: dict[str, Any]

    def action(self) -> dict[str, Any]:
        """The call as an env action (OpenAI style, which :func:`frog_gym.env.tools.parse_action` reads)."""
        return {"name": self.name, "arguments": dict(self.arguments)}

    def message(self, json_arguments: bool = False) -> dict[str, Any]:
        """The call as an entry of an assistant message's ``tool_calls``.

        Args:
            json_arguments: arguments as a JSON string (OpenAI's wire format) instead of a dict (what chat
                templates render: Qwen2.5's and Llama's pass them through ``tojson``).
        """
        arguments: Any = json.dumps(self.arguments) if json_arguments else dict(self.arguments)
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": arguments}}


@dataclass(frozen=True)
class Reply:
    """A model reply, read: the text outside the calls, the well-formed calls in order, and one message per
    malformed call (what the model is told)."""

    content: str
    calls: tuple[ToolCall, ...] = ()
    errors: tuple[str, ...] = field(default=())


def _call(obj: Any, key_hint: str, call_id: str) -> ToolCall | str:
    if not isinstance(obj, dict):
        return f"A tool call must be a JSON object with \"name\" and \"{key_hint}\", got {type(obj).__name__}."
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return f"A tool call has no \"name\" (got keys {sorted(obj)[:6]}); write {{\"name\": TOOL, \"{key_hint}\": {{...}}}}."
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):  # some models write the arguments as a JSON string, as OpenAI's API does
        try:
            args = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError) as e:
            return f"The arguments of the call to '{name[:80]}' are a string that is not JSON ({e})."
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return f"The arguments of the call to '{name[:80]}' must be a JSON object, got {type(args).__name__}."
    return ToolCall(call_id, name, args)


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _hermes(text: str, id_prefix: str) -> Reply:
    # A scanner, not a regex: an argument may itself contain "</tool_call>" (a file being edited).
    open_, close = "<tool_call>", "</tool_call>"
    fix = 'write <tool_call>{"name": TOOL, "arguments": {...}}</tool_call>.'
    calls: list[ToolCall] = []
    errors: list[str] = []
    content: list[str] = []
    pos = 0
    while pos < len(text):
        start = text.find(open_, pos)
        if start < 0:
            content.append(text[pos:])
            break
        content.append(text[pos:start])
        body = _skip_space(text, start + len(open_))
        try:
            obj, end = json.JSONDecoder().raw_decode(text, body)
        except (ValueError, RecursionError) as e:
            obj, end = e, body
        after = _skip_space(text, end)
        if not isinstance(obj, Exception) and text.startswith(close, after):
            got = _call(obj, "arguments", f"{id_prefix}{len(calls)}")
            (calls.append(got) if isinstance(got, ToolCall) else errors.append(got))
            pos = after + len(close)
            continue
        stop = text.find(close, body)
        if stop < 0:
            errors.append(f"A <tool_call> block is not closed with </tool_call> (was the reply cut by the token "
                          f"limit?); {fix}")
            break
        what = f"is not valid JSON ({obj})" if isinstance(obj, Exception) else "has text after its JSON object"
        errors.append(f"A <tool_call> block {what}; {fix}")
        pos = stop + len(close)
    return Reply("".join(content).replace(close, "").strip(), tuple(calls), tuple(errors))


def _llama3(text: str, id_prefix: str) -> Reply:
    s = text.strip()
    tagged = s.startswith(PYTHON_TAG)
    if tagged:
        s = s[len(PYTHON_TAG):].strip()
    if not s.startswith("{"):
        if tagged:
            why = (f"The text after {PYTHON_TAG} is not a JSON tool call; write {{\"name\": TOOL, "
                   "\"parameters\": {...}}.")
            return Reply("", (), (why,))
        return Reply(text.strip())
    decoder = json.JSONDecoder()
    calls: list[ToolCall] = []
    errors: list[str] = []
    pos = 0
    while pos < len(s):
        try:
            obj, end = decoder.raw_decode(s, pos)
        except (ValueError, RecursionError) as e:
            errors.append(f"The tool call is not valid JSON ({e}); write {{\"name\": TOOL, \"parameters\": {{...}}}}.")
            break
        got = _call(obj, "parameters", f"{id_prefix}{len(calls)}")
        (calls.append(got) if isinstance(got, ToolCall) else errors.append(got))
        pos = end
        while pos < len(s) and (s[pos].isspace() or s[pos] == ";"):
            pos += 1
    return Reply("", tuple(calls), tuple(errors))


def _names_a_tool(s: str) -> bool:
    if not s.startswith("{"):
        return False
    try:
        obj, _ = json.JSONDecoder().raw_decode(s)
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and "name" in obj and "tool" not in obj


def parse_tool_calls(text: str, family: str = "auto", *, id_prefix: str = "call_") -> Reply:
    """Read the tool calls in a model's reply (see the module docstring for the syntaxes).

    Args:
        text: the reply, decoded (with or without special tokens).
        family: ``hermes``, ``llama3``, or ``auto``: ``hermes`` when the reply has a ``<tool_call>`` tag,
            ``llama3`` when it starts with ``<|python_tag|>`` or a JSON object with a ``name``, else no calls.
        id_prefix: call ids are ``id_prefix`` + the call's index in the reply; make it unique per turn.

    Returns:
        A :class:`Reply`; malformed calls are in its ``errors``, never raised.
    """
    if not isinstance(text, str):
        return Reply("", (), (f"A reply must be text, got {type(text).__name__}.",))
    if family not in ("auto", *FAMILIES):
        raise ValueError(f"Unknown tool-call family {family!r}; use one of auto, {', '.join(FAMILIES)}.")
    if family == "auto":
        s = text.strip()
        if "<tool_call>" in text:
            family = "hermes"
        elif s.startswith(PYTHON_TAG) or _names_a_tool(s):
            family = "llama3"
        else:
            return Reply(s)
    return _hermes(text, id_prefix) if family == "hermes" else _llama3(text, id_prefix)


def answers_a_call(reply: Any) -> bool:
    """Whether the env's answer to ``reply`` is a tool's output for the one native call the reply made (so
    a chat template lays it out as a tool message), rather than a user turn (plain text, several calls or a
    malformed one: the env runs one call per step and answers anything else with an error).

    Example:
        >>> answers_a_call('<tool_call>{"name": "submit", "arguments": {}}</tool_call>'), answers_a_call("ls")
        (True, False)
    """
    if not isinstance(reply, str):
        return False
    read = parse_tool_calls(reply)
    return len(read.calls) == 1 and not read.errors


def template_family(tokenizer_or_template: Any) -> str | None:
    """The tool-call syntax a chat template teaches (``hermes`` or ``llama3``), or None if it renders no
    tool calls.

    Example:
        >>> template_family("... <tool_call>\\n{{ tool_call | tojson }} ...")
        'hermes'
    """
    template = tokenizer_or_template if isinstance(tokenizer_or_template, str) else \
        getattr(tokenizer_or_template, "chat_template", None)
    if not isinstance(template, str):
        return None
    if "<tool_call>" in template:
        return "hermes"
    if '"parameters": ' in template or "ipython" in template:
        return "llama3"
    return None


def assistant_message(reply: Reply, json_arguments: bool = False) -> dict[str, Any]:
    """The assistant message of a reply: its text, and its calls as ``tool_calls`` (if any)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.calls:
        message["tool_calls"] = [c.message(json_arguments) for c in reply.calls]
    return message


def tool_message(call: ToolCall, content: str) -> dict[str, Any]:
    """The answer to one call: a ``role: "tool"`` message carrying the call's id and the tool's name."""
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}


@dataclass
class ReplyStep:
    """What one model reply did to an env: the messages that answer it, and the env's last step."""

    messages: list[dict[str, Any]]
    """One ``role: "tool"`` message per call made; or, for a reply with no well-formed call (plain JSON, a
    fenced bash block, a malformed call), one ``role: "user"`` message with the env's observation."""
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    steps: int = 0
    """Env steps taken (one per call made)."""

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


def step_reply(env: Any, reply: str, *, family: str = "auto", id_prefix: str = "call_") -> ReplyStep:
    """Run a model reply in a Gymnasium FrogSWE env: each native call is one env step answered by a tool
    message, until the episode ends (calls after that are not run). A reply whose calls are malformed, or
    that has none, is one env step on its text: the env reads plain JSON and fenced bash, and answers
    anything else with an error observation, which goes back as a user message.

    Example:
        >>> out = step_reply(env, '<tool_call>{"name": "submit", "arguments": {}}</tool_call>')  # doctest: +SKIP
        >>> out.done, out.messages[0]["role"]  # doctest: +SKIP
        (True, 'tool')
    """
    op, result = reply_steps(reply, family=family, id_prefix=id_prefix), None
    while True:
        try:
            result = env.step(op.send(result))
        except StopIteration as stop:
            return stop.value


async def astep_reply(env: Any, reply: str, *, family: str = "auto", id_prefix: str = "call_") -> ReplyStep:
    """:func:`step_reply` on the env's async API (``await env.astep``)."""
    op, result = reply_steps(reply, family=family, id_prefix=id_prefix), None
    while True:
        try:
            result = await env.astep(op.send(result))
        except StopIteration as stop:
            return stop.value


def reply_steps(reply: str, *, family: str = "auto", id_prefix: str = "call_") -> Generator[Any, Any, ReplyStep]:
    """:func:`step_reply` written once for the sync and the async env API: it yields each env action, gets
    the env's 5-tuple back, and returns the :class:`ReplyStep` (``yield from`` it inside another such step)."""
    read = parse_tool_calls(reply, family, id_prefix=id_prefix)
    out = ReplyStep(messages=[])
    if read.errors or not read.calls:  # the env reads plain JSON and fenced bash, and says what is wrong
        obs, out.reward, out.terminated, out.truncated, out.info = yield reply
        out.steps = 1
        out.messages.append({"role": "user", "content": obs})
        return out
    for call in read.calls:
        obs, out.reward, out.terminated, out.truncated, out.info = yield call.action()
        out.steps += 1
        out.messages.append(tool_message(call, obs))
        if out.done:
            break
    return out
