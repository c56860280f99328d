"""`HFAgent`: a local transformers causal LM as an agent, keeping the exact tokens of every turn.

The conversation is kept as token ids, never as text to re-tokenize: the prompt and each observation are
encoded once, as a user turn in the model's chat layout (:class:`ChatFormat`), and each reply is the ids
the model sampled, kept as they came out. A :class:`Trajectory` holds them with a mask that is 1 exactly
on the sampled tokens, so a learner can train on precisely what the model produced and nothing the env
wrote. :class:`HFPolicy` is the model plus that bookkeeping, sampling for many trajectories in one batch;
the GRPO learner (:mod:`frog_gym.learners.grpo`) trains the same class that :class:`HFAgent` runs.

Needs the ``torch`` extra (``pip install 'frog-gym[torch]'``).

Example:
    >>> agent = HFAgent("path/to/model", temperature=0.0)  # doctest: +SKIP
    >>> agent.reset(prompt, info)  # doctest: +SKIP
    >>> action = agent.act(prompt)  # doctest: +SKIP
    >>> agent.trajectory.generated()  # the ids of each reply, exactly as sampled  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from frog_gym.agents.base import Action, AgentStats

_U, _A, _C = "\x01frog-user\x01", "\x01frog-reply\x01", "\x01frog-next\x01"  # sentinels, never in real text


def require_torch() -> Any:
    """Import torch and transformers, or say which extra installs them."""
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as e:
        raise ImportError(f"{e.name} is needed by the Hugging Face agent and learners; install the extra: "
                          "pip install 'frog-gym[torch]'") from None
    return torch


@dataclass(frozen=True)
class ChatFormat:
    """The text around each turn: ``first`` + prompt + ``reply``, then for every observation
    ``between`` + observation + ``reply``. The model's own end-of-turn token closes each reply; ``between``
    is what the chat layout puts after it.

    Example:
        >>> f = ChatFormat()
        >>> f.first + "Fix it." + f.reply
        '<|user|>\\nFix it.<|end|>\\n<|assistant|>\\n'
    """

    first: str = "<|user|>\n"
    """Text before the task prompt (a system message, if the layout has one, goes here)."""
    reply: str = "<|end|>\n<|assistant|>\n"
    """Text after a user turn, up to where the model starts writing."""
    between: str = "\n<|user|>\n"
    """Text after the model's end-of-turn token, before the next observation."""

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> ChatFormat:
        """The layout of the tokenizer's chat template, found by rendering sentinel messages; the default
        layout when it has no template or the template does not render turns in order."""
        if not getattr(tokenizer, "chat_template", None):
            return cls()
        try:
            one = tokenizer.apply_chat_template([{"role": "user", "content": _U}], tokenize=False,
                                                add_generation_prompt=True)
            three = tokenizer.apply_chat_template(
                [{"role": "user", "content": _U}, {"role": "assistant", "content": _A},
                 {"role": "user", "content": _C}], tokenize=False, add_generation_prompt=True)
        except Exception:  # noqa: BLE001 (templates may raise anything; fall back to the default layout)
            return cls()
        if one.count(_U) != 1 or three.count(_A) != 1 or three.count(_C) != 1:
            return cls()
        first, reply = one.split(_U)
        between, reply_again = three.split(_A)[1].split(_C)
        eos = tokenizer.eos_token or ""
        if reply_again != reply or not eos or not between.startswith(eos):
            return cls()
        return cls(first=first, reply=reply, between=between[len(eos):])


@dataclass
class Trajectory:
    """One episode's tokens: ``ids``, and ``mask`` 1 on the ids the model sampled, 0 on prompt and
    observations. ``turns`` lists the ``(start, end)`` span of each reply in ``ids``."""

    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    turns: list[tuple[int, int]] = field(default_factory=list)

    def add_context(self, ids: Sequence[int]) -> None:
        """Append tokens the model did not write (prompt, observation, chat markup)."""
        self.ids += ids
        self.mask += [0] * len(ids)

    def add_reply(self, ids: Sequence[int]) -> None:
        """Append tokens the model sampled."""
        self.turns.append((len(self.ids), len(self.ids) + len(ids)))
        self.ids += ids
        self.mask += [1] * len(ids)

    def generated(self) -> list[list[int]]:
        """The ids of each reply, in order."""
        return [self.ids[a:b] for a, b in self.turns]

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class Sampling:
    """How replies are sampled.

    Example:
        >>> Sampling(temperature=0.0).greedy
        True
    """

    temperature: float = 1.0
    """Softmax temperature; 0 is greedy decoding. A learner divides its logits by the same value, so that
    it trains the distribution it sampled from."""
    top_p: float = 1.0
    """Nucleus sampling mass; 1.0 samples from the whole distribution (what an on-policy learner wants)."""
    max_new_tokens: int = 512
    """Most tokens in one reply."""
    max_context_tokens: int | None = None
    """Longest trajectory (prompt, replies and observations together); None: the model's position limit."""

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}; use 0 for greedy decoding.")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}; 1.0 samples from everything.")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {self.max_new_tokens}.")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


class ContextFull(Exception):
    """A trajectory has no room left for another reply; the episode is cut by the token budget."""


class HFPolicy:
    """A causal LM and its tokenizer, writing replies for many trajectories at once.

    Args:
        model: a ``transformers`` causal LM (optionally a ``peft`` model).
        tokenizer: its tokenizer; it needs an ``eos_token`` (the end of a reply) and gets a pad token if
            it has none.
        sampling: how replies are sampled.
        chat: the turn layout (default: from the tokenizer's chat template).

    Example:
        >>> policy = HFPolicy.from_pretrained("path/to/model")  # doctest: +SKIP
        >>> t = policy.start("Fix the bug.")  # doctest: +SKIP
        >>> [text] = policy.generate([t])  # doctest: +SKIP
        >>> policy.observe(t, "Edited the file.")  # doctest: +SKIP
    """

    def __init__(self, model: Any, tokenizer: Any, sampling: Sampling | None = None,
                 chat: ChatFormat | None = None):
        require_torch()
        if tokenizer.eos_token_id is None:
            raise ValueError("The tokenizer has no eos_token, so a reply could never end; set "
                             "tokenizer.eos_token to the model's end-of-turn token.")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.model = model
        self.tokenizer = tokenizer
        self.sampling = sampling or Sampling()
        self.chat = chat or ChatFormat.from_tokenizer(tokenizer)
        limit = getattr(model.config, "max_position_embeddings", None) or getattr(model.config, "n_positions", None)
        self.max_context = self.sampling.max_context_tokens or limit or 4096

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str], sampling: Sampling | None = None, *,
                        dtype: str | None = None, device: str | None = None, **model_kwargs: Any) -> HFPolicy:
        """Load a model and tokenizer saved with ``save_pretrained`` (or a hub id, where the hub is reachable).

        Args:
            dtype: "float32", "bfloat16" or "float16" (default: float32 on CPU, bfloat16 on a GPU).
            device: "cpu", "cuda", ... (default: cuda when available).
        """
        torch = require_torch()
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = dtype or ("bfloat16" if device.startswith("cuda") else "float32")
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype), **model_kwargs).to(device)
        model.eval()
        return cls(model, tokenizer, sampling)

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def encode(self, text: str) -> list[int]:
        """Token ids of env text. Special-token strings in it stay plain text, so an observation cannot
        forge a turn boundary."""
        return self.tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True)

    def _markup(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def start(self, prompt: str) -> Trajectory:
        """A new trajectory holding the task prompt as the first user turn."""
        t = Trajectory()
        t.add_context(self._markup(self.chat.first) + self.encode(prompt) + self._markup(self.chat.reply))
        return t

    def observe(self, trajectory: Trajectory, observation: str) -> None:
        """Append an observation as the next user turn."""
        trajectory.add_context(self._markup(self.chat.between) + self.encode(observation)
                               + self._markup(self.chat.reply))

    def room(self, trajectory: Trajectory) -> int:
        """How many tokens the next reply may have."""
        return min(self.sampling.max_new_tokens, self.max_context - len(trajectory))

    def generate(self, trajectories: Sequence[Trajectory]) -> list[str]:
        """Sample one reply for each trajectory, in one batch; append the sampled ids to each.

        A reply ends with the end-of-turn token (kept: the model learns to stop) or at
        ``max_new_tokens``. Returns the replies' text without special tokens.

        Raises:
            ContextFull: a trajectory has no room for a reply; nothing is appended to any of them.
        """
        torch = require_torch()
        from transformers import GenerationConfig

        if not trajectories:
            return []
        rooms = [self.room(t) for t in trajectories]
        if min(rooms) < 1:
            raise ContextFull(f"a trajectory has {max(len(t) for t in trajectories)} tokens; the context "
                              f"limit is {self.max_context}")
        pad, eos = self.tokenizer.pad_token_id, self.tokenizer.eos_token_id
        width = max(len(t) for t in trajectories)
        ids = torch.full((len(trajectories), width), pad, dtype=torch.long)
        attention = torch.zeros_like(ids)
        for row, t in enumerate(trajectories):  # left padding: every reply starts at the same column
            ids[row, width - len(t):] = torch.tensor(t.ids)
            attention[row, width - len(t):] = 1
        s = self.sampling
        config = GenerationConfig(
            max_new_tokens=max(rooms), do_sample=not s.greedy, temperature=s.temperature if not s.greedy else None,
            top_p=s.top_p if not s.greedy else None, top_k=None, eos_token_id=eos, pad_token_id=pad)
        with torch.no_grad():
            out = self.model.generate(input_ids=ids.to(self.device), attention_mask=attention.to(self.device),
                                      generation_config=config)
        texts = []
        for row, t in enumerate(trajectories):
            new = out[row, width:].tolist()[: rooms[row]]
            if eos in new:
                new = new[: new.index(eos) + 1]
            t.add_reply(new)
            texts.append(self.tokenizer.decode(new, skip_special_tokens=True))
        return texts


class HFAgent:
    """The :class:`~frog_gym.agents.base.Agent` protocol over an :class:`HFPolicy`, one episode at a time.

    Args:
        model: a path saved with ``save_pretrained`` (or a hub id), or a ready :class:`HFPolicy`.
        temperature, top_p, max_new_tokens, max_context_tokens: see :class:`Sampling` (greedy by default,
            for benchmarks).
        dtype, device: see :meth:`HFPolicy.from_pretrained`.

    After an episode, ``trajectory`` holds its exact tokens and ``stats`` the token counts.
    """

    name = "hf"

    def __init__(self, model: str | os.PathLike[str] | HFPolicy, *, temperature: float = 0.0, top_p: float = 1.0,
                 max_new_tokens: int = 512, max_context_tokens: int | None = None, dtype: str | None = None,
                 device: str | None = None):
        if isinstance(model, HFPolicy):
            self.policy = model
        else:
            sampling = Sampling(temperature, top_p, max_new_tokens, max_context_tokens)
            self.policy = HFPolicy.from_pretrained(model, sampling, dtype=dtype, device=device)
        self.trajectory = Trajectory()
        self.stats = AgentStats()
        self._prompt = ""

    def reset(self, prompt: str, info: dict[str, Any]) -> None:
        """Start a new conversation with the task prompt."""
        self._prompt = prompt
        self.trajectory = Trajectory()
        self.stats = AgentStats()

    def act(self, observation: str) -> Action:
        """The model's next reply (the env parses it). When the context is full, submit."""
        if not self.trajectory.ids:
            self.trajectory = self.policy.start(self._prompt)
        else:
            self.policy.observe(self.trajectory, observation)
        try:
            [text] = self.policy.generate([self.trajectory])
        except ContextFull:
            self.stats.extra["context_full"] = True
            return {"tool": "submit"}
        self.stats.model_calls += 1
        self.stats.completion_tokens += len(self.trajectory.generated()[-1])
        self.stats.prompt_tokens = len(self.trajectory) - self.stats.completion_tokens
        return text
