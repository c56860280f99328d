"""The advantage and the loss against hand-computed values; masks and gradient accumulation."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from frog_gym.learners.grpo import leave_one_out, pad_right, policy_loss

from frog_gym.agents.hf import Trajectory


def test_leave_one_out_by_hand():
    # r = [1, 0, 0, 0]: the success's baseline is 0, each failure's is 1/3
    assert leave_one_out([1.0, 0.0, 0.0, 0.0]) == pytest.approx([1.0, -1 / 3, -1 / 3, -1 / 3])
    assert leave_one_out([0.5, 1.0]) == pytest.approx([-0.5, 0.5])
    assert leave_one_out([1.0, 1.0, 1.0]) == [0.0, 0.0, 0.0]


def test_leave_one_out_masks_none_and_sums_to_zero():
    adv = leave_one_out([1.0, None, 0.0, None, 0.0])
    assert adv[1] is None and adv[3] is None
    assert adv[0] == pytest.approx(1.0) and adv[2] == pytest.approx(-0.5)
    assert sum(a for a in adv if a is not None) == pytest.approx(0.0)
    assert leave_one_out([1.0, None]) == [0.0, None]  # one scored episode: no baseline, no signal


def test_std_scaling_restores_grpo():
    r = [1.0, 0.0, 0.0, 1.0]
    mean, std = 0.5, math.sqrt(sum((x - 0.5) ** 2 for x in r) / 3)
    assert leave_one_out(r, scale_std=True) == pytest.approx([(x - mean) / (std + 1e-4) for x in r])


def test_loss_on_policy_is_minus_mean_advantage_per_token():
    logp = torch.tensor([[-1.0, -2.0, -3.0], [-0.5, -0.5, -0.5]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    adv = torch.tensor([2.0, -1.0])
    loss, stats = policy_loss(logp, logp.detach(), adv, mask)
    # ratio 1 everywhere: loss = -(2 + 2 - 1 - 1) / 4 masked tokens
    assert loss.item() == pytest.approx(-0.5)
    loss.backward()
    # d loss / d logp = -A * mask / n_tokens
    assert logp.grad.flatten().tolist() == pytest.approx([-0.5, -0.5, 0.0, 0.0, 0.25, 0.25])
    assert stats["clipped"] == 0


def test_clipping_by_hand():
    old = torch.zeros(1, 4)
    # ratios 1.5, 0.5, 1.1, 0.7 with A = +1: clipped above at 1.28 (no gradient), never below
    logp = torch.log(torch.tensor([[1.5, 0.5, 1.1, 0.7]])).requires_grad_()
    mask = torch.ones(1, 4)
    loss, stats = policy_loss(logp, old, torch.tensor([1.0]), mask, clip_low=0.2, clip_high=0.28)
    assert loss.item() == pytest.approx(-(1.28 + 0.5 + 1.1 + 0.7) / 4)
    loss.backward()
    assert logp.grad[0, 0] == 0 and stats["clipped"] == 1
    # with A = -1: min(-r, -clip(r)) -> clipped below at 0.8 for r = 0.5 and 0.7, not above
    loss, stats = policy_loss(logp.detach(), old, torch.tensor([-1.0]), mask, clip_low=0.2, clip_high=0.28)
    assert loss.item() == pytest.approx((1.5 + 0.8 + 1.1 + 0.8) / 4)
    assert stats["clipped"] == 2


def test_kl_penalty_is_k3():
    logp = torch.tensor([[-1.0]])
    ref = torch.tensor([[-1.5]])
    loss, stats = policy_loss(logp, logp, torch.tensor([0.0]), torch.ones(1, 1), ref_logp=ref, kl_coef=0.1)
    k3 = math.exp(-0.5) + 0.5 - 1
    assert stats["kl"] == pytest.approx(k3) and loss.item() == pytest.approx(0.1 * k3)


def test_observation_tokens_are_masked_out():
    t = Trajectory()
    t.add_context([5, 6, 7])  # prompt
    t.add_reply([8, 9])  # the model
    t.add_context([10])  # observation
    t.add_reply([11])
    ids, attention, mask = pad_right([t, Trajectory([1], [0])], pad=0)
    assert ids[0].tolist() == [5, 6, 7, 8, 9, 10, 11]
    assert mask[0].tolist() == [0, 0, 0, 1, 1, 0, 1]
    assert mask[1].tolist() == [0] * 7 and attention[1].tolist() == [1, 0, 0, 0, 0, 0, 0]
    assert t.generated() == [[8, 9], [11]]


def test_token_level_loss_is_independent_of_the_micro_batch_split():
    torch.manual_seed(0)
    logp = torch.randn(4, 6)
    old = logp + 0.1 * torch.randn(4, 6)
    mask = (torch.rand(4, 6) > 0.3).float()
    adv = torch.tensor([1.0, -0.5, 0.25, 2.0])
    whole, _ = policy_loss(logp, old, adv, mask)
    n = float(mask.sum())
    parts = sum(policy_loss(logp[i:i + 1], old[i:i + 1], adv[i:i + 1], mask[i:i + 1], num_tokens=n)[0]
                for i in range(4))
    assert parts.item() == pytest.approx(whole.item())


def test_padded_positions_never_make_the_loss_or_its_gradient_nan():
    """Padding holds whatever the batch left there: a huge gap to the reference, -inf, NaN. Masked out,
    none of it may reach the loss or the gradient (inf * 0 is NaN)."""
    logp = torch.tensor([[-1.0, -2.0, -0.5, -0.7]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0, 0.0]])
    ref = torch.tensor([[-1.2, -1.5, 200.0, float("nan")]])  # rows padded differently: garbage past the end
    old = torch.tensor([[-1.0, -2.0, float("-inf"), 0.0]])
    loss, stats = policy_loss(logp, old, torch.tensor([1.0]), mask, ref_logp=ref, kl_coef=0.1)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(logp.grad).all() and math.isfinite(stats["kl"])
    assert logp.grad[0, 2:].tolist() == [0.0, 0.0]
    k3 = sum(math.exp(d) - d - 1 for d in (-0.2, 0.5))
    assert stats["kl"] == pytest.approx(k3) and loss.item() == pytest.approx((-2 + 0.1 * k3) / 2)


def test_the_ratio_is_taken_against_the_sampler_log_probs():
    """Where the sampler's numbers differ from the trainer's (vLLM, bf16), the ratio corrects for it."""
    logp = torch.log(torch.tensor([[0.5, 0.5]])).requires_grad_()
    sampler = torch.log(torch.tensor([[0.25, 0.45]]))  # ratios 2.0 and 1.11
    loss, stats = policy_loss(logp, sampler, torch.tensor([1.0]), torch.ones(1, 2))
    assert loss.item() == pytest.approx(-(1.28 + 0.5 / 0.45) / 2) and stats["clipped"] == 1


def test_sampler_log_probs_line_up_with_the_trainers_columns():
    from frog_gym.learners.grpo import sampler_logprobs

    t = Trajectory()
    t.add_context([5, 6])
    t.add_reply([7, 8], [-0.5, -0.25])
    t.add_context([9])
    t.add_reply([10], [-1.0])
    assert sampler_logprobs([t], 5).tolist() == [[0.0, -0.5, -0.25, 0.0, -1.0]]  # column j: token j + 1
    t.add_reply([11])  # written without a sampler
    with pytest.raises(ValueError, match="without the sampler's log-probability"):
        sampler_logprobs([t], 6)


def test_context_past_the_window_is_not_trained_on():
    from frog_gym.learners.grpo import clip_context

    t = Trajectory()
    t.add_context([1, 2])
    t.add_reply([3], [-0.5])
    t.add_context([4, 5, 6])  # an observation that overflowed a window of 4 tokens
    cut = clip_context(t, 4)
    assert (cut.ids, cut.mask, cut.logprobs, cut.turns) == ([1, 2, 3, 4], [0, 0, 1, 0], [0.0, 0.0, -0.5, 0.0],
                                                            [(2, 3)])
    assert clip_context(t, 6) is t
    with pytest.raises(ValueError, match="runs past the context window"):
        clip_context(t, 2)
