"""The optional vLLM rollout engine: what can be checked without vLLM or a GPU. Its interface is the HF
engine's (the rollout calls both the same way), its log-prob reader, and the error that names the extra."""

from __future__ import annotations

import importlib.util
import inspect

import pytest

torch = pytest.importorskip("torch")

from frog_gym.learners.grpo import GRPO, GRPOConfig, RolloutEngine
from frog_gym.learners.vllm_engine import VLLMPolicy, make_sampler, sampled_logprobs

from frog_gym.agents.hf import HFPolicy

no_vllm = pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")


def test_the_vllm_engine_has_the_hf_engines_interface():
    members = [name for name in RolloutEngine.__dict__ if not name.startswith("_")]
    assert set(members) >= {"start", "observe", "room", "generate"}
    for name in members:
        hf, vl = getattr(HFPolicy, name, None), getattr(VLLMPolicy, name, None)
        assert vl is not None, f"VLLMPolicy lacks {name}"
        if callable(hf):
            assert inspect.signature(vl) == inspect.signature(hf), name
    for name in ("tokenizer", "sampling", "max_context"):  # attributes of an HFPolicy, properties here
        assert isinstance(inspect.getattr_static(VLLMPolicy, name), property)
    assert inspect.signature(VLLMPolicy.sync_weights).parameters.keys() == {"self", "model"}


def test_the_hf_engine_is_the_policy_itself(tiny_model):
    policy = HFPolicy.from_pretrained(tiny_model)
    assert make_sampler(policy, "hf", tiny_model) is policy


def test_vllm_log_probs_are_read_per_sampled_token():
    class Logprob:
        def __init__(self, logprob):
            self.logprob = logprob

    assert sampled_logprobs([3, 9, 3], [{3: Logprob(-0.25)}, {9: Logprob(-2.0), 3: Logprob(-0.1)},
                                        {3: Logprob(-0.5)}]) == [-0.25, -2.0, -0.5]
    with pytest.raises(ValueError, match="logprobs=0"):
        sampled_logprobs([3], None)


@no_vllm
def test_requesting_vllm_without_it_names_the_extra(tiny_model, tmp_path):
    cfg = GRPOConfig(model=tiny_model, env_id="FrogSWE-Toy-v0", rollout_engine="vllm", torch_threads=1,
                     tensorboard=False, output_dir=str(tmp_path))
    with pytest.raises(ImportError) as e:
        GRPO(cfg)
    assert str(e.value) == ("rollout_engine='vllm' needs vLLM (and a CUDA GPU); install the extra: "
                            "pip install 'frog-gym[vllm]', or set rollout_engine='hf'.")


def test_engine_settings_are_checked_in_the_config():
    with pytest.raises(ValueError, match=r"rollout_engine='vlm'; use one of hf, vllm\."):
        GRPOConfig(model="m", rollout_engine="vlm")
    with pytest.raises(ValueError, match="set lora_rank=0, or rollout_engine='hf'"):
        GRPOConfig(model="m", rollout_engine="vllm", lora_rank=8)
    with pytest.raises(ValueError, match="set top_p=1.0"):
        GRPOConfig(model="m", top_p=0.9)
