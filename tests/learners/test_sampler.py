"""The sampler draws from exactly the distribution the loss trains: ``softmax(logits / temperature)`` over the
whole vocabulary, whatever the checkpoint's ``generation_config`` says, and records each token's
log-probability under it (the numbers the trainer computes)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from frog_gym.learners.grpo import pad_right, token_logprobs
from frog_gym.learners.toy import train_tokenizer

from frog_gym.agents.hf import HFPolicy, Sampling

N = 50_000
TEMPERATURE = 0.8


@pytest.fixture(scope="module")
def spread_model():
    """A GPT-2 over a 300-token vocabulary whose first-token distribution is spread wide (its output
    embedding scaled up), so that most of its mass lies outside any top 50."""
    from transformers import GPT2Config, GPT2LMHeadModel

    text = [f"line {i}: the quick brown fox {i * 7 % 13} jumps over {i % 5} lazy dogs" for i in range(200)]
    tokenizer = train_tokenizer(text, vocab_size=300)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=32, n_layer=1, n_head=2,
                        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id)
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        model.transformer.wte.weight.mul_(5.0)  # tied with the head: about half the mass outside the top 50
    return model, tokenizer


def _first_token(policy: HFPolicy) -> tuple[torch.Tensor, torch.Tensor, list]:
    """The trained distribution of the first reply token, and the empirical one of N samples."""
    trajectories = [policy.start("Fix the bug.") for _ in range(N)]
    context = list(trajectories[0].ids)
    with torch.no_grad():
        logits = policy.model(input_ids=torch.tensor([context])).logits[0, -1]
    trained = torch.softmax(logits / TEMPERATURE, -1)
    torch.manual_seed(1)
    policy.generate(trajectories)
    first = torch.tensor([t.ids[len(context)] for t in trajectories])
    empirical = torch.bincount(first, minlength=trained.numel()).float() / N
    return trained, empirical, trajectories


def _tv(p: torch.Tensor, q: torch.Tensor) -> float:
    return 0.5 * float((p - q).abs().sum())


def _noise_bound(p: torch.Tensor) -> float:
    """1.5 times the expected total-variation distance of N samples from ``p`` (sampling noise alone; the
    distance concentrates tightly around its mean at this N)."""
    return 1.5 * 0.5 * float(torch.sqrt(2 * p * (1 - p) / (math.pi * N)).sum())


def test_first_token_is_drawn_from_the_trained_softmax_despite_a_checkpoint_generation_config(spread_model):
    from transformers import GenerationConfig

    model, tokenizer = spread_model
    # what Qwen3's generation_config.json says; transformers fills every value generate() is not given
    model.generation_config = GenerationConfig(do_sample=True, temperature=0.6, top_k=20, top_p=0.95,
                                               repetition_penalty=1.1)
    policy = HFPolicy(model, tokenizer, Sampling(temperature=TEMPERATURE, max_new_tokens=1))
    assert policy.checkpoint_generation_config.top_k == 20  # kept, to be saved with the trained model
    trained, empirical, trajectories = _first_token(policy)
    bound = _noise_bound(trained)
    outside_top50 = 1 - float(trained.topk(50).values.sum())
    assert outside_top50 > 5 * bound, "the model must put enough mass outside the top 50 to tell samplers apart"
    assert _tv(empirical, trained) < bound

    # the recorded log-probabilities are the trainer's (same temperature, same full softmax)
    batch = trajectories[:64]
    ids, attention, mask = pad_right(batch, tokenizer.pad_token_id)
    logp, _ = token_logprobs(policy.model, ids, attention, TEMPERATURE)
    recorded = torch.tensor([t.logprobs for t in batch])[:, 1:]
    sampled = mask[:, 1:].bool()
    assert torch.allclose(logp[sampled], recorded[sampled], atol=1e-4)


def test_the_old_sampler_fails_the_same_check(spread_model):
    """Guard of the test above: transformers' default top-k (what ``top_k=None`` gave) is caught."""
    from transformers import GenerationConfig

    model, tokenizer = spread_model
    policy = HFPolicy(model, tokenizer, Sampling(temperature=TEMPERATURE, max_new_tokens=1))
    context = policy.start("Fix the bug.").ids
    with torch.no_grad():
        trained = torch.softmax(model(input_ids=torch.tensor([context])).logits[0, -1] / TEMPERATURE, -1)
        torch.manual_seed(1)
        old = GenerationConfig(max_new_tokens=1, do_sample=True, temperature=TEMPERATURE, top_p=1.0, top_k=None,
                               eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
        out = model.generate(input_ids=torch.tensor([context] * N), generation_config=old)
    empirical = torch.bincount(out[:, -1], minlength=trained.numel()).float() / N
    assert _tv(empirical, trained) > 3 * _noise_bound(trained)


def test_nucleus_sampling_records_the_cut_distribution(spread_model):
    model, tokenizer = spread_model
    policy = HFPolicy(model, tokenizer, Sampling(temperature=1.0, top_p=0.5, max_new_tokens=1))
    trajectories = [policy.start("Fix the bug.") for _ in range(2000)]
    n = len(trajectories[0])
    with torch.no_grad():
        probs = torch.softmax(model(input_ids=torch.tensor([trajectories[0].ids])).logits[0, -1], -1)
    torch.manual_seed(2)
    policy.generate(trajectories)
    ordered, order = probs.sort(descending=True)
    keep = order[: int((ordered.cumsum(0) - ordered < 0.5).sum())]
    firsts = {t.ids[n] for t in trajectories}
    assert firsts <= set(keep.tolist())
    nucleus = probs[keep].sum()
    for t in trajectories[:20]:  # log-probabilities of the renormalised nucleus
        assert t.logprobs[n] == pytest.approx(math.log(probs[t.ids[n]] / nucleus), abs=1e-4)
