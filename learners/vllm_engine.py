"""vLLM as the rollout engine of the bundled GRPO (``GRPOConfig(rollout_engine="vllm")``; the ``vllm`` extra).

:class:`VLLMPolicy` writes replies for the same :class:`~frog_gym.agents.hf.Trajectory` objects as
:class:`~frog_gym.agents.hf.HFPolicy`, which it wraps: the HF policy keeps the tokenizer, the chat layout,
the context bookkeeping and the model being trained; vLLM only samples. Prompts go to vLLM as token ids
(nothing is re-tokenized), replies come back as ids with the log-probability of each sampled token under
vLLM's sampling distribution (``logprobs_mode="processed_logprobs"``: after temperature), and are appended
by the HF policy's own :meth:`~frog_gym.agents.hf.HFPolicy.append_reply` (the same end-of-turn rule). The
learner's importance ratio is taken against those recorded numbers, which differ from the trainer's (other
kernels, other precision); ``sampler_logp_gap`` in the metrics shows by how much. After every update the
trained weights are copied into vLLM (:meth:`VLLMPolicy.sync_weights`).

Sampling is the full softmax at the policy's temperature: ``top_k=-1``, ``top_p=1``, ``min_p=0`` and no
penalties, whatever the checkpoint's generation config says (vLLM reads it too unless told otherwise).

Needs a CUDA GPU and ``pip install 'frog-gym[vllm]'``; vLLM runs in the learner's process, sharing the GPU
(``gpu_memory_utilization``). Full fine-tuning only (``lora_rank=0``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from frog_gym.agents.hf import HFPolicy, Trajectory, rooms_left


def require_vllm() -> Any:
    """Import vllm, or say which extra installs it."""
    try:
        import vllm
    except ImportError:
        raise ImportError("rollout_engine='vllm' needs vLLM (and a CUDA GPU); install the extra: "
                          "pip install 'frog-gym[vllm]', or set rollout_engine='hf'.") from None
    return vllm


class VLLMPolicy:
    """Samples with vLLM into the trajectories of ``policy``; the rest of its interface is ``policy``'s.

    Args:
        policy: the trained :class:`HFPolicy` (tokenizer, chat layout, sampling settings, model).
        model_path: the checkpoint vLLM loads first (``save_pretrained`` folder or hub id).
        gpu_memory_utilization: the share of GPU memory vLLM may take.
        seed: vLLM's sampling seed.

    Example:
        >>> sampler = VLLMPolicy(HFPolicy.from_pretrained(path), path)  # doctest: +SKIP
        >>> t = sampler.start("Fix the bug.")  # doctest: +SKIP
        >>> [text] = sampler.generate([t])  # doctest: +SKIP
        >>> sampler.sync_weights(trained_model)  # after an optimizer step  # doctest: +SKIP
    """

    def __init__(self, policy: HFPolicy, model_path: str | os.PathLike[str], *, gpu_memory_utilization: float = 0.3,
                 seed: int = 0):
        vllm = require_vllm()
        # The weights are copied in through the engine's model object, which only this process can reach.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        self.policy = policy
        kwargs = dict(model=str(model_path), tokenizer=str(model_path), seed=seed,
                      gpu_memory_utilization=gpu_memory_utilization, max_model_len=policy.max_context,
                      dtype=str(next(policy.model.parameters()).dtype).removeprefix("torch."),
                      generation_config="vllm", enable_prefix_caching=True)
        try:
            self.llm = vllm.LLM(**kwargs, logprobs_mode="processed_logprobs")
        except TypeError:  # vLLM before 0.10 has no logprobs_mode; its log-probs are already post-temperature
            self.llm = vllm.LLM(**kwargs)
        self._vllm = vllm

    # -- the interface the rollout uses, shared with HFPolicy --

    @property
    def tokenizer(self) -> Any:
        return self.policy.tokenizer

    @property
    def sampling(self) -> Any:
        return self.policy.sampling

    @property
    def max_context(self) -> int:
        return self.policy.max_context

    def start(self, prompt: str) -> Trajectory:
        """See :meth:`HFPolicy.start`."""
        return self.policy.start(prompt)

    def observe(self, trajectory: Trajectory, observation: str, tool: bool = False) -> None:
        """See :meth:`HFPolicy.observe`."""
        self.policy.observe(trajectory, observation, tool)

    def room(self, trajectory: Trajectory) -> int:
        """See :meth:`HFPolicy.room`."""
        return self.policy.room(trajectory)

    def generate(self, trajectories: Sequence[Trajectory]) -> list[str]:
        """Sample one reply per trajectory with vLLM; append ids and log-probs as :meth:`HFPolicy.generate` does.

        Raises:
            ContextFull: a trajectory has no room for a reply; nothing is appended to any of them.
        """
        if not trajectories:
            return []
        rooms = rooms_left(self, trajectories)
        s = self.sampling
        params = [self._vllm.SamplingParams(
            n=1, temperature=s.temperature, top_p=s.top_p, top_k=-1, min_p=0.0, repetition_penalty=1.0,
            presence_penalty=0.0, frequency_penalty=0.0, max_tokens=room, logprobs=0,
            stop_token_ids=[self.tokenizer.eos_token_id], ignore_eos=False, skip_special_tokens=False)
            for room in rooms]
        outputs = self.llm.generate([{"prompt_token_ids": list(t.ids)} for t in trajectories], params, use_tqdm=False)
        texts = []
        for t, out in zip(trajectories, outputs):
            completion = out.outputs[0]
            ids = list(completion.token_ids)
            texts.append(self.policy.append_reply(t, ids, sampled_logprobs(ids, completion.logprobs)))
        return texts

    def sync_weights(self, model: Any) -> None:
        """Copy the trained model's weights into vLLM's copy, and drop vLLM's now stale prefix cache."""
        if hasattr(model, "peft_config"):
            raise ValueError("rollout_engine='vllm' copies full weights into vLLM, not a LoRA adapter: set "
                             "lora_rank=0, or rollout_engine='hf' to train a LoRA adapter (GRPOConfig refuses both).")
        target = _engine_model(self.llm)
        target.load_weights((name, p.detach()) for name, p in model.state_dict().items())
        if hasattr(self.llm, "reset_prefix_cache"):
            self.llm.reset_prefix_cache()


def sampled_logprobs(ids: Sequence[int], logprobs: Iterable[dict[int, Any]] | None) -> list[float]:
    """The log-probability of each sampled id from vLLM's per-position ``{token_id: Logprob}`` dicts.

    >>> from types import SimpleNamespace as L
    >>> sampled_logprobs([5, 7], [{5: L(logprob=-0.5)}, {7: L(logprob=-1.0), 2: L(logprob=-0.1)}])
    [-0.5, -1.0]
    """
    if logprobs is None:
        raise ValueError("vLLM returned no log-probabilities; the sampling params must ask for logprobs=0.")
    return [float(position[token].logprob) for token, position in zip(ids, logprobs)]


def _engine_model(llm: Any) -> Any:
    """vLLM's in-process model object (its place differs between the V0 and V1 engines)."""
    executor = llm.llm_engine.model_executor
    worker = executor.driver_worker
    for path in (("worker", "model_runner", "model"), ("model_runner", "model")):
        obj = worker
        try:
            for name in path:
                obj = getattr(obj, name)
        except AttributeError:
            continue
        return obj
    raise RuntimeError("Could not reach vLLM's model to copy weights into (this vLLM version keeps it elsewhere); "
                       "run with VLLM_ENABLE_V1_MULTIPROCESSING=0, or use rollout_engine='hf'.")


def make_sampler(policy: HFPolicy, engine: str, model_path: str | Path, *, gpu_memory_utilization: float = 0.3,
                 seed: int = 0) -> HFPolicy | VLLMPolicy:
    """The rollout engine ``engine`` (``hf``: the trained policy samples itself; ``vllm``: :class:`VLLMPolicy`)."""
    if engine == "hf":
        return policy
    return VLLMPolicy(policy, model_path, gpu_memory_utilization=gpu_memory_utilization, seed=seed)


__all__ = ["VLLMPolicy", "make_sampler", "require_vllm", "sampled_logprobs"]
