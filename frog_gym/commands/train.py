"""``frog-gym train``: the curriculum loop around a pluggable learner.

Each iteration: evaluate the pool with the current policy (the scores feed the curriculum's posteriors);
note the frontier (tasks solved sometimes, not always); train on it, ``--tasks-per-iteration`` groups,
drawn by the curriculum, whose frontier sampler ranks tasks by ``p(1-p)``; re-measure the trained tasks;
and let the curriculum synthesize new tasks when the frontier runs dry (with ``--synthesizer``). Each
iteration writes a checkpoint and a line of ``loop.jsonl``.

Example:
    frog-gym train --learner grpo --model ./my-model --iterations 5 --tasks-per-iteration 300
    frog-gym train --learner scripted --env FrogSWE-Toy-v0 --iterations 2 --tasks-per-iteration 6
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HELP = "Train a policy: evaluate the pool, train on the frontier, re-measure, synthesize; repeat."
LEARNERS = {"grpo": "frog_gym.learners.grpo:make_learner", "scripted": "frog_gym.learners.scripted:make_learner"}


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--learner", default="grpo",
                   help="grpo, scripted, or python:MODULE:FACTORY with FACTORY(options, curriculum) -> Learner")
    p.add_argument("--model", default="", help="the starting policy: a save_pretrained folder or a hub id")
    p.add_argument("--env", default="FrogSWE-v0", help="the env id episodes run in (default FrogSWE-v0)")
    p.add_argument("--tasks", default="", help="comma-separated task ids (default: the tasks the env samples)")
    p.add_argument("--iterations", type=int, default=5, help="loop iterations (default 5)")
    p.add_argument("--tasks-per-iteration", type=int, default=300, help="groups trained per iteration (default 300)")
    p.add_argument("--group-size", type=int, default=8, help="G: episodes per group (default 8)")
    p.add_argument("--groups-per-update", type=int, default=8, help="k: groups per policy update (default 8)")
    p.add_argument("--eval-episodes", type=int, default=2, help="episodes per task when measuring (default 2)")
    p.add_argument("--eval-tasks", type=int, default=0,
                   help="measure a seeded sample of this many pool tasks per iteration (default 0: all)")
    p.add_argument("--curriculum-mode", default="frontier", help="frontier, uniform, dapo or sfl (default frontier)")
    p.add_argument("--prior-agent", default="apr", metavar="NAME|none",
                   help="the curriculum's priors: each task's difficulty features plus this reference agent's "
                        "solve rates (`frog-gym tasks --import-results`); none: the features alone (default apr)")
    p.add_argument("--synthesizer", default="", metavar="mutation|MODULE:FACTORY",
                   help="asked for tasks when the frontier is small: 'mutation' (the generators, in the pool's "
                        "repositories, tasks written to OUT/synthesized) or FACTORY() -> a "
                        "frog_gym.curriculum.TaskSynthesizer")
    p.add_argument("--seed", type=int, default=0, help="seed of the learner, the curriculum and the eval sample")
    p.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="run the rollouts' envs on Ray actors (extra 'ray'): alone, a Ray on this machine; "
                        "HOST:PORT joins a cluster. The curriculum and the learner stay here")
    p.add_argument("--out", default="runs/train", help="output folder (default runs/train)")
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                   help="a learner setting (for grpo: any GRPOConfig field, e.g. --set learning_rate=1e-6)")


def load_object(spec: str, what: str) -> Any:
    """``module:attribute`` (optionally prefixed ``python:``) imported."""
    spec = spec.removeprefix("python:")
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"{what} {spec!r} must look like module:attribute, e.g. my_pkg.learn:make_learner.")
    return getattr(importlib.import_module(module), attr)


def learner_factory(name: str) -> Callable[..., Any]:
    """The factory of a learner named on the command line."""
    if name in LEARNERS:
        return load_object(LEARNERS[name], "--learner")
    if name.startswith("python:"):
        return load_object(name, "--learner")
    raise ValueError(f"Unknown learner {name!r}; use {', '.join(LEARNERS)} or python:MODULE:FACTORY.")


def _rate(scores: list[float | None]) -> float | None:
    scored = [s for s in scores if s is not None]
    return sum(scored) / len(scored) if scored else None


def _mean_rate(results: dict[str, list[float | None]]) -> float | None:
    rates = [r for r in map(_rate, results.values()) if r is not None]
    return sum(rates) / len(rates) if rates else None


def run_loop(learner: Any, *, iterations: int, tasks_per_iteration: int, groups_per_update: int,
             eval_episodes: int = 2, eval_tasks: int = 0, out_dir: str | Path = "runs/train", seed: int = 0,
             log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Run the loop with any :class:`~frog_gym.learners.Learner`; returns one summary per iteration."""
    cur = learner.curriculum
    rng = random.Random(seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    history = []
    with (out / "loop.jsonl").open("a", encoding="utf-8") as f:
        for it in range(1, iterations + 1):
            pool = sorted(cur.task_ids)
            measured = pool if not eval_tasks or eval_tasks >= len(pool) else sorted(rng.sample(pool, eval_tasks))
            before = learner.evaluate(measured, eval_episodes)
            for task_id, scores in before.items():
                cur.update(task_id, scores)
            frontier = sorted(t for t, s in before.items() if (r := _rate(s)) is not None and 0 < r < 1)
            trained: set[str] = set()
            rewards = []
            for _ in range(max(1, math.ceil(tasks_per_iteration / groups_per_update))):
                metrics = learner.train_step()
                trained |= set(metrics.get("tasks", ()))
                rewards.append(metrics.get("reward"))
            after = learner.evaluate(sorted(trained), eval_episodes)
            for task_id, scores in after.items():
                cur.update(task_id, scores)
            cur.poll()
            stats = cur.stats()
            summary = {
                "iteration": it, "pool": len(pool), "measured": len(measured), "pass_rate": _mean_rate(before),
                "frontier": len(frontier), "trained_tasks": len(trained),
                "trained_pass_before": _mean_rate({t: before[t] for t in trained if t in before}),
                "trained_pass_after": _mean_rate(after),
                "train_reward": _mean_rate({"r": [r for r in rewards if r is not None and not math.isnan(r)]}),
                "curriculum": {k: stats[k] for k in ("frontier_size", "mastered", "hopeless", "coverage",
                                                     "synth_proposed", "synth_admitted", "probation")},
            }
            learner.save(out / f"iteration-{it:03d}")
            f.write(json.dumps(summary, sort_keys=True) + "\n")
            f.flush()
            history.append(summary)
            log(f"iteration {it}: pool {len(pool)}, pass rate {_fmt(summary['pass_rate'])}, frontier "
                f"{len(frontier)}, trained {len(trained)} tasks ({_fmt(summary['trained_pass_before'])} -> "
                f"{_fmt(summary['trained_pass_after'])}), synthesized {stats['synth_admitted']}")
    return history


def _prior_line(agent: str, pool: list[str], featured: int, measured: int) -> str:
    """What the curriculum's priors were built from, for the log (naming the agents measured instead)."""
    line = f"curriculum priors: difficulty features of {featured} of {len(pool)} tasks"
    if agent in ("", "none"):
        return line + " (--prior-agent none: no solve rates)"
    line += f", {agent} solve rates of {measured}"
    if measured:
        return line
    from frog_gym.errors import did_you_mean
    from frog_gym.catalog.task import load_task, task_index

    index = task_index()
    others = sorted({a for t in pool if t in index for a in load_task(t).solve_rates})
    if others:
        return line + f".{did_you_mean(agent, others)} Agents measured on this pool: {', '.join(others)}"
    return line + f" (none measured: `frog-gym bench --agent {agent}`, then `frog-gym tasks --import-results RUN_DIR`)"


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def run(args: argparse.Namespace) -> int:
    from frog_gym.curriculum import CurriculumConfig, CurriculumState, registry_priors
    from frog_gym.learners import LearnerOptions, env_tasks

    settings = {}
    for pair in args.settings:
        key, eq, value = pair.partition("=")
        if not eq:
            print(f"frog-gym train: --set {pair!r} must be KEY=VALUE", file=sys.stderr)
            return 2
        settings[key.strip()] = value.strip()
    pool = [t for t in args.tasks.split(",") if t] or env_tasks(args.env)
    try:
        factory = learner_factory(args.learner)
        synthesizer = make_synthesizer(args.synthesizer, pool, Path(args.out), args.seed)
    except ValueError as e:
        print(f"frog-gym train: {e}", file=sys.stderr)
        return 2
    features, references = registry_priors(pool, args.prior_agent)
    curriculum = CurriculumState(pool, CurriculumConfig(mode=args.curriculum_mode, seed=args.seed), features=features,
                                 reference_pass_rates=references, synthesizer=synthesizer)
    print(_prior_line(args.prior_agent, pool, len(features), len(references)))
    if args.ray is not None:
        from frog_gym.bench.distributed import connect

        connect(args.ray)  # an unreachable address, a wrong token or a missing extra: one line, exit 2
    options = LearnerOptions(model=args.model, env_id=args.env, seed=args.seed, ray=args.ray, group_size=args.group_size,
                             groups_per_update=args.groups_per_update, output_dir=args.out, settings=settings)
    learner = factory(options, curriculum)
    try:
        run_loop(learner, iterations=args.iterations, tasks_per_iteration=args.tasks_per_iteration,
                 groups_per_update=args.groups_per_update, eval_episodes=args.eval_episodes,
                 eval_tasks=args.eval_tasks, out_dir=args.out, seed=args.seed)
    finally:
        learner.close()
        curriculum.close()
        if args.ray is not None:
            from frog_gym.bench.distributed import close_pools

            close_pools()
        if synthesizer is not None and hasattr(synthesizer, "close"):
            synthesizer.close()
    return 0


def make_synthesizer(name: str, pool: list[str], out: Path, seed: int) -> Any:
    """``--synthesizer``: '' (none), ``mutation`` (over the pool's repositories) or ``MODULE:FACTORY``."""
    if not name:
        return None
    if name == "mutation":
        from frog_gym.generators.online import make_synthesizer as mutation
        from frog_gym.catalog.task import load_task

        repos = sorted({load_task(t).repo for t in pool})
        return mutation(repos, out / "synthesized", seed=seed)
    if ":" not in name:
        from frog_gym.errors import did_you_mean

        raise ValueError(f"Unknown --synthesizer {name!r}.{did_you_mean(name, ['mutation'])} Use 'mutation' "
                         "or MODULE:FACTORY (FACTORY() returns a frog_gym.curriculum.TaskSynthesizer).")
    return load_object(name, "--synthesizer")()
