"""The TRL adapter: GRPOTrainer with ``environment_factory`` runs two steps on FrogSWE tasks with a tiny model."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl", reason="needs the trl extra")

from frog_gym.learners.trl_env import FrogSWEToolEnv, environment_factory, task_dataset

TASKS = ["frogtoy__handwritten-0001", "frogtoy__handwritten-0002"]


def test_tool_env_contract():
    env = FrogSWEToolEnv("FrogSWE-Toy-v0", max_steps=3)
    try:
        prompt = env.reset(task_id=TASKS[0], prompt=[])
        assert "<issue>" in prompt and "add(2, 3)" in prompt
        assert "Edited" in env.str_replace("frogtoy.py", "return a - b", "return a + b")
        assert env.get_reward() == 1.0  # not submitted: graded as it stands
        env.reset(task_id=TASKS[0])
        env.submit()
        assert env.get_reward() == 0.0 and "over" in env.bash("ls")
    finally:
        env.env.close()


def _tiny_qwen_style(path):
    """A tiny model whose tokenizer uses the Qwen3 chat template (one TRL can parse tool calls from)."""
    import inspect
    import json

    from frog_gym.learners.toy import tiny_gpt2, train_tokenizer
    from trl.chat_template_utils import qwen3_chat_template

    from frog_gym.env.prompt import render_prompt
    from frog_gym.catalog.task import load_task

    tools = [inspect.getdoc(getattr(FrogSWEToolEnv, name)) for name in ("bash", "view", "str_replace", "create",
                                                                          "submit")]
    corpus = [render_prompt(load_task(t)) for t in TASKS] * 10 + tools * 10 + [
        "<|im_start|>user\nfix frogtoy.py<|im_end|>\n<|im_start|>assistant\n<tool_call>\n"
        + json.dumps({"name": "submit", "arguments": {}}) + "\n</tool_call><|im_end|>"] * 10
    tokenizer = train_tokenizer(corpus, 1500, chat_template=qwen3_chat_template,
                                special=("<|endoftext|>", "<|im_start|>", "<|im_end|>"), eos="<|im_end|>",
                                pad="<|endoftext|>")
    model = tiny_gpt2(tokenizer, n_embd=32, n_positions=4096)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.mark.slow
def test_an_infrastructure_failure_scores_none(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")  # a sandbox that cannot start
    env = environment_factory("FrogSWE-Toy-v0", backend="docker")()
    text = env.reset(task_id="frogtoy__handwritten-0001")
    assert text.startswith("Infrastructure failure (not scored): No Docker engine answers")
    assert env.bash("ls") == "The episode is over; no more tool calls are needed."
    assert env.get_reward() is None and env.infra_failure.startswith("No Docker engine answers")
    env.env.close()


def test_grpo_trainer_two_steps_on_frogswe(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    path = _tiny_qwen_style(tmp_path / "model")
    args = GRPOConfig(output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=2,
                      num_generations=2, max_completion_length=16, learning_rate=1e-4, logging_steps=1,
                      report_to="none", use_cpu=True, bf16=False, save_strategy="no", max_tool_calling_iterations=2)
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(path), args=args,
                          processing_class=AutoTokenizer.from_pretrained(path),
                          train_dataset=task_dataset(TASKS, repeats=2),
                          environment_factory=environment_factory("FrogSWE-Toy-v0", max_steps=3))
    trainer.train()
    assert trainer.state.global_step == 2
    rewards = [log[k] for log in trainer.state.log_history for k in log if k.startswith("rewards/FrogSWEToolEnv")]
    assert rewards, trainer.state.log_history
