"""One rule for an episode cut by a budget (steps, wall time, the context window): graded as it stands, or
masked with ``mask_truncated``; the same score reaches training, evaluation and the curriculum.

The episodes here are written by a scripted policy (a test double with the rollout engine's interface over
the real tiny model's tokenizer and chat layout): the correct fix first, so that the graded state is 1.0
and a cut that went ungraded (the old behaviour: 0.0) is told apart from one that was graded."""

from __future__ import annotations

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")

from frog_gym.learners.grpo import GRPO, GRPOConfig
from frog_gym.learners.toy import ENV_ID, menu

from frog_gym.agents.hf import HFPolicy, Trajectory
from frog_gym.curriculum import CurriculumConfig, CurriculumState, FrontierCurriculum, episode_score

TASK = "frogtoy__handwritten-0001"


class ScriptedPolicy:
    """Writes the scripted replies, in order, into each trajectory (never more than its room)."""

    def __init__(self, policy: HFPolicy, replies: list[str]):
        self.policy, self.replies = policy, replies
        self.tokenizer = policy.tokenizer

    def start(self, prompt: str) -> Trajectory:
        return self.policy.start(prompt)

    def observe(self, trajectory: Trajectory, observation: str, tool: bool = False) -> None:
        self.policy.observe(trajectory, observation, tool)

    def room(self, trajectory: Trajectory) -> int:
        return self.policy.room(trajectory)

    def generate(self, trajectories: list[Trajectory]) -> list[str]:
        texts = []
        for t in trajectories:
            ids = self.policy.encode(self.replies[len(t.turns)]) + [self.tokenizer.eos_token_id]
            assert len(ids) <= self.room(t)
            texts.append(self.policy.append_reply(t, ids, [0.0] * len(ids)))
        return texts


def _learner(tiny_model, tmp_path, *, mask_truncated: bool, max_turns: int, context: int | None) -> GRPO:
    cfg = GRPOConfig(model=tiny_model, env_id=ENV_ID, task_ids=(TASK,), groups_per_update=1, group_size=2,
                     max_turns=max_turns, num_envs=2, env_workers=1, max_new_tokens=64, max_context_tokens=context,
                     mask_truncated=mask_truncated, torch_threads=1, tensorboard=False, output_dir=str(tmp_path))
    curriculum = CurriculumState([TASK], CurriculumConfig(seed=0))
    learner = GRPO(cfg, curriculum)
    learner.sampler = ScriptedPolicy(learner.policy, [menu([TASK])[0], "a long second reply " * 8])
    return learner


def _context_after_the_fix(tiny_model) -> int:
    """A context window with room for the prompt and the fix, and none after the observation."""
    policy = HFPolicy.from_pretrained(tiny_model)
    prompt = gym.make(ENV_ID).unwrapped.reset(options={"task_id": TASK})[0]
    return len(policy.start(prompt)) + len(policy.encode(menu([TASK])[0])) + 1 + 2


@pytest.mark.parametrize("mask_truncated", [False, True])
@pytest.mark.parametrize("cut_by", ["context", "steps"])
def test_a_cut_episode_scores_its_graded_state_or_is_masked_everywhere(tiny_model, tmp_path, mask_truncated, cut_by):
    context = _context_after_the_fix(tiny_model) if cut_by == "context" else None
    learner = _learner(tiny_model, tmp_path, mask_truncated=mask_truncated, context=context,
                       max_turns=3 if cut_by == "context" else 1)
    expected = None if mask_truncated else 1.0
    try:
        episodes, _ = learner.collect()
        for e in episodes:
            assert e.truncated and not e.terminated and e.context_full == (cut_by == "context")
            assert e.env_reward == 1.0  # graded as it stood: the fix was in
            assert e.reward == expected
        # the curriculum counted what the learner counts: two successes, or nothing
        a, b = learner.curriculum.posterior(TASK)
        prior = CurriculumState([TASK], CurriculumConfig(seed=0)).posterior(TASK)
        assert (a - prior[0], b - prior[1]) == ((0.0, 0.0) if mask_truncated else (2.0, 0.0))
        metrics = learner.update(episodes)
        assert metrics["masked_fraction"] == (1.0 if mask_truncated else 0.0)
        assert metrics["reward"] == 1.0 or mask_truncated
        # evaluation scores by the same rule
        assert learner.evaluate([TASK], episodes=2) == {TASK: [expected, expected]}
    finally:
        learner.close()


@pytest.mark.parametrize("mask_truncated", [False, True])
def test_the_curriculum_wrapper_applies_the_same_rule(mask_truncated):
    state = CurriculumState([TASK], CurriculumConfig(seed=0))
    prior = state.posterior(TASK)
    env = FrontierCurriculum(gym.make(ENV_ID, max_steps=1).unwrapped, state, mask_truncated=mask_truncated)
    try:
        state.next_tasks(1, group_size=1)
        env.reset()
        _, reward, terminated, truncated, info = env.step(menu([TASK])[0])
        assert (reward, terminated, truncated) == (1.0, False, True)
        assert episode_score(reward, terminated=terminated, truncated=truncated,
                             mask_truncated=mask_truncated) == (None if mask_truncated else 1.0)
        a, b = state.posterior(TASK)
        assert (a - prior[0], b - prior[1]) == ((0.0, 0.0) if mask_truncated else (1.0, 0.0))
    finally:
        env.close()


def test_episode_score_rule():
    assert episode_score(0.0, terminated=True, truncated=False) == 0.0
    assert episode_score(1.0, terminated=True, truncated=False, mask_truncated=True) == 1.0  # submitted
    assert episode_score(1.0, terminated=False, truncated=True) == 1.0
    assert episode_score(1.0, terminated=False, truncated=True, mask_truncated=True) is None
    assert episode_score(1.0, terminated=True, truncated=False, infra_failure="bwrap died") is None
    assert episode_score(1.0, terminated=False, truncated=False) is None  # never ended


def test_no_learning_signal_is_said_with_what_to_change(tiny_model, tmp_path, capsys):
    learner = _learner(tiny_model, tmp_path, mask_truncated=True, context=None, max_turns=1)
    try:
        episodes, _ = learner.collect()
        metrics = learner.update(episodes)
        err = capsys.readouterr().err
        assert "grpo: step 1: no learning signal, the policy is unchanged: every one of the 2 episodes was " \
               "masked: 2 cut by the step or wall-time budget (max_turns=1, wall_time_s=1800.0)" in err
        assert "set mask_truncated=False to score cut episodes by their graded state" in err
        assert metrics["no_signal"].startswith("every one of the 2 episodes was masked")
    finally:
        learner.close()
    learner = _learner(tiny_model, tmp_path, mask_truncated=False, context=None, max_turns=1)
    try:
        episodes, _ = learner.collect()
        learner.update(episodes)
        err = capsys.readouterr().err
        assert "every group's rewards were equal (1 groups: 1 all 1)" in err
        assert "for groups that all pass: harder tasks" in err and "zero_variance='backfill'" in err
    finally:
        learner.close()
