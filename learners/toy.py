"""A tiny policy for ``FrogSWE-Toy-v0``: a small tokenizer, a 2-layer GPT-2 built from a config, a warm-up.

No model hub is needed: the tokenizer is a byte-level BPE trained on the toy family's own text (prompts,
actions, observations), the model is initialised from a :class:`transformers.GPT2Config`, and both are
written with ``save_pretrained`` so that the learners load them like any other model
(``from_pretrained``).

A randomly initialised model never writes a well-formed tool call, so no reward could ever reach it.
:func:`warm_start` first teaches the action *format* by imitation, and only the format: for every toy
prompt, the targets are the same :func:`menu` of one-line edits (each task's fix, and the reverse edit,
which injects that task's bug), each followed by ``submit``. The best the imitation can do is the
uniform mixture, so the warmed-up policy fixes a task with probability about ``1 / len(menu())``; which
edit fixes which issue is left for reinforcement learning to find (``tests/learners/test_grpo_learns.py``).

Example:
    >>> path = make_tiny_model("/tmp/frog-tiny", seed=0)  # doctest: +SKIP
    >>> policy = HFPolicy.from_pretrained(path)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

from frog_gym.learners.grpo import pad_right

from frog_gym.agents.hf import ChatFormat, HFPolicy, require_torch

ENV_ID = "FrogSWE-Toy-v0"
SPECIAL = ("<|pad|>", "<|end|>", "<|user|>", "<|assistant|>")
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
"""A minimal chat layout; :meth:`ChatFormat.from_tokenizer` reads the default :class:`ChatFormat` from it."""
SUBMIT = json.dumps({"tool": "submit"})


def undo(action: str) -> str:
    """The ``undo_edit`` of the file an edit action touched (it takes the edit back).

    >>> undo('{"tool": "str_replace", "path": "frogtoy.py", "old_str": "a", "new_str": "b"}')
    '{"tool": "undo_edit", "path": "frogtoy.py"}'
    """
    return json.dumps({"tool": "undo_edit", "path": json.loads(action)["path"]})


def toy_tasks() -> list[str]:
    """The ids ``FrogSWE-Toy-v0`` samples."""
    import gymnasium as gym

    import frog_gym  # noqa: F401  (registers the envs)

    return list(gym.spec(ENV_ID).kwargs["task_ids"])


def _changed_line(patch: str) -> tuple[str, str]:
    """The one removed and the one added line of a one-line patch, stripped."""
    removed = [ln[1:].strip() for ln in patch.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:].strip() for ln in patch.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    if len(removed) != 1 or len(added) != 1:
        raise ValueError(f"expected a one-line patch, got {len(removed)} removed and {len(added)} added lines")
    return removed[0], added[0]


def menu(task_ids: list[str] | None = None, reverses: bool = True) -> list[str]:
    """The toy action menu: for each task (default: all), its fix and its reverse (the bug), as JSON
    ``str_replace`` calls; the fixes alone with ``reverses=False``.

    >>> len(menu()) == 2 * len(toy_tasks())
    True
    """
    from frog_gym.agents.oracle import hunks
    from frog_gym.catalog.task import load_task

    actions = []
    for iid in task_ids or toy_tasks():
        task = load_task(iid)
        buggy, fixed = _changed_line(task.patch)
        path = hunks(task.patch)[0][0]
        for old, new in ((buggy, fixed), (fixed, buggy))[: 2 if reverses else 1]:
            actions.append(json.dumps({"tool": "str_replace", "path": path, "old_str": old, "new_str": new}))
    return actions


def _episodes(env: Any, task_ids: list[str], actions: list[str], second_turn: bool) -> list[tuple[str, ...]]:
    """Conversations ``(prompt, action, observation, follow-up)`` for every task and action, observed in the
    real env: the follow-up is ``submit``, or with ``second_turn`` each of ``submit`` and the edit's undo."""
    out = []
    for iid in task_ids:
        for action in actions:
            prompt, _ = env.reset(options={"task_id": iid})
            observation = env.step(action)[0]
            for follow_up in (SUBMIT, undo(action)) if second_turn else (SUBMIT,):
                out.append((prompt, action, observation, follow_up))
    return out


def train_tokenizer(texts: list[str], vocab_size: int = 2000, *, chat_template: str = CHAT_TEMPLATE,
                    special: tuple[str, ...] = SPECIAL, eos: str = "<|end|>", pad: str = "<|pad|>") -> Any:
    """A byte-level BPE tokenizer (every string encodes; decoding gives it back exactly) trained on ``texts``,
    with ``special`` tokens (``eos`` ends a reply) and a chat template."""
    require_torch()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    # No split at spaces: merges may span words, so the toy family's fixed text becomes a few long tokens.
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(texts, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token=pad, eos_token=eos,
                                        additional_special_tokens=[t for t in special if t not in (eos, pad)])
    tokenizer.chat_template = chat_template
    return tokenizer


def tiny_gpt2(tokenizer: Any, *, n_layer: int = 2, n_embd: int = 64, n_head: int = 4, n_positions: int = 1024,
              seed: int = 0) -> Any:
    """A freshly initialised GPT-2 of the given size over ``tokenizer``'s vocabulary."""
    torch = require_torch()
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=len(tokenizer), n_positions=n_positions, n_embd=n_embd, n_layer=n_layer,
                        n_head=n_head, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    return GPT2LMHeadModel(config)


def warm_start(policy: HFPolicy, episodes: list[tuple[str, ...]], *, steps: int = 80, batch_size: int = 16,
               learning_rate: float = 3e-3, seed: int = 0) -> list[float]:
    """Teach the format by imitation: each episode is a conversation ``(prompt, reply, observation, reply,
    ...)``, and the model learns to write its replies.

    Only the reply tokens are trained (the same mask the learners use). Returns the loss of each step.
    """
    torch = require_torch()
    eos = policy.tokenizer.eos_token_id
    trajectories = []
    for prompt, *turns in episodes:
        t = policy.start(prompt)
        for i, text in enumerate(turns):
            if i % 2:
                policy.observe(t, text)
            else:
                t.add_reply(policy.encode(text) + [eos])
        trajectories.append(t)
    rng = random.Random(seed)
    model = policy.model
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    losses = []
    model.train()
    for _ in range(steps):
        batch = rng.sample(trajectories, min(batch_size, len(trajectories)))
        ids, attention, mask = pad_right(batch, policy.tokenizer.pad_token_id)
        logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1]
        nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")
        loss = (nll * mask[:, 1:]).sum() / mask[:, 1:].sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return losses


def make_tiny_model(path: str | os.PathLike[str], *, seed: int = 0, warm_steps: int = 80, vocab_size: int = 2000,
                    n_embd: int = 64, task_ids: list[str] | None = None, reverses: bool = True,
                    second_turn: bool = False) -> Path:
    """Build, warm up and save the tiny toy policy (tokenizer and model) at ``path``; returns the path.

    The warm-up imitates, for every task of ``task_ids`` (default: all toy tasks), each :func:`menu` edit
    (of those tasks; the fixes alone without ``reverses``) followed by ``submit``; with ``second_turn``,
    followed by ``submit`` or by the edit's :func:`undo`, evenly, so that a second turn has a decision to
    learn (a fix is only rewarded if it is not taken back). With ``warm_steps=0`` the model is left as
    initialised (it then never writes a valid action).
    """
    import gymnasium as gym

    task_ids = list(task_ids or toy_tasks())
    env = gym.make(ENV_ID).unwrapped
    try:
        episodes = _episodes(env, task_ids, menu(task_ids, reverses), second_turn)
    finally:
        env.close()
    fmt = ChatFormat()
    corpus = [fmt.first + p + fmt.reply + a + fmt.between + o + fmt.reply + f for p, a, o, f in episodes]
    tokenizer = train_tokenizer(corpus, vocab_size)
    policy = HFPolicy(tiny_gpt2(tokenizer, n_embd=n_embd, seed=seed), tokenizer)
    if warm_steps:
        warm_start(policy, episodes, steps=warm_steps, seed=seed)
    path = Path(path)
    policy.model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


__all__ = ["ENV_ID", "make_tiny_model", "menu", "pad_right", "tiny_gpt2", "toy_tasks",
           "train_tokenizer", "undo", "warm_start"]
