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


def test_trl_reads_the_toolspec_schemas_from_the_methods():
    """TRL turns each public method into a tool with transformers' ``get_json_schema``: that schema is the
    toolspec's, for every tool (TRL adds a return entry and marks an optional argument nullable)."""
    from transformers.utils import get_json_schema

    from frog_gym.env.toolspec import openai_tools

    for want in openai_tools():
        got = get_json_schema(getattr(FrogSWEToolEnv, want["function"]["name"]))["function"]
        for prop in got["parameters"]["properties"].values():
            prop.pop("nullable", None)
        got["parameters"].setdefault("required", [])
        assert {k: got[k] for k in ("name", "description", "parameters")} == want["function"]


def test_the_edit_tools_run_in_an_episode():
    env = FrogSWEToolEnv("FrogSWE-Toy-v0", max_steps=6)
    try:
        env.reset(task_id=TASKS[0])
        assert env.insert("frogtoy.py", 0, "# a comment\n").startswith("Inserted")
        assert "# a comment" in env.view("frogtoy.py", [1, 2])
        assert env.undo_edit("frogtoy.py").startswith("Restored")
        assert "# a comment" not in env.view("frogtoy.py")
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


@pytest.mark.slow
def test_trl_runs_a_native_tool_call_and_rewards_it(tmp_path):
    """A tiny model taught one native call (Qwen3's ``<tool_call>``, the fix of the task) makes it inside
    GRPOTrainer: TRL parses it, runs our ``str_replace`` in the sandbox, and grades the fix 1.0."""
    import json

    from frog_gym.learners.toy import tiny_gpt2, train_tokenizer
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen3_chat_template

    from frog_gym.env.prompt import render_prompt
    from frog_gym.catalog.task import load_task

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    fix = {"path": "frogtoy.py", "old_str": "return a - b", "new_str": "return a + b"}
    call = f'<tool_call>\n{json.dumps({"name": "str_replace", "arguments": fix})}\n</tool_call>'
    tokenizer = train_tokenizer([render_prompt(load_task(TASKS[0]))] * 10 + [call] * 20, 1500,
                                chat_template=qwen3_chat_template, eos="<|im_end|>", pad="<|endoftext|>",
                                special=("<|endoftext|>", "<|im_start|>", "<|im_end|>"))
    torch.manual_seed(0)
    model = tiny_gpt2(tokenizer, n_embd=32, n_positions=4096)
    env = FrogSWEToolEnv("FrogSWE-Toy-v0")
    prompt = [{"role": "user", "content": env.reset(task_id=TASKS[0])}]
    env.env.close()
    methods = [getattr(FrogSWEToolEnv, n) for n in sorted(vars(FrogSWEToolEnv)) if not n.startswith("_")
               and n not in ("reset", "get_reward")]  # the tools as TRL lists them
    context = tokenizer.apply_chat_template(prompt, tools=methods, add_generation_prompt=True, return_dict=False)
    reply = tokenizer.encode(call, add_special_tokens=False) + [tokenizer.eos_token_id]
    ids = torch.tensor([context + reply])
    labels = ids.clone()
    labels[0, : len(context)] = -100
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    for _ in range(60):  # teach the reply to this prompt
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    args = GRPOConfig(output_dir=str(tmp_path / "out"), max_steps=1, per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=len(reply) + 4, max_tool_calling_iterations=1, use_cpu=True, bf16=False,
                      report_to="none", save_strategy="no", logging_steps=1)
    trainer = GRPOTrainer(model=model, args=args, processing_class=tokenizer,
                          train_dataset=task_dataset(TASKS[:1], repeats=2),
                          environment_factory=environment_factory("FrogSWE-Toy-v0", max_steps=3))
    trainer.train()
    log = trainer.state.log_history[0]
    assert log["tools/call_frequency"] == 1.0 and log["tools/failure_frequency"] == 0.0
    assert log["rewards/FrogSWEToolEnv/mean"] > 0  # sampled at temperature 1: at least one made the fix
