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

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from frog_gym.agents.base import Action, AgentStats
from frog_gym.errors import FrogGymError
from frog_gym.env.toolcalls import answers_a_call

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
    tool_between: str | None = None
    """For an observation that answers a native tool call: the text after the end-of-turn token, before
    the tool's output (Qwen: ``\n<|im_start|>user\n<tool_response>\n``); None: as any observation."""
    tool_reply: str | None = None
    """The text after a tool's output, up to where the model starts writing."""
    tool_json: bool = False
    """The template writes a tool's output as a JSON string (Llama 3.x: ``message.content | tojson``)."""

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, tools: list[dict[str, Any]] | None = None,
                       **template_kwargs: Any) -> ChatFormat:
        """The layout of the tokenizer's chat template, found by rendering sentinel messages; the default
        layout when the tokenizer has no template.

        With ``tools`` (OpenAI schemas, :func:`frog_gym.env.toolspec.openai_tools`), the template renders them
        where the family expects them (``first`` then holds Qwen's ``# Tools`` system block, or Llama's
        function list in the first user turn) and the layout of a ``role: "tool"`` message is read too
        (``tool_between``, ``tool_reply``); a template that ignores ``tools`` gives the plain layout.
        ``template_kwargs`` go to ``apply_chat_template`` (Llama's ``date_string``).

        Raises:
            ChatTemplateError: the template cannot be rendered, does not render turns in order, or ends a
                reply with something other than the tokenizer's ``eos_token`` (the policy would then stop
                at a token the template never writes). The message says what to set.
        """
        if not getattr(tokenizer, "chat_template", None):
            return cls()
        plain = cls._read(tokenizer, None, template_kwargs)
        if not tools:
            return plain
        with_tools = cls._read(tokenizer, tools, template_kwargs)
        if with_tools.first == plain.first:  # the template does not render tools
            return plain
        try:
            rendered = tokenizer.apply_chat_template(
                [{"role": "user", "content": _U}, {"role": "assistant", "content": _A},
                 {"role": "tool", "tool_call_id": "call_0", "name": "bash", "content": _C}],
                tools=tools, tokenize=False, add_generation_prompt=True, **template_kwargs)
        except Exception as e:  # noqa: BLE001
            raise ChatTemplateError(f"The tokenizer's chat template failed to render a tool message "
                                    f"({type(e).__name__}: {e}); pass native_tools=False (GRPOConfig) to "
                                    "answer tool calls as user turns.") from e
        eos = tokenizer.eos_token or ""
        as_json = _C not in rendered  # Llama writes a tool's output through tojson (a quoted JSON string)
        sentinel = json.dumps(_C, ensure_ascii=False) if as_json else _C
        after_reply = rendered.split(_A)[-1]
        if rendered.count(sentinel) != 1 or not after_reply.startswith(eos):
            raise ChatTemplateError(f"The chat template does not render a tool message after a reply ended by "
                                    f"{eos!r} (rendered {rendered!r}); pass native_tools=False (GRPOConfig).")
        tool_between, tool_reply = after_reply.split(sentinel)
        return cls(first=with_tools.first, reply=with_tools.reply, between=with_tools.between,
                   tool_between=tool_between[len(eos):], tool_reply=tool_reply, tool_json=as_json)

    @classmethod
    def _read(cls, tokenizer: Any, tools: list[dict[str, Any]] | None, template_kwargs: dict[str, Any]) -> ChatFormat:
        kwargs = {"tools": tools, **template_kwargs} if tools else dict(template_kwargs)
        try:
            one = tokenizer.apply_chat_template([{"role": "user", "content": _U}], tokenize=False,
                                                add_generation_prompt=True, **kwargs)
            three = tokenizer.apply_chat_template(
                [{"role": "user", "content": _U}, {"role": "assistant", "content": _A},
                 {"role": "user", "content": _C}], tokenize=False, add_generation_prompt=True, **kwargs)
        except Exception as e:  # noqa: BLE001 (templates may raise anything; say which and what to do)
            raise ChatTemplateError(f"The tokenizer's chat template failed to render a user/assistant/user "
                                    f"conversation ({type(e).__name__}: {e}); pass chat=ChatFormat(first=..., "
                                    "reply=..., between=...) to HFPolicy to give the turn layout by hand.") from e
        if one.count(_U) != 1 or three.count(_A) != 1 or three.count(_C) != 1:
            raise ChatTemplateError("The tokenizer's chat template does not render each message once, in order "
                                    f"(rendered {three!r}); pass chat=ChatFormat(first=..., reply=..., "
                                    "between=...) to HFPolicy to give the turn layout by hand.")
        first, reply = one.split(_U)
        between, reply_again = three.split(_A)[1].split(_C)
        if reply_again != reply:
            raise ChatTemplateError(f"The chat template opens the first reply with {reply!r} but a later one "
                                    f"with {reply_again!r}; pass chat=ChatFormat(...) to HFPolicy by hand.")
        eos = tokenizer.eos_token or ""
        if not eos or not between.startswith(eos):
            marker = end_marker(tokenizer, between)
            fix = (f"set tokenizer.eos_token = {marker!r} (and the model's generation_config.eos_token_id to "
                   "its id) before building the policy" if marker else
                   "give the tokenizer the template's end-of-turn token as eos_token")
            raise ChatTemplateError(f"The tokenizer's eos_token is {eos!r}, but its chat template ends an "
                                    f"assistant turn with {between!r}: a reply would never end where the "
                                    f"template ends it. {fix[0].upper() + fix[1:]}.")
        return cls(first=first, reply=reply, between=between[len(eos):])


class ChatTemplateError(FrogGymError, ValueError):
    """The tokenizer and its chat template disagree (or the template cannot be read); the message says what
    to set."""


def end_marker(tokenizer: Any, text: str) -> str | None:
    """The longest special token that ``text`` starts with (the template's end-of-turn marker), or None.

    Example:
        >>> end_marker(tokenizer, "<|im_end|>\\n<|im_start|>user\\n")  # doctest: +SKIP
        '<|im_end|>'
    """
    specials = set(getattr(tokenizer, "all_special_tokens", [])) | {
        str(t) for t in getattr(tokenizer, "added_tokens_decoder", {}).values()}
    found = [t for t in specials if t and text.startswith(t)]
    return max(found, key=len) if found else None


@dataclass
class Trajectory:
    """One episode's tokens: ``ids``, and ``mask`` 1 on the ids the model sampled, 0 on prompt and
    observations. ``turns`` lists the ``(start, end)`` span of each reply in ``ids``. ``logprobs`` holds,
    for each sampled id, its log-probability under the distribution it was drawn from, as the sampler
    computed it (0.0 on context, NaN on replies written without a sampler, e.g. by imitation)."""

    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    turns: list[tuple[int, int]] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if len(self.logprobs) < len(self.ids):  # built from ids and mask alone: context 0.0, replies unknown
            self.logprobs += [0.0 if m == 0 else math.nan for m in self.mask[len(self.logprobs):len(self.ids)]]

    def add_context(self, ids: Sequence[int]) -> None:
        """Append tokens the model did not write (prompt, observation, chat markup)."""
        self.ids += ids
        self.mask += [0] * len(ids)
        self.logprobs += [0.0] * len(ids)

    def add_reply(self, ids: Sequence[int], logprobs: Sequence[float] | None = None) -> None:
        """Append tokens the model sampled, with the sampler's log-probability of each (NaN if unknown)."""
        if logprobs is not None and len(logprobs) != len(ids):
            raise ValueError(f"add_reply got {len(ids)} ids but {len(logprobs)} log-probabilities.")
        self.turns.append((len(self.ids), len(self.ids) + len(ids)))
        self.ids += ids
        self.mask += [1] * len(ids)
        self.logprobs += list(logprobs) if logprobs is not None else [math.nan] * len(ids)

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
    """Nucleus sampling mass; 1.0 samples from the whole distribution (what an on-policy learner wants).
    There is no top-k, min-p or repetition penalty: whatever the checkpoint's ``generation_config`` says,
    replies are drawn from ``softmax(logits / temperature)`` (nucleus-cut when ``top_p < 1``)."""
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


def rooms_left(policy: Any, trajectories: Sequence[Trajectory]) -> list[int]:
    """The tokens each trajectory may still take in ``policy``'s context.

    Raises:
        ContextFull: one has no room for a reply (nothing is sampled for any of them then).
    """
    rooms = [policy.room(t) for t in trajectories]
    if min(rooms) < 1:
        raise ContextFull(f"a trajectory has {max(len(t) for t in trajectories)} tokens; the context "
                          f"limit is {policy.max_context}")
    return rooms


class HFPolicy:
    """A causal LM and its tokenizer, writing replies for many trajectories at once.

    Args:
        model: a ``transformers`` causal LM (optionally a ``peft`` model).
        tokenizer: its tokenizer; it needs an ``eos_token`` (the end of a reply) and gets a pad token if
            it has none.
        sampling: how replies are sampled.
        chat: the turn layout (default: from the tokenizer's chat template).
        tools: OpenAI tool schemas the chat template renders into the prompt (see
            :meth:`ChatFormat.from_tokenizer`); None: no tools in the prompt.

    Example:
        >>> policy = HFPolicy.from_pretrained("path/to/model")  # doctest: +SKIP
        >>> t = policy.start("Fix the bug.")  # doctest: +SKIP
        >>> [text] = policy.generate([t])  # doctest: +SKIP
        >>> policy.observe(t, "Edited the file.")  # doctest: +SKIP
    """

    def __init__(self, model: Any, tokenizer: Any, sampling: Sampling | None = None,
                 chat: ChatFormat | None = None, tools: list[dict[str, Any]] | None = None):
        require_torch()
        from transformers import GenerationConfig

        if tokenizer.eos_token_id is None:
            raise ValueError("The tokenizer has no eos_token, so a reply could never end; set "
                             "tokenizer.eos_token to the model's end-of-turn token.")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.model = model
        self.tokenizer = tokenizer
        self.sampling = sampling or Sampling()
        self.chat = chat or ChatFormat.from_tokenizer(tokenizer, tools)
        # A checkpoint's generation_config (Qwen3: top_k=20, top_p=0.95, temperature=0.6) fills every value
        # generate() is not given; replace it, so that nothing but Sampling shapes the distribution.
        self.checkpoint_generation_config = model.generation_config
        """The model's own generation config, as loaded (put back when a learner saves the model)."""
        model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                                   pad_token_id=tokenizer.pad_token_id)
        limit = getattr(model.config, "max_position_embeddings", None) or getattr(model.config, "n_positions", None)
        self.max_context = self.sampling.max_context_tokens or limit or 4096

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str], sampling: Sampling | None = None, *,
                        dtype: str | None = None, device: str | None = None,
                        tools: list[dict[str, Any]] | None = None, **model_kwargs: Any) -> HFPolicy:
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
        return cls(model, tokenizer, sampling, tools=tools)

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

    def observe(self, trajectory: Trajectory, observation: str, tool: bool = False) -> None:
        """Append an observation as the next user turn, or, with ``tool`` (it answers the reply's native
        tool call) and a template that lays out tool messages, as the tool's response."""
        if tool and self.chat.tool_between is not None and self.chat.tool_reply is not None:
            before, after = self.chat.tool_between, self.chat.tool_reply
            if self.chat.tool_json:
                observation = json.dumps(observation, ensure_ascii=False)
        else:
            before, after = self.chat.between, self.chat.reply
        trajectory.add_context(self._markup(before) + self.encode(observation) + self._markup(after))

    def room(self, trajectory: Trajectory) -> int:
        """How many tokens the next reply may have."""
        return min(self.sampling.max_new_tokens, self.max_context - len(trajectory))

    def generate(self, trajectories: Sequence[Trajectory]) -> list[str]:
        """Sample one reply for each trajectory, in one batch; append the sampled ids to each.

        Replies are drawn from ``softmax(logits / temperature)`` over the whole vocabulary (nucleus-cut only
        when ``top_p < 1``), the distribution a learner trains, and each sampled id's log-probability under
        it is recorded in the trajectory (:meth:`append_reply`). Returns the replies' text without special
        tokens.

        Raises:
            ContextFull: a trajectory has no room for a reply; nothing is appended to any of them.
        """
        torch = require_torch()
        from transformers import GenerationConfig, LogitsProcessorList

        if not trajectories:
            return []
        rooms = rooms_left(self, trajectories)
        pad, eos = self.tokenizer.pad_token_id, self.tokenizer.eos_token_id
        width = max(len(t) for t in trajectories)
        ids = torch.full((len(trajectories), width), pad, dtype=torch.long)
        attention = torch.zeros_like(ids)
        for row, t in enumerate(trajectories):  # left padding: every reply starts at the same column
            ids[row, width - len(t):] = torch.tensor(t.ids)
            attention[row, width - len(t):] = 1
        s = self.sampling
        # Every value that selects logits processors is set, so none comes from transformers' defaults
        # (top_k=50 when unset); temperature and top_p are applied by the recorder, which runs last.
        config = GenerationConfig(
            max_new_tokens=max(rooms), do_sample=not s.greedy, temperature=1.0, top_k=0, top_p=1.0, min_p=None,
            typical_p=1.0, epsilon_cutoff=0.0, eta_cutoff=0.0, repetition_penalty=1.0, no_repeat_ngram_size=0,
            min_new_tokens=0, renormalize_logits=False, eos_token_id=eos, pad_token_id=pad)
        recorder = _SamplerLogprobs(s.temperature, s.top_p)
        with torch.no_grad():
            out = self.model.generate(input_ids=ids.to(self.device), attention_mask=attention.to(self.device),
                                      generation_config=config, logits_processor=LogitsProcessorList([recorder]))
        new_ids = out[:, width:]
        logprobs = recorder.finish(new_ids).tolist()
        texts = []
        for row, t in enumerate(trajectories):
            n = min(rooms[row], new_ids.shape[1])
            texts.append(self.append_reply(t, new_ids[row, :n].tolist(), logprobs[row][:n]))
        return texts

    def append_reply(self, trajectory: Trajectory, ids: Sequence[int], logprobs: Sequence[float]) -> str:
        """Append a sampled reply (cut after its first end-of-turn token) and return its text.

        A reply cut by ``max_new_tokens`` gets the end-of-turn token appended as context (not trained: the
        model did not sample it), so that the next turn starts after a closed one as the chat template lays
        it out; not when the context window is full, since then no turn follows.
        """
        eos = self.tokenizer.eos_token_id
        ids, logprobs = list(ids), list(logprobs)
        if eos in ids:
            end = ids.index(eos) + 1
            ids, logprobs = ids[:end], logprobs[:end]
        trajectory.add_reply(ids, logprobs)
        if (not ids or ids[-1] != eos) and len(trajectory) < self.max_context:
            trajectory.add_context([eos])
        return self.tokenizer.decode(ids, skip_special_tokens=True)


class _SamplerLogprobs:
    """The last logits processor of ``generate``: applies temperature (and nucleus, when ``top_p < 1``) and
    records the log-probability of each sampled token under exactly the distribution it was drawn from.

    It keeps one ``[B, V]`` row of log-probabilities at a time: at each call the previous step's sampled
    token is the last input id; :meth:`finish` takes the last step's from the output.
    """

    def __init__(self, temperature: float, top_p: float):
        self.temperature, self.top_p = temperature, top_p
        self.previous: Any = None
        self.picked: list[Any] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        torch = require_torch()
        if self.previous is not None:
            self.picked.append(self.previous.gather(-1, input_ids[:, -1:]).squeeze(-1))
        scores = scores.float() / (self.temperature or 1.0)
        if self.top_p < 1.0:
            ordered, order = scores.sort(dim=-1, descending=True)
            outside = ordered.softmax(-1).cumsum(-1) - ordered.softmax(-1) >= self.top_p  # keeps the first
            scores = scores.scatter(-1, order, ordered.masked_fill(outside, -math.inf))
        self.previous = torch.log_softmax(scores, dim=-1)
        return scores

    def finish(self, new_ids: Any) -> Any:
        """``[B, n]`` log-probabilities of the ``n`` generated ids of each row."""
        torch = require_torch()
        if self.previous is not None and len(self.picked) < new_ids.shape[1]:
            self.picked.append(self.previous.gather(-1, new_ids[:, len(self.picked)][:, None]).squeeze(-1))
        return torch.stack(self.picked, dim=1).cpu() if self.picked else torch.zeros(new_ids.shape)


class HFAgent:
    """The :class:`~frog_gym.agents.base.Agent` protocol over an :class:`HFPolicy`, one episode at a time.

    Args:
        model: a path saved with ``save_pretrained`` (or a hub id), or a ready :class:`HFPolicy`.
        temperature, top_p, max_new_tokens, max_context_tokens: see :class:`Sampling` (greedy by default,
            for benchmarks).
        dtype, device: see :meth:`HFPolicy.from_pretrained`.
        native_tools: the chat template renders the tools and lays out the answer to a native call as a tool
            message, as the GRPO learner trains with (``GRPOConfig.native_tools``).

    After an episode, ``trajectory`` holds its exact tokens and ``stats`` the token counts.
    """

    name = "hf"

    def __init__(self, model: str | os.PathLike[str] | HFPolicy, *, temperature: float = 0.0, top_p: float = 1.0,
                 max_new_tokens: int = 512, max_context_tokens: int | None = None, dtype: str | None = None,
                 device: str | None = None, native_tools: bool = True):
        if isinstance(model, HFPolicy):
            self.policy = model
        else:
            from frog_gym.env.toolspec import openai_tools

            sampling = Sampling(temperature, top_p, max_new_tokens, max_context_tokens)
            self.policy = HFPolicy.from_pretrained(model, sampling, dtype=dtype, device=device,
                                                   tools=openai_tools() if native_tools else None)
        self.trajectory = Trajectory()
        self.stats = AgentStats()
        self._prompt = ""
        self._reply = ""

    def reset(self, prompt: str, info: dict[str, Any]) -> None:
        """Start a new conversation with the task prompt."""
        self._prompt, self._reply = prompt, ""
        self.trajectory = Trajectory()
        self.stats = AgentStats()

    def act(self, observation: str) -> Action:
        """The model's next reply (the env parses it). When the context is full, submit."""
        if not self.trajectory.ids:
            self.trajectory = self.policy.start(self._prompt)
        else:
            self.policy.observe(self.trajectory, observation, tool=answers_a_call(self._reply))
        try:
            [text] = self.policy.generate([self.trajectory])
        except ContextFull:
            self.stats.extra["context_full"] = True
            return {"tool": "submit"}
        self.stats.model_calls += 1
        self.stats.completion_tokens += len(self.trajectory.generated()[-1])
        self.stats.prompt_tokens = len(self.trajectory) - self.stats.completion_tokens
        self._reply = text
        return text
