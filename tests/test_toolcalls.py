"""Native tool calls, checked against the chat templates of real model families.

Each family's ``tokenizer_config.json`` (chat template and special tokens, as published; no vocabulary, no
weights) is test data under ``tests/learners/data/tokenizers/``: Qwen2.5-Instruct and Qwen3 (hermes-style
``<tool_call>`` blocks), Llama-3.2-Instruct (JSON calls with ``"parameters"``; see its ``SOURCE.md``). A
conversation with our tools, calls and tool results is rendered by transformers' ``apply_chat_template``
with ``tools=openai_tools()``; the text the template puts in an assistant turn (what a model of that family
is trained to write) is parsed back, as text and through the tokenizer as a policy decodes it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frog_gym.env.toolcalls import (
    ToolCall,
    assistant_message,
    parse_tool_calls,
    step_reply,
    template_family,
    tool_message,
)
from frog_gym.env.tools import ActionError, Call, parse_action
from frog_gym.env.toolspec import TOOLS, openai_tools

DATA = Path(__file__).parent / "learners" / "data" / "tokenizers"
FAMILIES = {"qwen2.5": "hermes", "qwen3": "hermes", "llama3.2": "llama3"}
DATE = {"date_string": "04 Dec 2026"}  # Llama's template prints today's date unless given one
CALLS = [
    ToolCall("call_0_0", "bash", {"command": "grep -rn 'def add' . ; echo \"done\" && ls | head -3"}),
    ToolCall("call_1_0", "str_replace", {"path": "frogtoy.py", "old_str": "    return a - b\n",
                                         "new_str": "    return a + b  # \u00e9t\u00e9 {braces} </tool_call>?\n"}),
    ToolCall("call_2_0", "view", {"path": "/testbed/frogtoy.py", "view_range": [1, -1]}),
    ToolCall("call_3_0", "submit", {}),
]


def family_tokenizer(name: str):
    pytest.importorskip("tokenizers")
    from frog_gym.learners.toy import train_tokenizer

    config = json.loads((DATA / name / "tokenizer_config.json").read_text())
    decoder = config["added_tokens_decoder"].values()
    specials = tuple(t["content"] for t in decoder if t["special"])
    text = [json.dumps(c.arguments) for c in CALLS] * 3
    tokenizer = train_tokenizer(text, vocab_size=400, chat_template=config["chat_template"], special=specials,
                                eos=config["eos_token"], pad=config.get("pad_token") or config["eos_token"])
    tokenizer.add_tokens([t["content"] for t in decoder if not t["special"]])  # Qwen's <tool_call>: plain
    if config.get("bos_token"):
        tokenizer.bos_token = config["bos_token"]
    return tokenizer


def conversation() -> list[dict]:
    """A user turn, then each call answered by its tool message (one call per assistant turn, as Llama's
    template requires)."""
    messages: list[dict] = [{"role": "system", "content": "You fix bugs."},
                            {"role": "user", "content": "Fix frogtoy.add."}]
    for call in CALLS:
        messages.append({"role": "assistant", "content": "", "tool_calls": [call.message()]})
        messages.append(tool_message(call, f"output of {call.name}"))
    return messages


def assistant_text(tokenizer, messages: list[dict], k: int) -> str:
    """What the template has the model write as message ``k`` (an assistant turn), up to its end token."""
    before = tokenizer.apply_chat_template(messages[:k], tools=openai_tools(), tokenize=False,
                                           add_generation_prompt=True, **DATE)
    through = tokenizer.apply_chat_template(messages[:k + 1], tools=openai_tools(), tokenize=False, **DATE)
    assert through.startswith(before)
    written = through[len(before):]
    return written[: written.index(tokenizer.eos_token)]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_template_renders_our_tools_and_its_calls_parse_back(name):
    tokenizer = family_tokenizer(name)
    assert template_family(tokenizer) == FAMILIES[name]
    messages = conversation()
    rendered = tokenizer.apply_chat_template(messages, tools=openai_tools(), tokenize=False, **DATE)
    for tool in TOOLS.values():  # the schemas are in the prompt
        assert json.dumps(tool.description)[1:-1] in rendered
    for k, m in enumerate(messages):
        if m["role"] == "tool":
            assert f"output of {m['name']}" in rendered
        if m["role"] != "assistant":
            continue
        [call] = [c for c in CALLS if c.id == m["tool_calls"][0]["id"]]
        text = assistant_text(tokenizer, messages, k)
        ids = tokenizer.encode(text, add_special_tokens=False)
        for written in (text, tokenizer.decode(ids, skip_special_tokens=True)):  # as a policy decodes it
            for family in (FAMILIES[name], "auto"):
                reply = parse_tool_calls(written, family, id_prefix=call.id[:-1])
                assert not reply.errors, (written, reply.errors)
                assert [(c.id, c.name, c.arguments) for c in reply.calls] == [(call.id, call.name, call.arguments)]
            assert parse_action(written) == Call(call.name, call.arguments)  # the env reads it too


def test_qwen_several_calls_in_one_turn_and_the_assistant_message_round_trips():
    tokenizer = family_tokenizer("qwen2.5")
    reply = parse_tool_calls("I will look, then edit.\n" + "\n".join(
        f'<tool_call>\n{{"name": "{c.name}", "arguments": {json.dumps(c.arguments)}}}\n</tool_call>'
        for c in CALLS[:2]), id_prefix="call_7_")
    assert reply.content == "I will look, then edit." and [c.name for c in reply.calls] == ["bash", "str_replace"]
    assert [c.id for c in reply.calls] == ["call_7_0", "call_7_1"]
    messages = [{"role": "user", "content": "Fix it."}, assistant_message(reply)]
    messages += [tool_message(c, "ok") for c in reply.calls]
    rendered = tokenizer.apply_chat_template(messages, tools=openai_tools(), tokenize=False)
    assert rendered.count("<tool_response>\nok\n</tool_response>") == 2
    again = parse_tool_calls(rendered.split("<|im_start|>assistant\n")[1].split("<|im_end|>")[0], "hermes",
                             id_prefix="call_7_")
    assert again == reply
    wire = assistant_message(reply, json_arguments=True)["tool_calls"][1]
    assert json.loads(wire["function"]["arguments"]) == CALLS[1].arguments and wire["id"] == "call_7_1"


@pytest.mark.parametrize("text, family, error", [
    ('<tool_call>\n{"name": "bash", "arguments": {"command": "ls"', "hermes", "not closed with </tool_call>"),
    ("<tool_call>\n{'name': 'bash'}\n</tool_call>", "hermes", "not valid JSON"),
    ('<tool_call>{"arguments": {"command": "ls"}}</tool_call>', "hermes", 'has no "name"'),
    ('<tool_call>{"name": "bash", "arguments": ["ls"]}</tool_call>', "hermes", "must be a JSON object, got list"),
    ('<tool_call>{"name": "bash", "arguments": "{ls"}</tool_call>', "hermes", "a string that is not JSON"),
    ('<tool_call>["bash"]</tool_call>', "hermes", "must be a JSON object"),
    ('<|python_tag|>brave_search.call(query="x")', "llama3", "is not a JSON tool call"),
    ('{"name": "bash", "parameters": {"command": "ls"}', "llama3", "not valid JSON"),
    ('<|python_tag|>{"name": "bash", "parameters": 3}', "auto", "must be a JSON object, got int"),
])
def test_a_malformed_call_is_an_error_message_never_an_exception(text, family, error):
    reply = parse_tool_calls(text, family)
    assert not reply.calls and error in reply.errors[0]
    action = parse_action(text)
    if family != "llama3" or text.startswith("<|python_tag|>"):
        assert isinstance(action, ActionError) and error in action.message


def test_llama_several_calls_and_plain_text():
    reply = parse_tool_calls('<|python_tag|>{"name": "bash", "parameters": {"command": "a; b"}}; '
                             '{"name": "submit", "parameters": {}}')
    assert [(c.name, c.arguments) for c in reply.calls] == [("bash", {"command": "a; b"}), ("submit", {})]
    assert parse_tool_calls("The bug is in add().") == parse_tool_calls("The bug is in add().", "llama3")
    assert parse_tool_calls('{"tool": "bash", "command": "ls"}').calls == ()  # our own format: the env's job
    with pytest.raises(ValueError, match="Unknown tool-call family 'mistral'"):
        parse_tool_calls("", "mistral")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list('<>{}[]":,;|/ \nabc_1') + ["<tool_call>", "</tool_call>", "<|python_tag|>",
                                                                 '"name"', '"arguments"', '"parameters"', '"bash"']),
                max_size=40).map("".join),
       st.sampled_from(["auto", "hermes", "llama3"]))
def test_parsing_never_raises(text, family):
    reply = parse_tool_calls(text, family)
    assert all(isinstance(c.arguments, dict) and c.name for c in reply.calls)
    parse_action(text)


def test_openai_tools_is_the_toolspec_and_refuses_unknown_names():
    assert openai_tools() == [t.json_schema() for t in TOOLS.values()]
    assert [t["function"]["name"] for t in openai_tools(["submit", "bash"])] == ["bash", "submit"]
    with pytest.raises(KeyError, match="Unknown tool 'bsh'"):
        openai_tools(["bsh"])


def test_step_reply_runs_native_calls_in_a_real_episode():
    import gymnasium as gym

    import frog_gym  # noqa: F401
    from frog_gym.agents.oracle import OracleAgent

    task = "frogtoy__handwritten-0002"
    env = gym.make("FrogSWE-Toy-v0", max_steps=10, max_episode_steps=10)
    try:
        env.reset(options={"task_id": task})
        out = step_reply(env, 'Look first.\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n'
                              '</tool_call>\n<tool_call>\n{"name": "bash", "arguments": {"command": "pwd"}}\n'
                              "</tool_call>", id_prefix="call_0_")
        assert [m["role"] for m in out.messages] == ["tool", "tool"] and out.steps == 2 and not out.done
        assert [m["tool_call_id"] for m in out.messages] == ["call_0_0", "call_0_1"]
        assert "/testbed" in out.messages[1]["content"]
        out = step_reply(env, '<tool_call>{"name": "bash", "arguments": {"command": "ls"}')  # cut mid-call
        assert out.messages[0]["role"] == "user" and "not closed" in out.messages[0]["content"] and out.steps == 1
        oracle = OracleAgent()
        oracle.reset("", {"task_id": task})
        while not out.done:
            action = dict(oracle.act(""))
            name = action.pop("tool")
            out = step_reply(env, json.dumps({"name": name, "parameters": action}))  # Llama's form
            assert out.messages[0]["role"] == "tool"
        assert out.terminated and out.reward == 1.0 and out.info["resolved"]
    finally:
        env.close()
