"""Multi-turn GRPO on the toy family: a two-turn behaviour, learned on CPU.

The tiny model is warmed up on two toy tasks to write, at turn one, either task's fix (one of them is
right), and at turn two, after the env's observation, either ``submit`` or the ``undo_edit`` of its edit
(which takes the fix back); the step budget then ends the episode, and its state is graded. An episode
is solved only by the right fix *and* then not undoing it. The warmed-up policy does each about half the
time. The learner has to move both turns: the first on the prompt, the second on the conversation so far
(what it learns there is to leave the fix alone: it stops undoing, by submitting or by any harmless reply).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from frog_gym.learners.grpo import GRPO, GRPOConfig, pad_right, token_logprobs
from frog_gym.learners.toy import ENV_ID, make_tiny_model, toy_tasks

from frog_gym.env.tools import Call, parse_action

TASKS = tuple(toy_tasks()[:2])


@pytest.fixture(scope="module")
def two_turn_model(tmp_path_factory):
    torch.set_num_threads(1)
    path = tmp_path_factory.mktemp("two-turn") / "model"
    return str(make_tiny_model(path, seed=0, warm_steps=60, task_ids=list(TASKS), reverses=False, second_turn=True))


def _cfg(model, out, **kw):
    return GRPOConfig(model=model, env_id=ENV_ID, task_ids=TASKS, groups_per_update=2, group_size=8, max_turns=2,
                      num_envs=16, env_workers=2, max_new_tokens=24, learning_rate=1e-3, epochs=2, minibatches=1,
                      micro_batch_size=32, mask_truncated=False, torch_threads=1, tensorboard=False, seed=0,
                      output_dir=str(out), **kw)


def _second_turn_undoes(learner, episodes) -> list[bool]:
    """For each episode that edited at turn one: did its second reply take the edit back?"""
    out = []
    for e in episodes:
        calls = [parse_action(learner.policy.tokenizer.decode(g, skip_special_tokens=True))
                 for g in e.trajectory.generated()]
        if len(calls) == 2 and isinstance(calls[0], Call) and calls[0].tool == "str_replace":
            out.append(isinstance(calls[1], Call) and calls[1].tool == "undo_edit")
    return out


def _turn_logps(learner, trajectories) -> list[list[float]]:
    """The summed log-probability of each reply of each trajectory under the current model."""
    ids, attention, _ = pad_right(trajectories, learner.policy.tokenizer.pad_token_id)
    with torch.no_grad():
        logp, _ = token_logprobs(learner.model, ids, attention)
    return [[float(logp[row, a - 1:b - 1].sum()) for a, b in t.turns] for row, t in enumerate(trajectories)]


def test_one_update_moves_both_turns_by_the_episode_advantage(two_turn_model, tmp_path):
    learner = GRPO(_cfg(two_turn_model, tmp_path))
    try:
        episodes, _ = learner.collect()
        two = [e for e in episodes if len(e.trajectory.turns) == 2]
        assert len(two) >= len(episodes) // 2 and all(e.turns == len(e.trajectory.turns) for e in episodes)
        means = {g: sum(e.reward for e in episodes if e.group == g) / sum(e.group == g for e in episodes)
                 for g in {e.group for e in episodes}}
        before = _turn_logps(learner, [e.trajectory for e in two])
        metrics = learner.update(episodes)
        assert metrics["train_trajectories"] == len(episodes) and metrics["sampler_logp_gap"] < 1e-4
        after = _turn_logps(learner, [e.trajectory for e in two])
        for turn in (0, 1):  # each reply moves with its episode's advantage: the solved ones' gain on the failed
            up = [a[turn] - b[turn] for e, a, b in zip(two, after, before) if e.reward > means[e.group]]
            down = [a[turn] - b[turn] for e, a, b in zip(two, after, before) if e.reward < means[e.group]]
            assert up and down, "the warmed-up policy should both solve and fail"
            assert sum(up) / len(up) > sum(down) / len(down), (turn, up, down)
    finally:
        learner.close()


@pytest.mark.slow
def test_grpo_learns_a_two_turn_behaviour(two_turn_model, tmp_path):
    # 80 updates and a KL of 0.03 to the warmed-up model: with 40 and none, seeds 0-7 (model and learner) ended at
    # 0.76, 0.73, 0.70, 0.70, 0.86, 0.95, 0.43 and 0.69 (last five), seed 6 collapsing onto one task's wrong fix;
    # with 80 updates and KL 0.03 they ended at 0.99, 0.93, 0.83, 0.98, 0.98, 0.90, 0.91, 0.89, undoing at most
    # 3% of the time (a KL of 0.1 kept undo_edit up to 9%, near the bound below).
    learner = GRPO(_cfg(two_turn_model, tmp_path, kl_coef=0.03))
    rewards, undoes = [], []
    try:
        for _ in range(80):
            episodes, _ = learner.collect()
            undoes.append(_second_turn_undoes(learner, episodes))
            rewards.append(learner.update(episodes)["reward"])
    finally:
        learner.close()
    first, last = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    print(f"reward first 5 {first:.2f}, last 5 {last:.2f}: {[round(r, 2) for r in rewards]}")
    early = [s for u in undoes[:2] for s in u]  # before the policy has moved much
    late = [s for u in undoes[-5:] for s in u]
    print(f"undo after an edit: first 2 {sum(early) / len(early):.2f}, last 5 {sum(late) / len(late):.2f}")
    assert last >= 0.7 and last >= first + 0.2, [round(r, 2) for r in rewards]
    assert sum(late) / len(late) <= 0.1 < sum(early) / len(early)  # the second turn learned to keep the fix
