"""The verl adapter, driven by verl's own classes: its ``RLHFDataset`` reads the parquet we write, its
``AgentLoopWorker`` (built from verl's own trainer config) runs :class:`FrogSWEAgentLoop` over real FrogSWE
episodes with tiny models built from configs, and one GRPO update is made with verl's advantage
estimator and policy loss on what the worker returned. Each runs for a Qwen2.5 and a Llama 3.2 model (their
published chat templates; verl picks its token builder by model type).

What is not verl's here: the rollout server. verl's agent loops ask a vLLM, SGLang or TensorRT-LLM server
for tokens (``RolloutReplicaRegistry`` has no other), none of which runs on a CPU; the tests answer
``generate`` from scripted replies, with verl's ``TokenOutput``. The update step is verl's
``compute_advantage`` and ``compute_policy_loss_vanilla`` with a plain torch optimizer: verl's training
engines (FSDP, FSDP2, Megatron, ...) are registered for CUDA and NPU devices only.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

pytest.importorskip("verl", reason="the 'verl' extra is not installed")
torch = pytest.importorskip("torch")

from frog_gym.adapters.verl import AGENT_LOOPS_YAML, AGENT_NAME, build_dataset, write_recipe

TASK = "frogtoy__handwritten-0002"
TOKENIZERS = Path(__file__).parents[1] / "learners" / "data" / "tokenizers"
FIX = {"path": "frogtoy.py", "old_str": "    return c + d\n", "new_str": "    return c - d\n"}


def hermes(name: str, **arguments) -> str:
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call>'


def llama(name: str, **arguments) -> str:
    return json.dumps({"name": name, "parameters": arguments})


def scripts(call) -> dict[str, list[str]]:
    """Each episode's replies, as a model of the family writes them."""
    return {"fixes": ["Let me find subtract.\n" + call("bash", command="grep -n 'def subtract' -A2 frogtoy.py")
                      if call is hermes else call("bash", command="grep -n 'def subtract' -A2 frogtoy.py"),
                      call("str_replace", **FIX), call("submit")],
            "gives_up": ["It looks fine to me.", call("submit")]}  # the first reply has no call: the env says so


FAMILIES = {  # tokenizer config, how calls are written, where a tool's output goes, the model class
    "qwen2.5": (hermes, "<tool_response>", "Qwen2"),
    "llama3.2": (llama, "<|start_header_id|>ipython<|end_header_id|>", "Llama"),
}


def tiny_model(family: str, tmp: Path):
    """A 1-layer model of the family's architecture from a config, with the family's published chat template
    and special tokens over a small BPE (saved like a checkpoint, as verl loads one)."""
    import transformers
    from frog_gym.learners.toy import train_tokenizer

    call, _, arch = FAMILIES[family]
    config = json.loads((TOKENIZERS / family / "tokenizer_config.json").read_text())
    decoder = config["added_tokens_decoder"].values()
    text = [r for script in scripts(call).values() for r in script] * 4
    tokenizer = train_tokenizer(text, vocab_size=600, chat_template=config["chat_template"],
                                special=tuple(t["content"] for t in decoder if t["special"]), eos=config["eos_token"],
                                pad=config.get("pad_token") or "<|finetune_right_pad_id|>")
    tokenizer.add_tokens([t["content"] for t in decoder if not t["special"]])
    if config.get("bos_token"):
        tokenizer.bos_token = config["bos_token"]
    torch.manual_seed(0)
    model_config = getattr(transformers, f"{arch}Config")(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=16384, tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id)
    model = getattr(transformers, f"{arch}ForCausalLM")(model_config)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    return model, tokenizer


class ScriptedServer:
    """verl's LLM server interface, ``generate(request_id, prompt_ids=, sampling_params=) -> TokenOutput``,
    answered from scripts: a new request id (one episode) takes the next script, each call its next reply."""

    def __init__(self, tokenizer, scripts):
        self.tokenizer, self.scripts, self.episodes = tokenizer, list(scripts), {}
        self.replies: dict[str, list[list[int]]] = {}

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        if request_id not in self.episodes:
            self.episodes[request_id] = iter(self.scripts.pop(0))
        ids = self.tokenizer.encode(next(self.episodes[request_id]), add_special_tokens=False)
        ids.append(self.tokenizer.eos_token_id)
        self.replies.setdefault(request_id, []).append(ids)
        return TokenOutput(token_ids=ids, log_probs=[-1.0] * len(ids), stop_reason="completed")


def verl_config(model_dir: Path, agent_loops: Path):
    """verl's own PPO trainer config (its hydra defaults), pointed at the tiny model and our agent loop."""
    import verl.trainer.config
    from hydra import compose, initialize_config_dir

    overrides = [f"actor_rollout_ref.model.path={model_dir}", "actor_rollout_ref.rollout.name=vllm",
                 f"actor_rollout_ref.rollout.agent.agent_loop_config_path={agent_loops}",
                 "actor_rollout_ref.rollout.multi_turn.max_tool_response_length=4096",
                 "data.max_prompt_length=8192", "data.max_response_length=2048", "data.return_raw_chat=True",
                 "algorithm.adv_estimator=grpo", "data.train_batch_size=1", "actor_rollout_ref.rollout.n=2",
                 "actor_rollout_ref.actor.ppo_mini_batch_size=1",
                 "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2"]
    with initialize_config_dir(config_dir=os.path.dirname(verl.trainer.config.__file__), version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def rollout(request, tmp_path_factory):
    """Two episodes of one task, a group as verl's trainer makes it (one row repeated, one uid), played by
    verl's AgentLoopWorker, for a Qwen2.5 and a Llama 3.2 model (verl picks its token builder by model type)."""
    import numpy as np
    from verl import DataProto
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    tmp = tmp_path_factory.mktemp("verl")
    family = request.param
    model, tokenizer = tiny_model(family, tmp / "model")
    files = write_recipe([TASK], tmp / "recipe", env_id="FrogSWE-Toy-v0", max_turns=6,
                         env_kwargs={"max_steps": 10, "max_episode_steps": 10})
    config = verl_config(tmp / "model", Path(files["agent_loops"]))
    dataset = RLHFDataset(files["train"], tokenizer, config.data)
    batch = DataProto.from_single_dict(collate_fn([dataset[0]]))
    batch.non_tensor_batch["uid"] = np.array(["group-0"], dtype=object)
    batch = batch.repeat(repeat_times=2, interleave=True)
    call, tool_mark, _ = FAMILIES[family]
    server = ScriptedServer(tokenizer, scripts(call).values())
    worker = AgentLoopWorker(config, llm_client=server)
    output = asyncio.run(worker.generate_sequences(batch))
    return {"model": model, "tokenizer": tokenizer, "config": config, "batch": batch, "output": output,
            "server": server, "dataset": dataset, "call": call, "tool_mark": tool_mark}


def test_build_dataset_is_read_by_verls_rlhf_dataset(tmp_path):
    from frog_gym.learners.toy import train_tokenizer
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    config = json.loads((TOKENIZERS / "qwen2.5" / "tokenizer_config.json").read_text())
    tokenizer = train_tokenizer(["Fix the bug."], vocab_size=300, chat_template=config["chat_template"],
                                special=("<|endoftext|>", "<|im_start|>", "<|im_end|>"), eos="<|im_end|>",
                                pad="<|endoftext|>")
    path = build_dataset([TASK, "frogtoy__handwritten-0001"], tmp_path / "train.parquet", env_id="FrogSWE-Toy-v0",
                         max_turns=5, env_kwargs={"wall_time_s": 60}, repeats=2)
    data = RLHFDataset(str(path), tokenizer, OmegaConf.create({"max_prompt_length": 512, "return_raw_chat": True}))
    assert len(data) == 4
    row = data[2]
    assert row["agent_name"] == AGENT_NAME and row["data_source"] == "frog_gym" and row["index"] == 2
    assert row["raw_prompt"][0]["role"] == "system" and row["tools_kwargs"] == {}
    assert row["extra_info"]["task_id"] == "frogtoy__handwritten-0001" and row["extra_info"]["max_turns"] == 5
    assert json.loads(row["extra_info"]["env_kwargs"]) == {"wall_time_s": 60}
    assert (tmp_path / "train.parquet").exists()
    from hydra.utils import get_class
    from omegaconf import OmegaConf as OC

    from frog_gym.adapters.verl import FrogSWEAgentLoop

    [loop] = OC.create(AGENT_LOOPS_YAML)  # what verl's worker reads from agent_loop_config_path
    assert loop.name == AGENT_NAME and get_class(loop._target_) is FrogSWEAgentLoop
    with pytest.raises(ValueError, match="at least one task id"):
        build_dataset([], tmp_path / "empty.parquet")


@pytest.mark.slow
def test_verls_agent_loop_worker_plays_graded_episodes_with_native_tool_calls(rollout):
    out, tokenizer, server = rollout["output"], rollout["tokenizer"], rollout["server"]
    rewards = out.batch["rm_scores"].sum(-1).tolist()
    resolved = out.non_tensor_batch["frog_resolved"].tolist()
    assert sorted(rewards) == [0.0, 1.0] and sorted(resolved) == [0.0, 1.0]
    assert list(out.non_tensor_batch["frog_infra_failure"]) == ["", ""]
    fixed = rewards.index(1.0)
    # the prompt: the tools as the template renders them, then the env's task prompt
    prompt = tokenizer.decode(out.batch["prompts"][fixed], skip_special_tokens=False)
    assert '"name": "str_replace"' in prompt and "frogtoy" in prompt
    # the response: the mask is 1 exactly on the tokens the server sampled, in order
    for row in range(2):
        mask = out.batch["response_mask"][row].bool()
        trained = out.batch["responses"][row][mask].tolist()
        sampled = next(ids for ids in server.replies.values() if len(ids) == (3 if row == fixed else 2))
        assert trained == [t for ids in sampled for t in ids]
    context = tokenizer.decode(out.batch["responses"][fixed][~out.batch["response_mask"][fixed].bool()])
    assert context.count(rollout["tool_mark"]) == 2 and "Edited /testbed/frogtoy.py" in context
    gave_up = tokenizer.decode(out.batch["responses"][1 - fixed][~out.batch["response_mask"][1 - fixed].bool()])
    assert "Could not read a tool call" in gave_up and rollout["tool_mark"] not in gave_up  # a user turn


@pytest.mark.slow
def test_one_grpo_update_with_verls_advantage_and_policy_loss(rollout):
    from verl.trainer.ppo.core_algos import AdvantageEstimator, compute_policy_loss_vanilla
    from verl.trainer.ppo.ray_trainer import compute_advantage
    from verl.utils import omega_conf_to_dataclass

    model, out, config = rollout["model"], rollout["output"], rollout["config"]
    data = out.union(rollout["batch"].select(non_tensor_batch_keys=["uid"]))
    data.batch["token_level_rewards"] = data.batch["rm_scores"]
    data = compute_advantage(data, AdvantageEstimator.GRPO)
    adv = data.batch["advantages"]
    mask = data.batch["response_mask"].float()
    assert (adv * mask).sum(-1).gt(0).tolist() == data.batch["rm_scores"].sum(-1).gt(0).tolist()

    actor = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    width = data.batch["responses"].shape[1]

    def response_logprobs():
        logits = model(input_ids=data.batch["input_ids"], attention_mask=data.batch["attention_mask"],
                       position_ids=data.batch["position_ids"]).logits[:, -width - 1:-1]
        return torch.log_softmax(logits.float(), -1).gather(-1, data.batch["responses"][..., None]).squeeze(-1)

    model.train()
    with torch.no_grad():
        old = response_logprobs()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    loss, metrics = compute_policy_loss_vanilla(old, response_logprobs(), adv, mask, "token-mean", actor)
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss) and "actor/pg_clipfrac" in metrics
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    with torch.no_grad():
        new = response_logprobs()
    gain = ((new - old) * mask).sum(-1) / mask.sum(-1)
    fixed = data.batch["rm_scores"].sum(-1).argmax()
    assert gain[fixed] > 0 and gain[fixed] > gain[1 - fixed]  # the resolved episode's replies gained most


@pytest.mark.slow
def test_an_infrastructure_failure_trains_no_token(rollout, tmp_path, monkeypatch):
    import numpy as np
    from verl import DataProto
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")  # a sandbox that cannot start
    path = build_dataset([TASK], tmp_path / "infra.parquet", env_id="FrogSWE-Toy-v0",
                         env_kwargs={"backend": "docker"})
    dataset = RLHFDataset(str(path), rollout["tokenizer"], rollout["config"].data)
    batch = DataProto.from_single_dict(collate_fn([dataset[0]]))
    batch.non_tensor_batch["uid"] = np.array(["group-1"], dtype=object)
    server = ScriptedServer(rollout["tokenizer"], [scripts(rollout["call"])["fixes"]])
    out = asyncio.run(AgentLoopWorker(rollout["config"], llm_client=server).generate_sequences(batch))
    assert "docker" in out.non_tensor_batch["frog_infra_failure"][0].lower()
    assert out.batch["response_mask"].sum() == 0 and out.non_tensor_batch["frog_resolved"].tolist() == [0.0]
    assert server.replies == {}  # the model was never asked
