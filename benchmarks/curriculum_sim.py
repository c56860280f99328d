"""Does the frontier curriculum save rollouts? A CPU simulation of learning, against three baselines.

A latent skill ``s`` faces tasks of difficulty ``d``; an episode succeeds with probability
``sigmoid(k * (s + o_i - d_i))``, where ``o_i`` is what the policy learned about task ``i`` itself. After
each policy update (a batch of groups of G episodes) the skill grows by ``lr * mean(p̂(1-p̂))`` over the
batch's groups, the GRPO signal (a group whose rewards are all equal adds nothing); each trained task's
offset grows by ``task_lr * p̂(1-p̂)`` and every offset decays with a half-life (forgetting what is not
rehearsed). At the start 40% of the pool is out of reach (p < 0.05) and 20% trivial (p > 0.95). Held-out
success is the mean success probability on a separate set from the same distribution, skill only.

Printed, per mode (mean ± std over seeds):

* rollouts to reach uniform's final held-out success, as a ratio of uniform's budget (target <= 0.67);
* the fraction of zero-variance groups among all generated (target <= 0.2 for frontier);
* after a sudden skill jump, half-lives (``CurriculumConfig.half_life_updates``) until the share of
  sampled groups whose true p lies in the frontier band is back to 90% of its level before the jump
  (target <= 2).

Run: ``python benchmarks/curriculum_sim.py`` (about a minute on one core) or ``--quick`` (about ten seconds).
The curves go to ``docs/curriculum.png``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from frog_gym.curriculum import CurriculumConfig, CurriculumState

# name -> (CurriculumConfig fields, SimConfig fields, the uniform row it is compared with)
VARIANTS = {
    "frontier": ({"mode": "frontier"}, {}, "uniform"),
    "uniform": ({"mode": "uniform"}, {}, "uniform"),
    "dapo": ({"mode": "dapo"}, {}, "uniform"),
    "sfl": ({"mode": "sfl"}, {}, "uniform"),
    # The default's 30% of exploring draws land mostly on extreme tasks; this row shows the trade.
    "frontier, shares 0.05+0.05": (
        {"mode": "frontier", "staleness_share": 0.05, "uniform_share": 0.05}, {}, "uniform"
    ),
    # Groups of 16 (half as many per update: the same rollouts): an extreme task is less often all-equal.
    "frontier, G=16": ({"mode": "frontier"}, {"group_size": 16, "batch_groups": 8}, "uniform, G=16"),
    "uniform, G=16": ({"mode": "uniform"}, {"group_size": 16, "batch_groups": 8}, "uniform, G=16"),
}


@dataclass(frozen=True)
class SimConfig:
    """The simulated learner and task pool."""

    n_tasks: int = 1000
    """Training pool size."""
    n_heldout: int = 500
    """Held-out tasks (same difficulty distribution, never trained on)."""
    out_of_reach: float = 0.4
    """Share of tasks with p < 0.05 at the start."""
    trivial: float = 0.2
    """Share of tasks with p > 0.95 at the start."""
    slope: float = 1.0
    """k in sigmoid(k * (skill - difficulty))."""
    group_size: int = 8
    """G: episodes per group."""
    batch_groups: int = 16
    """Groups per policy update (kept groups, for dapo)."""
    dapo_max_groups: int = 48
    """dapo's cap on groups generated per update while it fills the batch with kept groups."""
    updates: int = 400
    """Policy updates per run (uniform's budget: updates * batch_groups * group_size rollouts)."""
    lr: float = 0.1
    """Skill gained per update per unit of mean p̂(1-p̂) over the batch."""
    task_lr: float = 0.5
    """Task offset gained per unit of p̂(1-p̂) of a group on that task: a group at p = 0.5 lifts its own
    task by 0.125 logits (about 3 points), ten times what one update transfers to every task."""
    forget_half_life: float = 20.0
    """Updates after which an unrehearsed task offset has halved."""
    jump_after: int = 150
    """Updates before the sudden skill jump (jump runs only)."""
    jump_size: float = 2.0
    """Skill added at once by the jump."""
    jump_watch: int = 96
    """Updates watched after the jump."""


def make_pool(sim: SimConfig, rng: np.random.Generator, n: int) -> np.ndarray:
    """Difficulties: trivial, middle and out-of-reach bands for skill 0."""
    edge = np.log(0.95 / 0.05) / sim.slope  # |s - d| beyond which p leaves (0.05, 0.95)
    kinds = rng.random(n)
    lo_w = sim.trivial
    hi_w = sim.trivial + (1 - sim.trivial - sim.out_of_reach)
    return np.where(
        kinds < lo_w,
        rng.uniform(-2 * edge, -edge, n),
        np.where(kinds < hi_w, rng.uniform(-edge, edge, n), rng.uniform(edge, 3 * edge, n)),
    )


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def run(seed: int, sim: SimConfig, config: CurriculumConfig, jump: bool = False) -> dict:
    """One simulated training run; returns its curves."""
    rng = np.random.default_rng([seed, 17])
    difficulty = make_pool(sim, rng, sim.n_tasks)
    heldout = make_pool(sim, rng, sim.n_heldout)
    ids = [f"task{i:04d}" for i in range(sim.n_tasks)]
    index = {t: i for i, t in enumerate(ids)}
    cur = CurriculumState(ids, replace(config, seed=seed))
    mode = config.mode
    outcome_rng = np.random.default_rng([seed, 99])
    skill, offset = 0.0, np.zeros(sim.n_tasks)
    band = config.frontier_band
    updates = sim.jump_after + sim.jump_watch if jump else sim.updates
    rollouts, curve_x, curve_y, zero_var, groups_total, in_band = 0, [], [], 0, 0, []
    for step in range(updates):
        if jump and step == sim.jump_after:
            skill += sim.jump_size
        p_true = sigmoid(sim.slope * (skill + offset - difficulty))
        signals, band_hits, generated = [], 0, 0
        cap = sim.dapo_max_groups if mode == "dapo" else sim.batch_groups
        while len(signals) < sim.batch_groups and generated < cap:
            for task in cur.next_tasks(min(sim.batch_groups - len(signals), cap - generated), commit=False):
                i = index[task]
                rewards = (outcome_rng.random(sim.group_size) < p_true[i]).astype(float)
                generated += 1
                rollouts += sim.group_size
                band_hits += band[0] < p_true[i] < band[1]
                kept = cur.update(task, rewards.tolist(), policy_step=step)
                zero_var += not kept
                if mode == "dapo" and not kept:
                    continue
                signal = rewards.mean() * (1 - rewards.mean())
                signals.append(signal)
                offset[i] += sim.task_lr * signal
        groups_total += generated
        in_band.append(band_hits / generated)
        skill += sim.lr * (np.mean(signals) if signals else 0.0)
        offset *= 0.5 ** (1 / sim.forget_half_life)
        cur.on_policy_update(step + 1)
        curve_x.append(rollouts)
        curve_y.append(float(sigmoid(sim.slope * (skill - heldout)).mean()))
    return {
        "x": np.array(curve_x),
        "y": np.array(curve_y),
        "zero_var": zero_var / groups_total,
        "in_band": np.array(in_band),
        "coverage": cur.stats()["coverage"],
        "by_source": cur.stats()["by_source"],
        "groups": groups_total,
    }


def rollouts_to_reach(result: dict, level: float) -> float:
    hit = np.flatnonzero(result["y"] >= level)
    return float(result["x"][hit[0]]) if hit.size else float("inf")


def recovery_half_lives(in_band: np.ndarray, sim: SimConfig, half_life: float) -> float:
    """Half-lives after the jump until the (seed-mean) in-band share is back to 90% of its pre-jump level."""
    before = in_band[sim.jump_after - 16 : sim.jump_after].mean()
    after = np.convolve(in_band[sim.jump_after :], np.ones(3) / 3, mode="valid")  # 3-update mean
    hit = np.flatnonzero(after >= 0.9 * before)
    return float(hit[0] + 1) / half_life if hit.size else float("inf")


def fmt(values: list[float], digits: int = 2) -> str:
    v = np.array(values, dtype=float)
    if np.isinf(v).any():
        return f"not reached in {np.isinf(v).sum()}/{v.size} seeds"
    return f"{v.mean():.{digits}f} ± {v.std():.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, shorter runs (about ten seconds)")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 5, quick 2)")
    parser.add_argument("--plot", default="docs/curriculum.png", help="where to save the curves")
    args = parser.parse_args()
    sim = SimConfig(updates=150, jump_after=80, jump_watch=48) if args.quick else SimConfig()
    seeds = range(args.seeds or (2 if args.quick else 5))
    configs = {name: CurriculumConfig(**kw) for name, (kw, _, _) in VARIANTS.items()}
    sims = {name: replace(sim, **overrides) for name, (_, overrides, _) in VARIANTS.items()}
    start = time.perf_counter()
    main_runs = {name: [run(s, sims[name], cfg) for s in seeds] for name, cfg in configs.items()}
    jump_runs = {name: [run(s, sims[name], cfg, jump=True) for s in seeds] for name, cfg in configs.items()}
    elapsed = time.perf_counter() - start

    budget = sim.updates * sim.batch_groups * sim.group_size
    half_life = CurriculumConfig().half_life_updates
    print(
        f"{len(seeds)} seeds, {sim.updates} updates x {sim.batch_groups} groups x G={sim.group_size} "
        f"({budget:,} rollouts for uniform), pool {sim.n_tasks}, skill jump {sim.jump_size} after "
        f"{sim.jump_after} updates; {elapsed:.1f}s\n"
    )
    print(
        "| mode | rollouts to reach uniform's final held-out (ratio to uniform) | zero-variance groups | "
        "half-lives until sampling is back on the frontier | in-band share before → just after the jump "
        "| final held-out success | rollouts used | coverage |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in configs:
        baseline = VARIANTS[name][2]
        ratios = [
            rollouts_to_reach(r, u["y"][-1]) / budget for r, u in zip(main_runs[name], main_runs[baseline])
        ]
        in_band = np.mean([r["in_band"] for r in jump_runs[name]], axis=0)
        cells = [
            name,
            fmt(ratios),
            fmt([r["zero_var"] for r in main_runs[name]]),
            f"{recovery_half_lives(in_band, sim, half_life):.2f}",
            f"{in_band[sim.jump_after - 16 : sim.jump_after].mean():.2f} → {in_band[sim.jump_after : sim.jump_after + 3].mean():.2f}",
            fmt([r["y"][-1] for r in main_runs[name]], 3),
            f"{np.mean([r['x'][-1] for r in main_runs[name]]):,.0f}",
            fmt([r["coverage"] for r in main_runs[name]]),
        ]
        print("| " + " | ".join(cells) + " |")

    print("\nWhere the zero-variance groups come from (share of all groups, mean over seeds; stats()['by_source']):")
    for name in ("frontier", "frontier, G=16"):
        parts = []
        for source in ("frontier", "staleness", "uniform"):
            runs = main_runs[name]
            drawn = np.mean([r["by_source"].get(source, {"groups": 0})["groups"] / r["groups"] for r in runs])
            zero = np.mean(
                [
                    r["by_source"][source]["groups"] * r["by_source"][source]["zero_variance_fraction"] / r["groups"]
                    for r in runs
                    if source in r["by_source"]
                ]
            )
            parts.append(f"{source} draws {drawn:.2f} of groups, zero-variance {zero:.3f}")
        print(f"  {name}: " + "; ".join(parts))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for name in configs:
        runs = main_runs[name]
        axes[0].plot(
            np.mean([r["x"] for r in runs], axis=0), np.mean([r["y"] for r in runs], axis=0), label=name
        )
        band = np.mean([r["in_band"] for r in jump_runs[name]], axis=0)
        axes[1].plot((np.arange(band.size) - sim.jump_after) / half_life, band, label=name)
    axes[0].axhline(np.mean([r["y"][-1] for r in main_runs["uniform"]]), color="grey", ls=":", lw=1)
    axes[0].set(
        xlabel="rollouts (dapo runs on past uniform's budget)",
        ylabel="held-out success",
        title="Learning curves (mean over seeds)",
        xlim=(0, 1.05 * budget),
    )
    axes[1].axvline(0, color="grey", ls=":", lw=1)
    axes[1].set(
        xlabel="half-lives since the skill jump",
        ylabel="share of groups with 0.1 < p < 0.9",
        title=f"Skill jump of {sim.jump_size} logits",
    )
    zero = [[r["zero_var"] for r in main_runs[name]] for name in configs]
    axes[2].bar(range(len(configs)), [np.mean(z) for z in zero], yerr=[np.std(z) for z in zero])
    axes[2].set_xticks(range(len(configs)), [n.replace(", ", "\n") for n in configs], fontsize=8)
    axes[2].axhline(0.2, color="grey", ls=":", lw=1)
    axes[2].set(ylabel="fraction of zero-variance groups", title="Groups without a learning signal")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.plot, dpi=100)
    print(f"\nCurves saved to {args.plot}")


if __name__ == "__main__":
    main()
