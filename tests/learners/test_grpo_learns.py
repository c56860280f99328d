"""Proof of learning on CPU: GRPO lifts the tiny model on FrogSWE-Toy-v0 from near 0 to at least 0.8."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")


@pytest.mark.slow
def test_grpo_learns_the_toy_family(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "grpo_toy", Path(__file__).resolve().parents[2] / "benchmarks" / "grpo_toy.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    # 150 updates at most (the run stops at the first three-update mean of 0.8): the curve is chaotic, and the
    # float bits of a machine's kernels move the update that reaches 0.8. Seeds 0-5 on one machine reached it
    # at updates 87, 56, 70, 54, 78 and 54 (`python benchmarks/grpo_toy.py --updates 150 --seeds 0,1,2,3,4,5`);
    # seed 0 on a CI machine had not by update 80, the bound before.
    history = bench.learn(tmp_path, updates=150, stop_at_reward=0.8)
    rewards = [m["reward"] for m in history]
    assert rewards[0] <= 0.2, f"the warmed-up model should start near 1/12, got {rewards[0]:.3f}"
    assert sum(rewards[-3:]) / 3 >= 0.8, f"no 0.8 within 150 updates: {[round(r, 2) for r in rewards]}"
    assert all(m["masked_fraction"] == 0 for m in history)  # mask_truncated=False: every episode scored
