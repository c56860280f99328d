"""HFAgent / HFPolicy: a locally saved tiny model loads with from_pretrained, and the tokens kept are
exactly those sampled, turn after turn, with observations appended as they were encoded."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from frog_gym.learners.toy import CHAT_TEMPLATE

from frog_gym.agents.base import Agent
from frog_gym.agents.hf import ChatFormat, HFAgent, HFPolicy, Sampling


def test_from_pretrained_of_a_locally_saved_tiny_model(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    assert model.config.n_layer == 2 and tokenizer.eos_token == "<|end|>"
    assert tokenizer.chat_template == CHAT_TEMPLATE
    policy = HFPolicy.from_pretrained(tiny_model)
    assert policy.chat == ChatFormat() and policy.device.type == "cpu"
    text = "any text: ünïcode, tabs\t and <|end|> stays text"
    assert tokenizer.decode(policy.encode(text)) == text
    assert tokenizer.eos_token_id not in policy.encode(text)  # an observation cannot end a turn


def test_token_exactness_over_several_turns(tiny_model):
    agent = HFAgent(tiny_model, temperature=1.0, max_new_tokens=12)
    assert isinstance(agent, Agent)
    policy = agent.policy
    torch.manual_seed(0)
    prompt = "Fix the bug in frogtoy.py."
    observations = ["Edited /testbed/frogtoy.py.", "No replacement was performed.", "[exit code 0]"]
    agent.reset(prompt, {})
    replies = [agent.act(prompt)]
    for obs in observations:
        replies.append(agent.act(obs))
    t = agent.trajectory
    expected, spans = [], []
    chat = policy.chat
    segments = [policy._markup(chat.first) + policy.encode(prompt) + policy._markup(chat.reply)]
    segments += [policy._markup(chat.between) + policy.encode(o) + policy._markup(chat.reply) for o in observations]
    for segment, generated in zip(segments, t.generated()):
        expected += segment
        spans.append((len(expected), len(expected) + len(generated)))
        expected += generated
    assert t.ids == expected and t.turns == spans
    assert [i for i, m in zip(t.ids, t.mask) if m] == [i for g in t.generated() for i in g]
    for generated, text in zip(t.generated(), replies):
        assert 1 <= len(generated) <= 12
        assert policy.tokenizer.decode(generated, skip_special_tokens=True) == text
        if policy.tokenizer.eos_token_id in generated:
            assert generated.index(policy.tokenizer.eos_token_id) == len(generated) - 1
    assert agent.stats.completion_tokens == sum(t.mask) and agent.stats.model_calls == 4


def test_batched_generation_matches_one_at_a_time(tiny_model):
    policy = HFPolicy.from_pretrained(tiny_model, Sampling(temperature=0.0, max_new_tokens=10))
    prompts = ["Fix `add`.", "A much longer issue: `is_less(1, 2)` returns False, but 1 is smaller than 2."]
    batch = [policy.start(p) for p in prompts]
    policy.generate(batch)  # left-padded together
    for p, t in zip(prompts, batch):
        alone = policy.start(p)
        policy.generate([alone])
        assert alone.ids == t.ids


def test_chat_format_is_read_from_the_template(tiny_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    assert ChatFormat.from_tokenizer(tokenizer) == ChatFormat()
    tokenizer.chat_template = ("{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}<|end|>{% endfor %}"
                               "{% if add_generation_prompt %}[assistant]{% endif %}")
    assert ChatFormat.from_tokenizer(tokenizer) == ChatFormat(first="[user]", reply="<|end|>[assistant]",
                                                              between="[user]")
    tokenizer.chat_template = None
    assert ChatFormat.from_tokenizer(tokenizer) == ChatFormat()


def test_the_context_limit_ends_the_episode_with_submit(tiny_model):
    agent = HFAgent(tiny_model, max_context_tokens=8)
    agent.reset("a prompt long enough to fill the eight-token window " * 3, {})
    assert agent.act("") == {"tool": "submit"} and agent.stats.extra["context_full"]


def test_a_reply_cut_at_max_new_tokens_is_closed_by_an_untrained_end_marker(tiny_model):
    policy = HFPolicy.from_pretrained(tiny_model, Sampling(temperature=1.0, max_new_tokens=2))
    eos = policy.tokenizer.eos_token_id
    torch.manual_seed(0)
    batch = [policy.start("Fix `add`.") for _ in range(16)]
    start = len(batch[0])
    policy.generate(batch)
    cut = [t for t in batch if eos not in t.generated()[0]]
    assert cut, "no reply was cut at two tokens"
    for t in batch:
        (a, b), = t.turns
        assert a == start and t.mask[a:b] == [1] * (b - a) and t.ids[a:b] == t.generated()[0]
        assert t.ids[-1] == eos  # sampled, or appended as the end marker
        if t in cut:
            assert len(t) == b + 1 and t.mask[-1] == 0 and t.logprobs[-1] == 0.0
    # at the context limit no turn follows, so no marker is added
    short = HFPolicy.from_pretrained(tiny_model, Sampling(max_new_tokens=2, max_context_tokens=start + 2))
    t = short.start("Fix `add`.")
    short.generate([t])
    assert len(t) == start + len(t.generated()[0]) <= short.max_context
