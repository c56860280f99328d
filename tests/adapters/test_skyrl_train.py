"""The skyrl-train dataset builder and entry point, with skyrl's own ``PromptDataset``.

skyrl-train's generator and trainer cannot be imported here: they ship in the ``skyrl`` package, whose
0.4 release needs Python 3.12 (this project's tests run on 3.11, and no CPU torch for 3.12 is installable
offline), and whose 0.3 release fails to import its generator under 3.11 (pydantic rejects its
``typing.TypedDict``). So each row is played the way skyrl-train's generator plays it, with
``skyrl_gym.make(row's env_class, env_config={}, extras=row's extras)``, ``init``, then ``step`` per reply,
and the observations are rendered with the chat-template keywords the entry point sets.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="the 'skyrl' extra is not installed")

from frog_gym.adapters.skyrl_train import DEFAULTS, ENV_CLASS, build_dataset, main, overrides
from frog_gym.errors import FrogGymError
from frog_gym.env.toolspec import openai_tools

TASK = "frogtoy__handwritten-0002"
QWEN3 = Path(__file__).parents[1] / "learners" / "data" / "tokenizers" / "qwen3" / "tokenizer_config.json"


def qwen3_tokenizer():
    pytest.importorskip("tokenizers")
    from frog_gym.learners.toy import train_tokenizer

    config = json.loads(QWEN3.read_text())
    decoder = config["added_tokens_decoder"].values()
    tokenizer = train_tokenizer(["Fix the bug in frogtoy."], vocab_size=300, chat_template=config["chat_template"],
                                special=tuple(t["content"] for t in decoder if t["special"]), eos="<|im_end|>",
                                pad="<|endoftext|>")
    tokenizer.add_tokens([t["content"] for t in decoder if not t["special"]])
    return tokenizer


def call(name: str, **arguments) -> str:
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call>'


def test_rows_read_by_skyrls_prompt_dataset_play_a_graded_episode_with_native_calls(tmp_path):
    dataset_module = pytest.importorskip("skyrl.train.dataset.dataset", reason="skyrl (skyrl-train) is not installed")
    from frog_gym.adapters.skyrl import register

    tokenizer = qwen3_tokenizer()
    path = build_dataset([TASK], tmp_path / "train.parquet", env_id="FrogSWE-Toy-v0",
                         env_kwargs={"max_steps": 10, "max_episode_steps": 10}, repeats=2)
    data = dataset_module.PromptDataset([str(path)], tokenizer, max_prompt_length=512, num_workers=1)
    assert len(data) == 2
    messages, env_class, extras, uid = data[1]
    assert env_class == ENV_CLASS and uid == "1" and messages[0]["role"] == "system"
    assert extras["task_id"] == TASK and extras["reward_spec"] == {"method": "env", "ground_truth": TASK}
    assert extras["extra_info"] == {"index": 1}

    env = skyrl_gym.make(register(), env_config={}, extras={**extras, "max_turns": 8})  # as the generator does
    try:
        chat, meta = env.init(messages)
        assert [m["role"] for m in chat] == ["system", "user"] and meta["task_id"] == TASK
        out = env.step("Let me look.\n" + call("bash", command="grep -n 'def subtract' -A2 frogtoy.py"))
        [obs] = out["observations"]
        assert obs["role"] == "tool" and obs["tool_call_id"] == "call_1_0" and "return c + d" in obs["content"]
        chat += [{"role": "assistant", "content": "Let me look."}, obs]
        rendered = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True,
                                                 tools=openai_tools())  # generator.chat_template_kwargs
        assert '"name": "str_replace"' in rendered and "<tool_response>\n" in rendered and "return c + d" in rendered
        out = env.step(call("str_replace", path="frogtoy.py", old_str="    return c + d\n",
                            new_str="    return c - d\n"))
        assert out["observations"][0]["role"] == "tool" and not out["done"]
        out = env.step(call("submit"))
        assert out["done"] and out["reward"] == 1.0 and out["metadata"]["resolved"]
    finally:
        env.close()


def test_jsonl_rows_and_the_entry_points_settings(tmp_path):
    path = build_dataset([TASK, "frogtoy__handwritten-0001"], tmp_path / "train.jsonl", env_id="FrogSWE-Toy-v0")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["task_id"] for r in rows] == [TASK, "frogtoy__handwritten-0001"]
    assert {r["env_class"] for r in rows} == {ENV_CLASS} and json.loads(rows[0]["env_kwargs"]) == {}
    assert overrides(["generator.max_turns=8", "trainer.epochs=1"]) == [
        "environment.env_class=frog_swe", "generator.use_conversation_multi_turn=true", "generator.max_turns=8",
        "trainer.epochs=1"]
    assert set(DEFAULTS) == {"environment.env_class", "generator.use_conversation_multi_turn", "generator.max_turns"}
    with pytest.raises(ValueError, match="at least one task id"):
        build_dataset([], tmp_path / "x.parquet")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the Python-version check applies below 3.12")
def test_the_entry_point_says_which_python_skyrl_train_needs():
    with pytest.raises(FrogGymError, match=r"skyrl-train \(the 'skyrl' package, 0.4 or newer\) needs Python 3.12"):
        main(["trainer.epochs=1"])
