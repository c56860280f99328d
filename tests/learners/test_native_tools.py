"""The bundled policy with native tool calls: the prompt carries our tools as the family's chat template
renders them (``apply_chat_template(tools=openai_tools())``), a reply holding one native call is answered in
the template's tool-response layout, and the trajectory's tokens read exactly as the template renders that
conversation. Families: the saved tokenizer configs of Qwen2.5-Instruct, Qwen3 and Llama-3.2-Instruct
(``data/tokenizers``), over a small BPE with their special tokens, and a tiny GPT-2 built from a config.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from frog_gym.learners.grpo import GRPOConfig
from frog_gym.learners.toy import tiny_gpt2, train_tokenizer

from frog_gym.agents.hf import ChatFormat, HFPolicy
from frog_gym.env.toolcalls import ToolCall, answers_a_call, parse_tool_calls, tool_message
from frog_gym.env.toolspec import openai_tools

DATA = Path(__file__).parent / "data" / "tokenizers"
DATE = {"date_string": "04 Dec 2026"}
PROMPT = "Fix frogtoy.subtract: it adds."
CALL = ToolCall("call_1_0", "str_replace", {"path": "frogtoy.py", "old_str": "c + d", "new_str": "c - d"})
OUTPUT = "Edited /testbed/frogtoy.py."


def family_tokenizer(name: str):
    config = json.loads((DATA / name / "tokenizer_config.json").read_text())
    decoder = config["added_tokens_decoder"].values()
    tokenizer = train_tokenizer([PROMPT, OUTPUT, json.dumps(CALL.arguments)] * 4, vocab_size=400,
                                chat_template=config["chat_template"],
                                special=tuple(t["content"] for t in decoder if t["special"]),
                                eos=config["eos_token"], pad=config.get("pad_token") or config["eos_token"])
    tokenizer.add_tokens([t["content"] for t in decoder if not t["special"]])
    if config.get("bos_token"):
        tokenizer.bos_token = config["bos_token"]
    return tokenizer


@pytest.mark.parametrize("name", ["qwen2.5", "qwen3", "llama3.2"])
def test_a_native_call_and_its_tool_response_tokenize_as_the_template_renders_them(name):
    tokenizer = family_tokenizer(name)
    tools = openai_tools()
    chat = ChatFormat.from_tokenizer(tokenizer, tools, **DATE)
    assert chat.tool_between is not None and chat != ChatFormat.from_tokenizer(tokenizer, **DATE)
    policy = HFPolicy(tiny_gpt2(tokenizer, n_embd=16, n_layer=1, n_head=2), tokenizer, chat=chat)
    messages = [{"role": "user", "content": PROMPT},
                {"role": "assistant", "content": "", "tool_calls": [CALL.message()]}, tool_message(CALL, OUTPUT)]
    full = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True, **DATE)
    start = tokenizer.apply_chat_template(messages[:1], tools=tools, tokenize=False, add_generation_prompt=True,
                                          **DATE)
    assert full.startswith(start) and '"name": "str_replace"' in start  # the schemas are in the prompt
    written = full[len(start):]
    reply = written[: written.index(tokenizer.eos_token)]  # what the template has the model write
    assert [(c.name, c.arguments) for c in parse_tool_calls(reply).calls] == [(CALL.name, CALL.arguments)]
    assert answers_a_call(reply)

    t = policy.start(PROMPT)
    sampled = tokenizer.encode(reply, add_special_tokens=False) + [tokenizer.eos_token_id]
    policy.append_reply(t, sampled, [-1.0] * len(sampled))
    policy.observe(t, OUTPUT, tool=True)
    assert tokenizer.decode(t.ids) == full
    assert [i for i, m in zip(t.ids, t.mask) if m] == sampled  # only the sampled reply is trained


def test_a_template_without_tools_and_a_user_turn_keep_the_plain_layout():
    toy = train_tokenizer([PROMPT], vocab_size=300)  # the toy family's template renders no tools
    assert ChatFormat.from_tokenizer(toy, openai_tools()) == ChatFormat.from_tokenizer(toy) == ChatFormat()
    tokenizer = family_tokenizer("qwen2.5")
    policy = HFPolicy(tiny_gpt2(tokenizer, n_embd=16, n_layer=1, n_head=2), tokenizer, tools=openai_tools())
    t = policy.start(PROMPT)
    ids = tokenizer.encode("no call", add_special_tokens=False) + [tokenizer.eos_token_id]
    policy.append_reply(t, ids, [0.0] * len(ids))
    before = len(t)
    policy.observe(t, "Error: Could not read a tool call from the text.")  # not a tool's output: a user turn
    assert tokenizer.decode(t.ids[before:]).startswith("\n<|im_start|>user\nError:")
    assert not answers_a_call("no call") and not answers_a_call({"tool": "submit"})
    assert not answers_a_call('<tool_call>{"name": "bash"}</tool_call><tool_call>{"name": "submit"}</tool_call>')
    assert GRPOConfig(model="m").native_tools is True


class ScriptedReplies:
    """The rollout engine's interface over a real policy, writing scripted replies (in order) as if sampled."""

    def __init__(self, policy: HFPolicy, replies: list[str]):
        self.policy, self.replies, self.tokenizer = policy, replies, policy.tokenizer

    def start(self, prompt):
        return self.policy.start(prompt)

    def observe(self, trajectory, observation, tool=False):
        self.policy.observe(trajectory, observation, tool)

    def room(self, trajectory):
        return self.policy.room(trajectory)

    def generate(self, trajectories):
        out = []
        for t in trajectories:
            ids = self.policy.encode(self.replies[len(t.turns)]) + [self.tokenizer.eos_token_id]
            out.append(self.policy.append_reply(t, ids, [0.0] * len(ids)))
        return out


def test_the_grpo_rollout_runs_native_calls_with_a_qwen_template(tmp_path):
    """The learner loads a Qwen2.5-template model with the tools in its prompt; episodes whose replies are
    native calls are stepped, answered as tool responses, and graded."""
    from frog_gym.learners.grpo import GRPO

    from frog_gym.curriculum import CurriculumConfig, CurriculumState

    task = "frogtoy__handwritten-0001"
    tokenizer = family_tokenizer("qwen2.5")
    tiny_gpt2(tokenizer, n_embd=16, n_layer=1, n_head=2, n_positions=16384).save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    cfg = GRPOConfig(model=str(tmp_path / "model"), env_id="FrogSWE-Toy-v0", task_ids=(task,), groups_per_update=1,
                     group_size=2, max_turns=3, num_envs=2, env_workers=1, max_new_tokens=256, torch_threads=1,
                     tensorboard=False, output_dir=str(tmp_path / "out"))
    learner = GRPO(cfg, CurriculumState([task], CurriculumConfig(seed=0)))
    fix = {"path": "frogtoy.py", "old_str": "return a - b", "new_str": "return a + b"}
    learner.sampler = ScriptedReplies(learner.policy, [
        f'<tool_call>\n{json.dumps({"name": "str_replace", "arguments": fix})}\n</tool_call>',
        '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'])
    assert learner.policy.chat.tool_between == "\n<|im_start|>user\n<tool_response>\n"
    episodes, _ = learner.collect()
    for e in episodes:
        assert e.terminated and e.env_reward == 1.0 and e.reward == 1.0 and e.turns == 2
        text = tokenizer.decode(e.trajectory.ids)
        assert "# Tools" in text and text.count("<tool_response>\nEdited /testbed/frogtoy.py.") == 1
