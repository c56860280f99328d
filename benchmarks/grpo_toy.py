"""GRPO learns FrogSWE-Toy-v0 on a CPU: the learning curve of the tiny model, written to docs/grpo_toy.png.

The tiny policy (:mod:`frog_gym.learners.toy`: a BPE tokenizer trained on the toy family's text, a
2-layer GPT-2 of width 64 built from a config, taught the action format on a uniform menu of twelve
edits, so it starts near 1/12) is trained with the bundled GRPO on the six toy tasks: 6 groups of 16
episodes per update, every episode graded by the toy repository's own tests. The curve is the
mean reward of each update's episodes, sampled at temperature 1 from the full softmax (the distribution
the loss trains; no top-k), one line per seed (the seed builds the tiny model and drives GRPO), and the
baseline alongside is the warmed-up model's own starting rate.

Run it (several minutes per seed on 2 busy cores):
    python benchmarks/grpo_toy.py [--out docs/grpo_toy.png] [--updates 80] [--seeds 0,1]
The same configuration is ``tests/learners/test_grpo_learns.py``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

CONFIG = {"env_id": "FrogSWE-Toy-v0", "groups_per_update": 6, "group_size": 16, "max_turns": 1, "num_envs": 96,
          "env_workers": 2, "max_new_tokens": 16, "learning_rate": 2e-3, "epochs": 4, "minibatches": 2,
          "kl_coef": 0.1, "micro_batch_size": 48, "mask_truncated": False, "torch_threads": 1,
          "tensorboard": False, "seed": 0}
"""The run of the learning test: one-turn episodes (the edit; the step budget then ends the episode and the
env grades it, so budget cuts are scored), four epochs of two minibatches per batch, KL 0.1 to the
warmed-up model (it keeps tasks the policy has not solved yet from collapsing onto a wrong edit). The
learning rate is 2e-3: with the sampler drawing from the full softmax (no top-50 cut), 1e-3 reached
0.65 and 0.71 (mean of the last three updates, seeds 0 and 1) by update 80, short of 0.8; a KL of 0.02
instead of 0.1 was slower still. Where a run first reaches a three-update mean of 0.8 depends on the seed and on
the machine's float kernels (the curve is chaotic): seeds 0-5 reached it at updates 87, 56, 70, 54, 78 and 54 on one
machine (``--updates 150 --seeds 0,1,2,3,4,5``, 2026-12-06), so the learning test allows 150. A two-turn behaviour is learned in ``tests/learners/test_grpo_multiturn.py``."""


def learn(out_dir: Path, updates: int = 80, stop_at_reward: float | None = 0.8, seed: int = 0,
          **overrides: object) -> list[dict]:
    """Build the tiny model, run GRPO on the toy family; returns the metrics of each update."""
    import torch

    from frog_gym.learners import grpo
    from frog_gym.learners.toy import make_tiny_model

    # One thread from the start: the warm-up's float sums then do not depend on the machine's core count,
    # and a run is reproduced exactly (this curve is chaotic: a warm-up differing in the last bits, from a
    # multi-threaded reduction, ended seed 0 at 0.64 instead of 0.89).
    torch.set_num_threads(1)
    model = make_tiny_model(out_dir / "model", seed=seed, warm_steps=60)
    cfg = grpo.GRPOConfig(model=str(model), updates=updates, stop_at_reward=stop_at_reward,
                          output_dir=str(out_dir / "run"), **{**CONFIG, "seed": seed, **overrides})
    return grpo.train(cfg)


def plot(histories: dict[int, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    for seed, history in sorted(histories.items()):
        ax.plot([m["step"] for m in history], [m["reward"] for m in history], marker=".",
                label=f"seed {seed}: mean reward per update")
    start = sum(h[0]["reward"] for h in histories.values()) / len(histories)
    ax.axhline(start, color="grey", linestyle=":", label=f"start (mean {start:.2f})")
    ax.axhline(0.8, color="green", linestyle="--", linewidth=0.8, label="0.8")
    ax.set(xlabel="GRPO update", ylabel="reward (tests pass)", ylim=(0, 1.02),
           title="GRPO, tiny GPT-2 on FrogSWE-Toy-v0 (CPU)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="docs/grpo_toy.png")
    p.add_argument("--updates", type=int, default=80)
    p.add_argument("--seeds", default="0,1", help="comma-separated seeds, one curve each")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a GRPOConfig field of CONFIG (e.g. --set kl_coef=0.02)")
    args = p.parse_args()
    from frog_gym.learners.grpo import GRPOConfig, config_from_strings

    overrides = dict(kv.split("=", 1) for kv in args.set)
    base = config_from_strings(GRPOConfig, {"model": "m", **overrides})
    overrides = {k: getattr(base, k) for k in overrides}
    histories = {}
    for seed in (int(x) for x in args.seeds.split(",")):
        start = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            history = histories[seed] = learn(Path(tmp), args.updates, stop_at_reward=None, seed=seed, **overrides)
        rewards = [round(m["reward"], 3) for m in history]
        first80 = next((m["step"] for i, m in enumerate(history) if i >= 2 and
                        sum(h["reward"] for h in history[i - 2:i + 1]) / 3 >= 0.8), None)
        print(json.dumps({"seed": seed, "rewards": rewards, "start": rewards[0], "last3": round(
            sum(rewards[-3:]) / 3, 3), "first_update_with_3_mean_0.8": first80,
            "seconds": round(time.monotonic() - start, 1)}), flush=True)
    plot(histories, Path(args.out))
    print(json.dumps({"plot": args.out}))


if __name__ == "__main__":
    main()
