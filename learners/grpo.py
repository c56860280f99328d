"""GRPO on FrogSWE: multi-turn rollouts of a transformers causal LM, trained on exactly the tokens it sampled.

One file, read top to bottom (CleanRL's manner): the configuration, the envs, the advantage and the loss as
small pure functions, the rollout, the update, checkpoints, logging, and the loop.

Per update:

1. **Schedule.** The curriculum commits ``groups_per_update`` groups of ``group_size`` episodes of one task
   each (:meth:`~frog_gym.curriculum.CurriculumState.next_tasks`), and every episode is taken from that
   committed schedule and reported back to it.
2. **Rollout.** Episodes run in waves of ``num_envs`` envs. All running episodes of a wave sample their
   next reply in one batch; the env steps run on a thread pool. The policy is an
   :class:`~frog_gym.agents.hf.HFPolicy`: the prompt and observations are tokenized once, as they arrive,
   and each reply is kept as the ids that were sampled, so nothing is re-tokenized across turns. Replies
   are drawn from ``softmax(logits / temperature)`` over the whole vocabulary (no top-k, whatever the
   checkpoint's generation config says), and each sampled token's log-probability is recorded as the
   sampler computed it. ``rollout_engine="vllm"`` samples with vLLM instead (the same trajectories).
3. **Scores.** One rule, :func:`~frog_gym.curriculum.episode_score`, shared with evaluation and the
   curriculum: an episode that ends with ``submit`` scores the env's reward (1.0 when the repository's
   tests say fixed); one cut by a budget (steps, wall time, or the context window, where the rollout
   submits the state as it stands) scores its graded state, or is *masked* with ``mask_truncated``;
   an infrastructure failure is always masked. A masked episode is in neither its group's baseline nor
   the loss, and the curriculum counts it as neither success nor failure.
4. **Advantage.** Leave-one-out: ``A_i = r_i - mean_{j != i} r_j`` over the scored episodes of the group,
   not scaled by the standard deviation (``scale_std=True`` gives GRPO's ``(r_i - mean) / (std + 1e-4)``).
   A group whose scored rewards are all equal carries no gradient: it is dropped, or replaced by new groups
   (``zero_variance="backfill"``); both are counted in the metrics.
5. **Loss.** Token level: the clipped surrogate ``-min(ρ A, clip(ρ, 1 - ε_low, 1 + ε_high) A)`` with
   ``ε_low = 0.2, ε_high = 0.28`` and the importance ratio ``ρ = π_θ(token) / π_sampler(token)`` against
   the log-probabilities recorded at sampling (not recomputed by the trainer: with vLLM, or in bf16, the
   sampler's numbers differ from the trainer's, and the ratio corrects for it; ``sampler_logp_gap`` logs
   the mean gap), on sampled tokens only (prompt and observation tokens are masked out),
   summed over every sampled token of the minibatch and divided by their number, so that gradient
   accumulation over micro-batches gives the same gradient as one large batch. Optional ``kl_coef``
   adds the k3 estimate of KL(π || π_ref) to the initial model per token (padded positions never enter
   it, so it cannot turn NaN there).
6. **Bookkeeping.** An update with no learning signal (every group's rewards equal, or every episode
   masked) prints a line saying why and what to change. Metrics go to stdout, a JSONL file, and
   tensorboard or wandb when installed; checkpoints hold the model, the optimizer, every RNG state, the
   curriculum and the step, and resume exactly.

Run it:
    python -m frog_gym.learners.grpo --model PATH --env-id FrogSWE-Toy-v0 --updates 40

or through the curriculum loop, ``frog-gym train --learner grpo --model PATH``. Needs the ``torch`` extra.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import math
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from frog_gym.learners import LearnerOptions, env_tasks
from frog_gym.learners.vllm_engine import VLLMPolicy, make_sampler

from frog_gym.agents.hf import ContextFull, HFPolicy, Sampling, Trajectory, require_torch
from frog_gym.curriculum import CurriculumConfig, CurriculumState, episode_score, filter_group
from frog_gym.env.toolcalls import answers_a_call
from frog_gym.env.toolspec import openai_tools

ZERO_VARIANCE = ("drop", "backfill")
ROLLOUT_ENGINES = ("hf", "vllm")


# ---- configuration ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GRPOConfig:
    """Everything a GRPO run depends on. Unknown values fail here, saying what to set instead.

    Example:
        >>> GRPOConfig(model="path/to/model", group_size=4).group_size
        4
        >>> GRPOConfig(model="m", group_size=1)
        Traceback (most recent call last):
        ...
        ValueError: group_size must be at least 2 (a group of one has no baseline), got 1.
    """

    model: str = ""
    """The policy: a folder written by ``save_pretrained`` (model and tokenizer), or a hub id."""
    env_id: str = "FrogSWE-v0"
    """The registered env the episodes run in (``FrogSWE-Toy-v0`` for the tiny-model demo)."""
    task_ids: tuple[str, ...] = ()
    """The task pool; empty: the env's own (its ``task_ids`` or ``task_id``), else every registered task."""
    seed: int = 0
    """Seeds Python, NumPy, torch (sampling included) and the curriculum."""
    updates: int = 100
    """Optimizer updates (policy steps) to run."""
    groups_per_update: int = 8
    """k: groups (distinct tasks, while the pool allows) per update."""
    group_size: int = 8
    """G: episodes per group, all on one task."""
    max_turns: int = 30
    """Replies per episode; the env's step budget, after which it is truncated (and masked)."""
    wall_time_s: float = 1800.0
    """Wall-clock budget of one episode in the env."""
    num_envs: int = 64
    """Envs running at once (one wave of episodes); each holds a workspace and a sandbox."""
    env_workers: int = 4
    """Threads stepping the envs (grading runs the repository's tests in a subprocess)."""
    ray_address: str = ""
    """Run the envs on Ray actors (``frog-gym train --ray``): ``local`` or a cluster's ``HOST:PORT``; each env
    holds one actor (1 CPU of the cluster), so keep ``num_envs`` within the cluster's CPUs."""
    temperature: float = 1.0
    """Sampling temperature; the loss divides its logits by it too, so it trains what it sampled."""
    top_p: float = 1.0
    """Nucleus mass; must stay 1.0: the loss trains the full softmax, so the sampler draws from it too."""
    rollout_engine: str = "hf"
    """What samples replies: ``hf`` (transformers ``generate`` on the trained model) or ``vllm`` (the
    ``vllm`` extra; weights copied to it after every update; the ratio uses its recorded log-probs)."""
    vllm_gpu_memory_utilization: float = 0.3
    """With ``rollout_engine="vllm"``: the fraction of GPU memory vLLM may take (the trainer needs the rest)."""
    max_new_tokens: int = 512
    """Most tokens in one reply."""
    max_context_tokens: int | None = None
    """Longest trajectory; when the next reply has no room, the episode is cut: its state is submitted and
    graded, and scored like any budget cut (see ``mask_truncated``). None: the model's position limit."""
    native_tools: bool = True
    """Give the chat template the tools as OpenAI schemas (``apply_chat_template(tools=...)``), so the prompt
    lists them as the model family was trained to read them, and answer a reply's native tool call
    (Qwen's ``<tool_call>``, Llama's JSON) in the template's tool-response layout. A template that renders no
    tools (the toy model's) is unaffected."""
    mask_truncated: bool = True
    """Mask episodes cut by a budget (steps, wall time, context window) instead of scoring their graded
    state; the same rule serves training, :meth:`GRPO.evaluate` and the curriculum
    (:func:`~frog_gym.curriculum.episode_score`). Masking has a price: a policy
    can learn to run out the budget on episodes it is about to fail, since a masked episode is never
    penalised (seen on the toy family with two turns); watch ``masked_fraction``."""
    partial_credit: bool = False
    """Reward the pass rate of the selected tests instead of 0/1 (the env's ``partial_credit``)."""
    zero_variance: str = "drop"
    """What happens to groups whose rewards are all equal: ``drop`` them, or ``backfill`` with new groups."""
    max_backfill_rounds: int = 2
    """With ``backfill``: rounds of new groups tried per update before training on fewer groups."""
    scale_std: bool = False
    """Divide advantages by the group's reward std (GRPO's original form) instead of leave-one-out only."""
    clip_low: float = 0.2
    """ε_low: the ratio is clipped below at 1 - ε_low."""
    clip_high: float = 0.28
    """ε_high: the ratio is clipped above at 1 + ε_high (DAPO's clip-higher)."""
    kl_coef: float = 0.0
    """β of a per-token KL penalty to the initial model (0: no reference model is kept)."""
    learning_rate: float = 1e-6
    """AdamW learning rate (constant)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Gradients are clipped to this global norm (0: no clipping)."""
    epochs: int = 1
    """Passes over each batch of episodes."""
    minibatches: int = 1
    """Optimizer steps per pass; above 1 (or epochs above 1) the later steps are off-policy. Every step's
    ratio is taken against the log-probabilities recorded when the tokens were sampled."""
    micro_batch_size: int = 8
    """Trajectories per forward pass; gradients accumulate over the micro-batches of a minibatch."""
    lora_rank: int = 0
    """Train a LoRA adapter of this rank (``peft``) instead of every weight; 0: full fine-tuning."""
    lora_alpha: int = 32
    """LoRA scaling numerator."""
    dtype: str | None = None
    """Weights' dtype: "float32", "bfloat16" or "float16" (default: float32 on CPU, bfloat16 on a GPU)."""
    device: str | None = None
    """"cpu", "cuda", ... (default: cuda when available)."""
    torch_threads: int | None = None
    """CPU threads for torch (1 is fastest for tiny models); None: torch's default."""
    curriculum_mode: str = "frontier"
    """The curriculum's sampler (see :class:`~frog_gym.curriculum.CurriculumConfig`)."""
    prior_agent: str = "apr"
    """Whose measured solve rates, with the tasks' difficulty features, set the curriculum's priors
    (:meth:`~frog_gym.curriculum.CurriculumState.from_registry`); ``none``: the features alone."""
    output_dir: str = "runs/grpo"
    """Where metrics (``metrics.jsonl``), tensorboard logs and checkpoints go."""
    save_every: int = 0
    """Write a checkpoint every this many updates (0: only at the end)."""
    resume: str | None = None
    """A checkpoint folder to resume from (its model, optimizer, RNG states, curriculum and step)."""
    tensorboard: bool = True
    """Log to tensorboard when it is installed."""
    wandb_project: str | None = None
    """Log to this wandb project when wandb is installed."""
    stop_at_reward: float | None = None
    """Stop early once the mean reward of the last three updates reaches this."""

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model is empty: set it to a folder written by save_pretrained, or a hub id.")
        if self.group_size < 2:
            raise ValueError(f"group_size must be at least 2 (a group of one has no baseline), got {self.group_size}.")
        if self.zero_variance not in ZERO_VARIANCE:
            raise ValueError(f"zero_variance={self.zero_variance!r}; use one of {', '.join(ZERO_VARIANCE)}.")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be positive for GRPO (it samples), got {self.temperature}.")
        if self.top_p != 1.0:
            raise ValueError(f"top_p={self.top_p}: GRPO trains softmax(logits / temperature) over the whole "
                             "vocabulary, so it must sample from it too; set top_p=1.0 (lower the temperature "
                             "for less random replies).")
        if self.rollout_engine not in ROLLOUT_ENGINES:
            raise ValueError(f"rollout_engine={self.rollout_engine!r}; use one of {', '.join(ROLLOUT_ENGINES)}.")
        if self.rollout_engine == "vllm" and self.lora_rank:
            raise ValueError("rollout_engine='vllm' copies full weights into vLLM after each update; set "
                             "lora_rank=0, or rollout_engine='hf' to train a LoRA adapter.")
        for name in ("updates", "groups_per_update", "max_turns", "num_envs", "env_workers", "epochs",
                     "minibatches", "micro_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}.")
        if not (0 <= self.clip_low < 1 and self.clip_high >= 0):
            raise ValueError(f"Need 0 <= clip_low < 1 and clip_high >= 0, got {self.clip_low}, {self.clip_high}.")
        object.__setattr__(self, "task_ids", tuple(self.task_ids))


# ---- envs ------------------------------------------------------------------------------------------------


def task_pool(cfg: GRPOConfig) -> list[str]:
    """The tasks to train on: ``cfg.task_ids``, else those the env samples."""
    return list(cfg.task_ids) or env_tasks(cfg.env_id)


def make_envs(cfg: GRPOConfig, n: int) -> list[Any]:
    """``n`` envs of ``cfg.env_id`` with the episode budget of ``cfg``."""
    from frog_gym.bench.distributed import make_env

    return [make_env(cfg.env_id, cfg.ray_address or None, max_steps=cfg.max_turns, wall_time_s=cfg.wall_time_s,
                     partial_credit=cfg.partial_credit, max_episode_steps=cfg.max_turns) for _ in range(n)]


# ---- advantage and loss ----------------------------------------------------------------------------------


def leave_one_out(rewards: Sequence[float | None], scale_std: bool = False) -> list[float | None]:
    """Advantages of one group: each scored reward minus the mean of the *other* scored rewards.

    ``None`` (a masked episode) stays ``None`` and takes no part. With ``scale_std``, GRPO's original
    ``(r - mean) / (std + 1e-4)`` instead (std with Bessel's correction, as TRL computes it).

    >>> [round(a, 4) for a in leave_one_out([1.0, 0.0, 0.0, 1.0])]
    [0.6667, -0.6667, -0.6667, 0.6667]
    >>> leave_one_out([1.0, None, 0.0])
    [1.0, None, -1.0]
    >>> [round(a, 4) for a in leave_one_out([1.0, 0.0, 0.0, 0.0], scale_std=True)]
    [1.4997, -0.4999, -0.4999, -0.4999]
    """
    scored = [float(r) for r in rewards if r is not None]
    n = len(scored)
    if n < 2:
        return [None if r is None else 0.0 for r in rewards]
    total, mean = sum(scored), sum(scored) / n
    if scale_std:
        std = math.sqrt(sum((r - mean) ** 2 for r in scored) / (n - 1))
        return [None if r is None else (r - mean) / (std + 1e-4) for r in rewards]
    return [None if r is None else r - (total - r) / (n - 1) for r in rewards]


def token_logprobs(model: Any, ids: Any, attention: Any, temperature: float = 1.0) -> tuple[Any, Any]:
    """Log-probability of each next token and the entropy of each next-token distribution, ``[B, T-1]``."""
    torch = require_torch()
    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float() / temperature
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, ids[:, 1:, None]).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp, entropy


def policy_loss(logp: Any, old_logp: Any, advantages: Any, mask: Any, *, clip_low: float = 0.2,
                clip_high: float = 0.28, ref_logp: Any = None, kl_coef: float = 0.0,
                num_tokens: float | None = None) -> tuple[Any, dict[str, float]]:
    """The token-level clipped GRPO loss of one micro-batch.

    Args:
        logp, old_logp: ``[B, T]`` log-probabilities of the taken tokens under the current policy and as
            the sampler recorded them (the importance ratio is ``exp(logp - old_logp)``).
        advantages: ``[B]``, one per trajectory, applied to each of its tokens.
        mask: ``[B, T]``, 1 on sampled tokens (the only ones trained).
        ref_logp: ``[B, T]`` under the reference policy, for the KL penalty (k3 estimator).
        num_tokens: the denominator, the sampled tokens of the whole minibatch (default: of this one), so
            that summing micro-batch losses gives the minibatch's token-level mean.

    Returns:
        The loss and statistics (sums over this micro-batch's sampled tokens, for averaging later):
        ``clipped`` (tokens whose ratio left the clip range in the direction that stops the gradient)
        and ``kl`` (k3 to the reference, when given).
    """
    torch = require_torch()
    # Padded and context positions may hold anything (0, -inf, a pad token's log-prob): they enter no
    # exp(), so neither the loss nor its gradient can be NaN there (inf * 0 is NaN, even when masked).
    sampled = mask > 0
    ratio = torch.exp(torch.where(sampled, logp - old_logp, torch.zeros_like(logp)))
    adv = advantages[:, None]
    surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * adv)
    per_token = -surrogate
    stats = {"clipped": float((((ratio > 1 + clip_high) & (adv > 0)) | ((ratio < 1 - clip_low) & (adv < 0)))
                              .float().mul(mask).sum())}
    if ref_logp is not None:
        delta = torch.where(sampled, ref_logp - logp, torch.zeros_like(logp)).clamp(-20.0, 20.0)
        kl = torch.exp(delta) - delta - 1
        per_token = per_token + kl_coef * kl
        stats["kl"] = float((kl.detach() * mask).sum())
    denominator = num_tokens if num_tokens is not None else float(mask.sum())
    per_token = torch.where(sampled, per_token, torch.zeros_like(per_token))
    return (per_token * mask).sum() / max(denominator, 1.0), stats


# ---- rollout ---------------------------------------------------------------------------------------------


@dataclass
class Episode:
    """One finished episode: its exact tokens and how it ended."""

    task_id: str
    group: int
    trajectory: Trajectory
    env_reward: float = 0.0
    """What the env paid at the end (the graded state), even for an episode that is masked."""
    reward: float | None = None
    """The score used for learning, evaluation and the curriculum (:func:`~frog_gym.curriculum.episode_score`);
    None when masked."""
    terminated: bool = False
    """The agent submitted."""
    truncated: bool = False
    """A budget cut it: steps, wall time, or the context window."""
    infra_failure: str | None = None
    context_full: bool = False
    """Cut by the context window: the rollout submitted its state, which the env graded as it stood."""
    turns: int = 0


class RolloutEngine(Protocol):
    """What :func:`rollout` samples with: an :class:`~frog_gym.agents.hf.HFPolicy`, or a
    :class:`~frog_gym.learners.vllm_engine.VLLMPolicy` around one. ``generate`` appends each sampled reply
    to its trajectory with the sampler's log-probability of every token."""

    tokenizer: Any

    def start(self, prompt: str) -> Trajectory: ...

    def observe(self, trajectory: Trajectory, observation: str, tool: bool = False) -> None: ...

    def room(self, trajectory: Trajectory) -> int: ...

    def generate(self, trajectories: Sequence[Trajectory]) -> list[str]: ...


def rollout(policy: RolloutEngine, envs: list[Any], schedule: Sequence[tuple[str, int]], cfg: GRPOConfig,
            pool: concurrent.futures.Executor, timing: dict[str, float] | None = None) -> list[Episode]:
    """Run the scheduled ``(task_id, group)`` episodes, ``len(envs)`` at a time, replies batched per turn.

    An episode whose next reply has no room in the context window is cut there: its state is submitted, so
    the env grades it as it stands, and it counts as truncated. Each episode's ``reward`` is
    :func:`~frog_gym.curriculum.episode_score`. ``timing`` (if given) accumulates ``generate_s`` and ``env_s``.
    """
    timing = timing if timing is not None else {}
    episodes: list[Episode] = []
    for start in range(0, len(schedule), len(envs)):
        wave = list(schedule[start:start + len(envs)])

        def reset(job: tuple[Any, str]) -> Any:
            env, task_id = job
            try:
                return env.reset(options={"task_id": task_id})[0]
            except Exception as e:
                return e

        prompts = list(pool.map(reset, zip(envs, [t for t, _ in wave])))
        batch = [Episode(t, g, Trajectory()) for t, g in wave]
        live = []
        for i, p in enumerate(prompts):
            if isinstance(p, Exception):
                batch[i].infra_failure, batch[i].truncated = f"reset failed: {p}", True
            else:
                batch[i].trajectory = policy.start(p)
                live.append(i)
        while live:
            full = {i for i in live if policy.room(batch[i].trajectory) < 1}
            for i in full:  # the context window is a budget too: grade the state as it stands
                batch[i].context_full = True
            writing = [i for i in live if i not in full]
            clock = time.monotonic()
            try:
                texts = policy.generate([batch[i].trajectory for i in writing])
            except ContextFull:  # pragma: no cover (room() was checked above)
                break
            timing["generate_s"] = timing.get("generate_s", 0.0) + time.monotonic() - clock
            actions: dict[int, Any] = {i: {"tool": "submit"} for i in full}
            actions.update(zip(writing, texts))
            live = sorted(actions)
            texts = [actions[i] for i in live]
            clock = time.monotonic()

            def step(job: tuple[int, Any]) -> Any:
                i, text = job
                try:
                    return envs[i].step(text)
                except Exception as e:
                    return e

            results = list(pool.map(step, zip(live, texts)))
            timing["env_s"] = timing.get("env_s", 0.0) + time.monotonic() - clock
            still = []
            for i, result in zip(live, results):
                ep = batch[i]
                ep.turns += 0 if ep.context_full else 1
                if isinstance(result, Exception):
                    ep.infra_failure, ep.truncated = f"step failed: {result}", True
                    continue
                obs, reward, terminated, truncated, info = result
                if terminated or truncated:
                    ep.env_reward, ep.infra_failure = float(reward), info.get("infra_failure")
                    ep.terminated = bool(terminated) and not ep.context_full
                    ep.truncated = ep.context_full or (bool(truncated) and not terminated)
                    continue
                policy.observe(ep.trajectory, obs, tool=answers_a_call(actions[i]))
                still.append(i)
            live = still
        for ep in batch:
            ep.reward = episode_score(ep.env_reward, terminated=ep.terminated, truncated=ep.truncated,
                                      infra_failure=ep.infra_failure, mask_truncated=cfg.mask_truncated)
        episodes += batch
    return episodes


# ---- the learner -----------------------------------------------------------------------------------------


def pad_right(trajectories: Sequence[Trajectory], pad: int) -> tuple[Any, Any, Any]:
    """``(ids, attention, mask)`` of the trajectories, right-padded (positions start at 0 in every row)."""
    torch = require_torch()
    width = max(len(t) for t in trajectories)
    ids = torch.full((len(trajectories), width), pad, dtype=torch.long)
    attention = torch.zeros_like(ids)
    mask = torch.zeros(len(trajectories), width)
    for row, t in enumerate(trajectories):
        ids[row, : len(t)] = torch.tensor(t.ids)
        attention[row, : len(t)] = 1
        mask[row, : len(t)] = torch.tensor(t.mask, dtype=torch.float)
    return ids, attention, mask


def _chunks(items: Sequence[Any], n: int) -> list[list[Any]]:
    return [list(items[i:i + n]) for i in range(0, len(items), n)]


class GRPO:
    """The policy, its optimizer, the curriculum and the envs, with one method per phase.

    Args:
        cfg: the run's configuration.
        curriculum: the task schedule (default: :meth:`CurriculumState.from_registry` over :func:`task_pool`,
            priors from ``cfg.prior_agent``).
    """

    def __init__(self, cfg: GRPOConfig, curriculum: CurriculumState | None = None):
        torch = require_torch()
        self.cfg = cfg
        if cfg.torch_threads:
            torch.set_num_threads(cfg.torch_threads)
        random.seed(cfg.seed)
        np.random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        self.curriculum = curriculum or CurriculumState.from_registry(
            task_pool(cfg), CurriculumConfig(mode=cfg.curriculum_mode, seed=cfg.seed), prior_agent=cfg.prior_agent)
        sampling = Sampling(cfg.temperature, cfg.top_p, cfg.max_new_tokens, cfg.max_context_tokens)
        source = Path(cfg.resume) / "model" if cfg.resume else cfg.model
        self.policy = self._load_policy(source, sampling)
        self.model = self.policy.model
        self.sampler: RolloutEngine = make_sampler(
            self.policy, cfg.rollout_engine, source, gpu_memory_utilization=cfg.vllm_gpu_memory_utilization,
            seed=cfg.seed)
        """What samples the rollouts: the trained policy itself (``hf``) or vLLM around it."""
        self.ref = None
        if cfg.kl_coef > 0 and not cfg.lora_rank:  # with LoRA the reference is the base, adapter disabled
            self.ref = self._load_policy(cfg.model, sampling).model.eval().requires_grad_(False)
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
        self.step = 0
        if cfg.resume:
            self._load_state(Path(cfg.resume))
        self.envs: list[Any] = []
        self.pool = concurrent.futures.ThreadPoolExecutor(cfg.env_workers, thread_name_prefix="frog-gym-env")
        self.logger: Logger | None = None
        """Where :meth:`train_step` logs each update's metrics (set by :func:`train` and :func:`make_learner`)."""

    def _load_policy(self, source: str | Path, sampling: Sampling) -> HFPolicy:
        cfg = self.cfg
        tools = openai_tools() if cfg.native_tools else None
        if not cfg.lora_rank:
            return HFPolicy.from_pretrained(source, sampling, dtype=cfg.dtype, device=cfg.device, tools=tools)
        try:
            from peft import LoraConfig, PeftModel, get_peft_model
        except ImportError:
            raise ImportError("lora_rank > 0 needs peft; install the extra: pip install 'frog-gym[torch]'") from None
        base = HFPolicy.from_pretrained(cfg.model, sampling, dtype=cfg.dtype, device=cfg.device, tools=tools)
        if cfg.resume and Path(source) != Path(cfg.model):
            base.model = PeftModel.from_pretrained(base.model, source, is_trainable=True)
        else:
            lora = LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, lora_dropout=0.0,
                              target_modules="all-linear", task_type="CAUSAL_LM")
            base.model = get_peft_model(base.model, lora)
        return base

    # -- rollouts --

    def _envs(self, n: int) -> list[Any]:
        want = min(n, self.cfg.num_envs)
        if len(self.envs) < want:
            self.envs += make_envs(self.cfg, want - len(self.envs))
        return self.envs[:want]

    def collect(self) -> tuple[list[Episode], dict[str, float]]:
        """Roll out the curriculum's next groups (backfilling zero-variance ones when configured) and report
        every episode back to the curriculum. Returns the episodes of all groups and rollout metrics."""
        cfg, cur = self.cfg, self.curriculum
        episodes: list[Episode] = []
        want, backfilled, rounds = cfg.groups_per_update, 0, 0
        timing: dict[str, float] = {}
        start = time.monotonic()
        while True:
            n = len(cur.next_tasks(want, group_size=cfg.group_size))
            schedule = [cur.take() for _ in range(n)]
            new = rollout(self.sampler, self._envs(len(schedule)), schedule, cfg, self.pool, timing)
            for ep in new:  # the curriculum counts what the learner counts (episode_score)
                cur.record(ep.group, ep.reward)
            episodes += new
            useful = sum(filter_group([e.reward for e in g]) for g in _groups(episodes).values())
            if cfg.zero_variance == "drop" or useful >= cfg.groups_per_update or rounds >= cfg.max_backfill_rounds:
                break
            rounds += 1
            want = cfg.groups_per_update - useful
            backfilled += want
        seconds = time.monotonic() - start
        generated = sum(sum(e.trajectory.mask) for e in episodes)
        return episodes, {"backfilled_groups": backfilled, "rollout_s": seconds, "generated_tokens": generated,
                          "tokens_per_s": generated / max(seconds, 1e-9), **timing}

    def evaluate(self, task_ids: Sequence[str], episodes: int = 1) -> dict[str, list[float | None]]:
        """Run ``episodes`` episodes of each task with the current policy (no training, nothing reported to
        the curriculum). Returns each task's scores, None for masked episodes."""
        schedule = [(t, -1) for t in task_ids for _ in range(episodes)]
        out: dict[str, list[float | None]] = {t: [] for t in task_ids}
        for ep in rollout(self.sampler, self._envs(len(schedule)), schedule, self.cfg, self.pool):
            out[ep.task_id].append(ep.reward)
        return out

    # -- the update --

    def update(self, episodes: list[Episode]) -> dict[str, float]:
        """One policy update from the episodes of a :meth:`collect`; returns the update's metrics."""
        torch = require_torch()
        cfg = self.cfg
        start = time.monotonic()
        groups = _groups(episodes)
        batch: list[tuple[Trajectory, float]] = []
        dropped = 0
        for group in groups.values():
            rewards = [e.reward for e in group]
            if not filter_group(rewards):
                dropped += 1
                continue
            for e, a in zip(group, leave_one_out(rewards, cfg.scale_std)):
                if a is not None:
                    batch.append((clip_context(e.trajectory, self.policy.max_context), a))
        scored = [e.reward for e in episodes if e.reward is not None]
        metrics: dict[str, float] = {
            "reward": float(np.mean(scored)) if scored else float("nan"),
            "pass_rate": float(np.mean([r >= 1.0 for r in scored])) if scored else float("nan"),
            "groups": len(groups), "dropped_groups": dropped,
            "zero_variance_fraction": dropped / max(len(groups), 1),
            "masked_fraction": 1 - len(scored) / max(len(episodes), 1),
            "train_trajectories": len(batch),
        }
        self.step += 1
        if not batch:  # nothing to learn from: the step counts, the policy does not change
            reason = no_signal_reason(episodes, cfg)
            print(f"grpo: step {self.step}: no learning signal, the policy is unchanged: {reason}", file=sys.stderr,
                  flush=True)
            return {**metrics, "no_signal": reason, "update_s": time.monotonic() - start}
        pad = self.policy.tokenizer.pad_token_id
        device = self.policy.device
        ref: list[Any] = []
        micro = _chunks(range(len(batch)), cfg.micro_batch_size)
        if cfg.kl_coef > 0:
            with torch.no_grad():
                for idx in micro:
                    ids, att, _ = (x.to(device) for x in pad_right([batch[i][0] for i in idx], pad))
                    if self.ref is not None:
                        ref += list(token_logprobs(self.ref, ids, att, cfg.temperature)[0])
                    else:
                        with self.model.disable_adapter():
                            ref += list(token_logprobs(self.model, ids, att, cfg.temperature)[0])
        sums = {"loss": 0.0, "entropy": 0.0, "clipped": 0.0, "kl": 0.0, "approx_kl": 0.0, "tokens": 0.0,
                "grad_norm": 0.0, "optimizer_steps": 0.0, "gap": 0.0, "gap_tokens": 0.0}
        generator = torch.Generator().manual_seed(cfg.seed * 1_000_003 + self.step)
        for _ in range(cfg.epochs):
            order = torch.randperm(len(batch), generator=generator).tolist()
            for mb in _chunks(order, math.ceil(len(batch) / cfg.minibatches)):
                n_tokens = float(sum(sum(batch[i][0].mask) for i in mb))
                self.optimizer.zero_grad(set_to_none=True)
                for idx in _chunks(mb, cfg.micro_batch_size):
                    ids, att, mask = (x.to(device) for x in pad_right([batch[i][0] for i in idx], pad))
                    mask = mask[:, 1:]
                    adv = torch.tensor([batch[i][1] for i in idx], device=device)
                    logp, entropy = token_logprobs(self.model, ids, att, cfg.temperature)
                    old_logp = sampler_logprobs([batch[i][0] for i in idx], logp.shape[1]).to(device)
                    if sums["optimizer_steps"] == 0:  # the trained policy is still the sampling one
                        sums["gap"] += float(((logp.detach() - old_logp).abs() * mask).sum())
                        sums["gap_tokens"] += float(mask.sum())
                    ref_logp = torch.stack([_fit(ref[i], logp.shape[1]) for i in idx]) if ref else None
                    loss, st = policy_loss(logp, old_logp, adv, mask, clip_low=cfg.clip_low,
                                           clip_high=cfg.clip_high, ref_logp=ref_logp, kl_coef=cfg.kl_coef,
                                           num_tokens=n_tokens)
                    loss.backward()
                    delta = (old_logp - logp).detach()
                    sums["loss"] += loss.item() * n_tokens
                    sums["entropy"] += float((entropy.detach() * mask).sum())
                    sums["approx_kl"] += float(((torch.exp(-delta) + delta - 1) * mask).sum())
                    sums["clipped"] += st["clipped"]
                    sums["kl"] += st.get("kl", 0.0)
                    sums["tokens"] += float(mask.sum())
                if cfg.max_grad_norm > 0:
                    norm = torch.nn.utils.clip_grad_norm_(
                        [p for p in self.model.parameters() if p.requires_grad], cfg.max_grad_norm)
                    sums["grad_norm"] += float(norm)
                self.optimizer.step()
                sums["optimizer_steps"] += 1
        if isinstance(self.sampler, VLLMPolicy):
            self.sampler.sync_weights(self.model)
        self.curriculum.on_policy_update(self.step)
        tokens = max(sums["tokens"], 1.0)
        return {**metrics, "loss": sums["loss"] / tokens, "entropy": sums["entropy"] / tokens,
                "clip_fraction": sums["clipped"] / tokens, "approx_kl": sums["approx_kl"] / tokens,
                **({"kl": sums["kl"] / tokens} if cfg.kl_coef > 0 else {}),
                "grad_norm": sums["grad_norm"] / max(sums["optimizer_steps"], 1),
                "sampler_logp_gap": sums["gap"] / max(sums["gap_tokens"], 1.0),
                "update_s": time.monotonic() - start}

    def train_step(self) -> dict[str, Any]:
        """One full update: collect, learn, and the metrics of both (with the curriculum's)."""
        episodes, rollout_metrics = self.collect()
        metrics = self.update(episodes)
        stats = self.curriculum.stats()
        metrics = {"step": self.step, **metrics, **rollout_metrics, "tasks": sorted({e.task_id for e in episodes}),
                   "frontier_size": stats["frontier_size"], "curriculum_zero_variance": stats["zero_variance_fraction"]}
        if self.logger is not None:
            self.logger.log(metrics)
        return metrics

    # -- checkpoints --

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write a checkpoint that :class:`GRPO` resumes exactly (``GRPOConfig(resume=path)``)."""
        torch = require_torch()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        sampling_config = self.model.generation_config
        self.model.generation_config = self.policy.checkpoint_generation_config  # the checkpoint keeps its own
        try:
            self.model.save_pretrained(path / "model")
        finally:
            self.model.generation_config = sampling_config
        self.policy.tokenizer.save_pretrained(path / "model")
        state = {
            "step": self.step, "config": asdict(self.cfg), "optimizer": self.optimizer.state_dict(),
            "curriculum": self.curriculum.state_dict(), "python_rng": random.getstate(),
            "numpy_rng": np.random.get_state(), "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        }
        torch.save(state, path / "trainer.pt")
        return path

    def _load_state(self, path: Path) -> None:
        torch = require_torch()
        state = torch.load(path / "trainer.pt", weights_only=False)
        self.step = int(state["step"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.curriculum.load_state_dict(state["curriculum"])
        random.setstate(state["python_rng"])
        np.random.set_state(state["numpy_rng"])
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])

    def close(self) -> None:
        for env in self.envs:
            env.close()
        self.envs = []
        self.pool.shutdown(wait=True)
        if self.logger is not None:
            self.logger.close()
            self.logger = None


def clip_context(trajectory: Trajectory, limit: int) -> Trajectory:
    """The trajectory without the tokens past ``limit``: the end of an observation that overflowed the context
    window (the episode was cut there). Nothing past the window was sampled, so nothing trained is lost, and
    the trainer's forward pass stays within the model's positions.
    """
    if len(trajectory) <= limit:
        return trajectory
    if any(trajectory.mask[limit:]):
        raise ValueError(f"a reply runs past the context window ({limit} tokens); the sampler must stop there.")
    return Trajectory(trajectory.ids[:limit], trajectory.mask[:limit], list(trajectory.turns),
                      trajectory.logprobs[:limit])


def sampler_logprobs(trajectories: Sequence[Trajectory], width: int) -> Any:
    """``[B, width]`` log-probabilities recorded at sampling, aligned with :func:`token_logprobs` (column
    ``t`` is the token at position ``t + 1``); 0 on context and padding.

    Raises:
        ValueError: a reply has no recorded log-probability (it was not written by a sampler).
    """
    torch = require_torch()
    out = torch.zeros(len(trajectories), width)
    for row, t in enumerate(trajectories):
        values = torch.tensor(t.logprobs[1:width + 1], dtype=torch.float)
        if torch.isnan(values).any():
            raise ValueError("A trajectory has reply tokens without the sampler's log-probability (written by "
                             "imitation or add_reply without logprobs); GRPO trains only on sampled replies.")
        out[row, : values.numel()] = values
    return out


def no_signal_reason(episodes: Sequence[Episode], cfg: GRPOConfig) -> str:
    """Why an update had nothing to learn from, and what to change."""
    if not episodes:
        return "no episodes were collected (the curriculum scheduled none); check the task pool."
    masked = [e for e in episodes if e.reward is None]
    if len(masked) == len(episodes):
        infra = sum(e.infra_failure is not None for e in masked)
        context = sum(e.context_full and e.infra_failure is None for e in masked)
        cut = len(masked) - infra - context
        parts = []
        if cut:
            parts.append(f"{cut} cut by the step or wall-time budget (max_turns={cfg.max_turns}, "
                         f"wall_time_s={cfg.wall_time_s})")
        if context:
            parts.append(f"{context} cut by the context window (max_context_tokens={cfg.max_context_tokens})")
        if infra:
            parts.append(f"{infra} lost to infrastructure failures (see the env's info['infra_failure'])")
        fix = ("raise max_turns / max_context_tokens, or set mask_truncated=False to score cut episodes "
               "by their graded state" if cut or context else "fix the sandbox")
        return f"every one of the {len(episodes)} episodes was masked: {'; '.join(parts)}. To learn, {fix}."
    groups = _groups(episodes)
    values: dict[str, int] = {}
    thin = 0
    for group in groups.values():
        scored = [e.reward for e in group if e.reward is not None]
        if len(scored) < 2:
            thin += 1
        else:
            key = f"{scored[0]:g}"
            values[key] = values.get(key, 0) + 1
    parts = [f"{n} all {v}" for v, n in sorted(values.items())]
    if thin:
        parts.append(f"{thin} with fewer than two scored episodes")
    advice = []
    if any(float(v) <= 0 for v in values):
        advice.append("for groups that all fail: easier tasks, a larger group_size, a higher temperature, "
                      "or more max_turns")
    if any(float(v) >= 1 for v in values):
        advice.append("for groups that all pass: harder tasks (the curriculum's frontier mode moves on)")
    if thin:
        advice.append("for thin groups: fewer masked episodes (mask_truncated=False) or a larger group_size")
    if cfg.zero_variance == "drop":
        advice.append("or zero_variance='backfill' to roll out new groups in their place")
    return (f"every group's rewards were equal ({len(groups)} groups: {', '.join(parts)}), so every advantage "
            f"is 0. Try {'; '.join(advice)}.")


def _groups(episodes: Sequence[Episode]) -> dict[int, list[Episode]]:
    out: dict[int, list[Episode]] = {}
    for e in episodes:
        out.setdefault(e.group, []).append(e)
    return out


def _fit(x: Any, width: int) -> Any:
    """A per-token row cut or zero-padded to ``width`` (rows were computed in differently padded batches)."""
    torch = require_torch()
    if x.shape[0] >= width:
        return x[:width]
    return torch.cat([x, x.new_zeros(width - x.shape[0])])


def make_learner(options: LearnerOptions, curriculum: CurriculumState) -> GRPO:
    """The ``frog-gym train --learner grpo`` factory: ``options.settings`` may set any :class:`GRPOConfig` field."""
    values = {"model": options.model, "env_id": options.env_id, "seed": options.seed,
              "group_size": options.group_size, "groups_per_update": options.groups_per_update,
              "output_dir": options.output_dir, "ray_address": options.ray or "", **options.settings}
    learner = GRPO(config_from_strings(GRPOConfig, values), curriculum)
    learner.logger = Logger(learner.cfg)
    return learner


# ---- logging ---------------------------------------------------------------------------------------------


class Logger:
    """Metrics to stdout and ``metrics.jsonl``, and to tensorboard / wandb when they are installed."""

    def __init__(self, cfg: GRPOConfig):
        self.dir = Path(cfg.output_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.jsonl = (self.dir / "metrics.jsonl").open("a", encoding="utf-8")
        self.tb = self.wandb = None
        if cfg.tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self.tb = SummaryWriter(str(self.dir / "tensorboard"))
            except ImportError:
                pass
        if cfg.wandb_project:
            try:
                import wandb

                self.wandb = wandb.init(project=cfg.wandb_project, config=asdict(cfg), dir=str(self.dir))
            except ImportError:
                print("grpo: wandb_project is set but wandb is not installed; logging to JSONL only", file=sys.stderr)

    def log(self, metrics: dict[str, Any]) -> None:
        self.jsonl.write(json.dumps(metrics, sort_keys=True) + "\n")
        self.jsonl.flush()
        shown = ("reward", "pass_rate", "zero_variance_fraction", "loss", "entropy", "approx_kl", "kl",
                 "tokens_per_s", "rollout_s", "update_s")
        print(f"step {metrics.get('step')}: " + " ".join(
            f"{k}={metrics[k]:.4g}" for k in shown if isinstance(metrics.get(k), (int, float))), flush=True)
        for k, v in metrics.items():
            if self.tb is not None and isinstance(v, (int, float)) and not isinstance(v, bool):
                self.tb.add_scalar(k, v, metrics.get("step", 0))
        if self.wandb is not None:
            self.wandb.log({k: v for k, v in metrics.items() if isinstance(v, (int, float))},
                           step=metrics.get("step", 0))

    def close(self) -> None:
        self.jsonl.close()
        if self.tb is not None:
            self.tb.close()
        if self.wandb is not None:
            self.wandb.finish()


# ---- the loop --------------------------------------------------------------------------------------------


def train(cfg: GRPOConfig) -> list[dict[str, Any]]:
    """Run GRPO for ``cfg.updates`` updates (from ``cfg.resume`` if set); returns each update's metrics."""
    learner = GRPO(cfg)
    learner.logger = Logger(cfg)
    history = []
    try:
        while learner.step < cfg.updates:
            metrics = learner.train_step()
            history.append(metrics)
            if cfg.save_every and learner.step % cfg.save_every == 0:
                learner.save(Path(cfg.output_dir) / f"checkpoint-{learner.step:06d}")
            recent = [m["reward"] for m in history[-3:]]
            if cfg.stop_at_reward is not None and len(recent) == 3 and np.mean(recent) >= cfg.stop_at_reward:
                break
        learner.save(Path(cfg.output_dir) / "checkpoint-last")
    finally:
        learner.close()
    return history


def parse_config(argv: Sequence[str] | None = None, **defaults: Any) -> GRPOConfig:
    """A :class:`GRPOConfig` from ``--field value`` flags (``--task-ids a,b``; booleans ``true``/``false``)."""
    parser = argparse.ArgumentParser(prog="python -m frog_gym.learners.grpo", description=__doc__.split("\n")[0])
    for f in dataclasses.fields(GRPOConfig):
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, default=None, help=_field_help(f))
    values = {k: v for k, v in vars(parser.parse_args(argv)).items() if v is not None}
    return config_from_strings(GRPOConfig, {**defaults, **values})


def config_from_strings(cls: Any, values: dict[str, Any]) -> Any:
    """Build a config dataclass, converting string values to each field's type.

    >>> config_from_strings(GRPOConfig, {"model": "m", "group_size": "4", "scale_std": "true"}).group_size
    4
    """
    types = {f.name: str(f.type) for f in dataclasses.fields(cls)}
    out: dict[str, Any] = {}
    for k, v in values.items():
        if k not in types:
            import difflib

            near = difflib.get_close_matches(k, types, n=1)
            raise ValueError(f"{cls.__name__} has no field {k!r}." + (f" Did you mean {near[0]!r}?" if near else ""))
        out[k] = _convert(v, types[k]) if isinstance(v, str) else v
    return cls(**out)


def _convert(value: str, kind: str) -> Any:
    if value.lower() in ("none", "null") and "None" in kind:
        return None
    if kind.startswith("bool"):
        if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise ValueError(f"expected true or false, got {value!r}")
        return value.lower() in ("true", "1", "yes")
    if kind.startswith("int"):
        return int(value)
    if kind.startswith("float"):
        return float(value)
    if kind.startswith("tuple"):
        return tuple(v for v in value.split(",") if v)
    return value


def _field_help(f: dataclasses.Field) -> str:
    return f"(default: {f.default!r})" if f.default is not dataclasses.MISSING else ""


if __name__ == "__main__":
    history = train(parse_config(sys.argv[1:]))
    print(json.dumps(history[-1] if history else {}, sort_keys=True))
