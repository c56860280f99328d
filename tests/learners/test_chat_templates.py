"""The turn layout read from the chat templates of real model families, and an error when a tokenizer's end
token and its template disagree.

``data/tokenizers/<family>/tokenizer_config.json`` are the tokenizer configs of Qwen2.5-Instruct,
Qwen3 and Llama-3-Instruct (special tokens, end/pad/bos tokens and the chat template), written for these
tests from those families' published files (nothing is downloaded here); the vocabulary is a small BPE
trained locally, with those special tokens.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from frog_gym.learners.toy import tiny_gpt2, train_tokenizer

from frog_gym.agents.hf import ChatFormat, ChatTemplateError, HFPolicy
from frog_gym.env.tools import Call, parse_action

DATA = Path(__file__).parent / "data" / "tokenizers"
TEXT = ["Fix the bug in frogtoy.py: `add(1, 2)` returns -1.", "Edited /testbed/frogtoy.py.",
        '{"tool": "str_replace", "path": "frogtoy.py", "old_str": "a - b", "new_str": "a + b"}',
        '{"name": "submit", "arguments": {}}', "[exit code 0]", "<think> the sign is wrong </think>"] * 5

LAYOUTS = {
    "qwen2.5": ChatFormat(
        first="<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
              "<|im_start|>user\n",
        reply="<|im_end|>\n<|im_start|>assistant\n", between="\n<|im_start|>user\n"),
    "qwen3": ChatFormat(first="<|im_start|>user\n", reply="<|im_end|>\n<|im_start|>assistant\n",
                        between="\n<|im_start|>user\n"),
    "llama3": ChatFormat(
        first="<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n",
        reply="<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
        between="<|start_header_id|>user<|end_header_id|>\n\n"),
}
BASE_EOS = {"qwen2.5": "<|endoftext|>", "qwen3": "<|endoftext|>", "llama3": "<|end_of_text|>"}
"""The end token of each family's base (pre-trained) tokenizer, which its instruct template does not use."""


def family_tokenizer(name: str):
    config = json.loads((DATA / name / "tokenizer_config.json").read_text())
    added = [t["content"] for t in config["added_tokens_decoder"].values()]
    specials = tuple(t["content"] for t in config["added_tokens_decoder"].values() if t["special"])
    tokenizer = train_tokenizer(TEXT, vocab_size=400, chat_template=config["chat_template"], special=specials,
                                eos=config["eos_token"], pad=config.get("pad_token") or config["eos_token"])
    tokenizer.add_tokens([t for t in added if t not in specials])  # Qwen's <tool_call>, <think>: plain tokens
    if config.get("bos_token"):
        tokenizer.bos_token = config["bos_token"]
    return tokenizer


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layout_is_read_from_the_family_template(name):
    tokenizer = family_tokenizer(name)
    assert ChatFormat.from_tokenizer(tokenizer) == LAYOUTS[name]


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_trajectory_tokens_render_as_the_template_does(name):
    """Prompt, a reply cut at max_new_tokens, an observation: the trajectory reads exactly as the
    family's template renders that conversation, the end marker after the cut reply included."""
    tokenizer = family_tokenizer(name)
    policy = HFPolicy(tiny_gpt2(tokenizer, n_embd=16, n_layer=1, n_head=2), tokenizer)
    prompt, observation = TEXT[0], TEXT[1]
    t = policy.start(prompt)
    cut = policy.encode("return a - b")  # a reply that max_new_tokens stopped before its end token
    policy.append_reply(t, cut, [-1.0] * len(cut))
    reply_ids = t.generated()[0]
    assert t.ids[-1] == tokenizer.eos_token_id and t.mask[-1] == 0  # the marker closes the turn, untrained
    assert not any(math.isnan(x) for x in t.logprobs)
    policy.observe(t, observation)
    reply = tokenizer.decode(reply_ids)
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}, {"role": "assistant", "content": reply},
         {"role": "user", "content": observation}], tokenize=False, add_generation_prompt=True)
    assert tokenizer.decode(t.ids) == rendered


@pytest.mark.parametrize("name", ["qwen2.5", "qwen3"])
def test_a_native_qwen_tool_call_is_parsed(name):
    tokenizer = family_tokenizer(name)
    policy = HFPolicy(tiny_gpt2(tokenizer, n_embd=16, n_layer=1, n_head=2), tokenizer)
    reply = '<tool_call>\n{"name": "str_replace", "arguments": {"path": "frogtoy.py", "old_str": "a - b", ' \
            '"new_str": "a + b"}}\n</tool_call>'
    ids = policy.encode(reply) + [tokenizer.eos_token_id]
    t = policy.start("Fix it.")
    text = policy.append_reply(t, ids, [0.0] * len(ids))
    assert text == reply  # <tool_call> is a plain added token: it survives decoding
    assert parse_action(text) == Call("str_replace", {"path": "frogtoy.py", "old_str": "a - b", "new_str": "a + b"})


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_an_end_token_the_template_does_not_use_is_an_error_naming_the_right_one(name):
    tokenizer = family_tokenizer(name)
    tokenizer.eos_token = BASE_EOS[name]
    right = "<|eot_id|>" if name == "llama3" else "<|im_end|>"
    with pytest.raises(ChatTemplateError) as e:
        ChatFormat.from_tokenizer(tokenizer)
    assert str(e.value).startswith(f"The tokenizer's eos_token is {BASE_EOS[name]!r}, but its chat template ends "
                                   "an assistant turn with")
    assert f"Set tokenizer.eos_token = {right!r}" in str(e.value)
    with pytest.raises(ChatTemplateError):  # the policy refuses it too, rather than guessing a layout
        HFPolicy(tiny_gpt2(tokenizer, n_embd=16, n_layer=1, n_head=2), tokenizer)


def test_a_template_that_cannot_render_turns_is_an_error():
    tokenizer = family_tokenizer("qwen3")
    tokenizer.chat_template = "{{ raise_exception('Conversation roles must alternate') }}"
    with pytest.raises(ChatTemplateError, match="failed to render a user/assistant/user conversation"):
        ChatFormat.from_tokenizer(tokenizer)
    tokenizer.chat_template = "{{ messages[-1]['content'] }}"  # only the last message
    with pytest.raises(ChatTemplateError, match="does not render each message once"):
        ChatFormat.from_tokenizer(tokenizer)
