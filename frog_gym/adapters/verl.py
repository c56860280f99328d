"""FrogSWE for verl (the ``verl`` extra: ``pip install 'frog-gym[verl]'``): an agent loop, a dataset
builder, and the files of a recipe.

verl (0.9) plays multi-turn rollouts in *agent loops*: subclasses of
``verl.experimental.agent_loop.AgentLoopBase`` whose ``run(sampling_params, **row)`` gets one dataset row
(its ``raw_prompt`` messages and ``extra_info``), asks the rollout server for tokens
(``server_manager.generate``), and returns an ``AgentLoopOutput``: prompt ids, response ids with a mask
that is 1 exactly on the tokens the model sampled, their log-probabilities, and a ``reward_score``, which
verl trains on as the trajectory's outcome reward. A row names its loop in its ``agent_name`` column;
verl's workers find the class through the YAML file set as
``actor_rollout_ref.rollout.agent.agent_loop_config_path`` (:func:`write_recipe` writes it).

:class:`FrogSWEAgentLoop` plays one FrogSWE episode per row: the env's prompt is the user turn, rendered
with our tools as OpenAI schemas (``tools=openai_tools()``) by verl's own token builder, the family's chat
template; each reply is read for native tool calls (:mod:`frog_gym.env.toolcalls`: Qwen's ``<tool_call>``,
Llama's JSON), each call is one env step answered by a ``role: "tool"`` message with the call's id, whose
tokens verl appends with mask 0. The episode ends at ``submit``, at the env's budget, or when the turns
(``max_turns``) or verl's ``response_length`` run out, and then the state is graded as it stands: the graded
reward is the ``reward_score``.

verl's own ``ToolAgentLoop`` with ``BaseTool`` subclasses does not fit a FrogSWE episode: it calls a
tool's ``create``/``execute``/``release`` around every single call, so nothing holds the sandbox from one
call to the next, and its reward comes from a reward function over the text, which cannot see the
repository's tests. The agent loop owns the episode instead, the protocol verl documents for environments
with state.

An infrastructure failure (a sandbox that cannot start, grading that cannot run) is not the agent's: the
trajectory's response mask is all 0 (no token of it is trained) and ``extra_fields["frog_infra_failure"]``
says why. verl has no way to drop a sample from a batch, so its reward (0.0) still counts in its group's
baseline; the ``frog_infra_failure`` metric shows how often that happens.

Example:
    >>> write_recipe(["frogtoy__handwritten-0001"], "runs/verl", env_id="FrogSWE-Toy-v0")  # doctest: +SKIP
    {'train': 'runs/verl/train.parquet', 'val': 'runs/verl/val.parquet', 'agent_loops': 'runs/verl/agent_loops.yaml'}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

from frog_gym.errors import FrogGymError, SandboxError, SandboxUnavailableError
from frog_gym.env.toolcalls import assistant_message, astep_reply, parse_tool_calls
from frog_gym.env.toolspec import openai_tools

try:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput
except ImportError:  # pragma: no cover
    raise FrogGymError("The verl adapter needs verl>=0.9; install the extra: pip install 'frog-gym[verl]'") from None

AGENT_NAME = "frog_swe_agent"
"""The ``agent_name`` of the rows :func:`build_dataset` writes, and the loop's name in ``agent_loops.yaml``."""

DATA_SOURCE = "frog_gym"
"""The rows' ``data_source`` (verl groups its validation metrics by it)."""

SYSTEM_PROMPT = ("You are fixing a bug in a Python repository. Use the tools: one tool call per message, "
                 "and call submit when the bug is fixed.")


class FrogSWEAgentLoop(AgentLoopBase):
    """One FrogSWE episode per dataset row, as a verl agent loop (see the module docstring).

    The row's ``extra_info`` says which episode: ``task_id``, ``env_id`` (default ``FrogSWE-v0``),
    ``max_turns`` (default: verl's ``multi_turn.max_assistant_turns``, else 30), ``partial_credit`` and
    ``env_kwargs`` (a JSON object of ``gymnasium.make`` keywords, as text). :func:`build_dataset` writes them.
    """

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        extra = dict(kwargs.get("extra_info") or {})
        messages: list[dict[str, Any]] = [dict(m) for m in kwargs["raw_prompt"]]
        tools = openai_tools()
        multi_turn = self.rollout_config.multi_turn
        max_turns = int(extra.get("max_turns") or multi_turn.max_assistant_turns or 30)
        keep = int(multi_turn.max_tool_response_length or 0)
        response_length = self.rollout_config.response_length
        env = await asyncio.to_thread(_make_env, extra)
        try:
            try:
                prompt, _ = await env.areset(options={"task_id": extra.get("task_id")})
            except (SandboxError, SandboxUnavailableError) as e:
                return await self._unscored(messages, tools, str(e))
            messages.append({"role": "user", "content": prompt})
            prompt_ids = await self.ct_build_initial_tokens(messages, tools=tools)
            initial = len(prompt_ids)
            mask: list[int] = []
            logprobs: list[float] = []
            request_id = uuid4().hex
            turns, outcome = 0, None
            while outcome is None and turns < max_turns and len(mask) < response_length:
                output = await self.server_manager.generate(request_id=request_id, prompt_ids=prompt_ids,
                                                            sampling_params=sampling_params)
                merged, mask, new_logprobs = await self.ct_merge_assistant_token(
                    prompt_ids, output.token_ids, mask, logprobs if (logprobs or output.log_probs) else None,
                    assistant_logprobs=output.log_probs or None)
                prompt_ids, logprobs = merged.token_ids, new_logprobs or []
                turns += 1
                text = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
                prefix = f"call_{turns}_"
                messages.append(assistant_message(parse_tool_calls(text, id_prefix=prefix)))
                step = await astep_reply(env, text, id_prefix=prefix)
                if step.done:
                    outcome = step
                    break
                if turns >= max_turns or len(mask) >= response_length:
                    break
                previous = list(messages)
                messages += [{**m, "content": _clip(m["content"], keep)} for m in step.messages]
                merged, new_mask, new_logprobs = await self.ct_merge_context_msg(
                    previous, messages, prompt_ids, mask, logprobs or None, tools=tools)
                if len(new_mask) >= response_length:  # no room for another reply
                    break
                prompt_ids, mask, logprobs = merged.token_ids, new_mask, new_logprobs or []
            submitted = outcome is not None and outcome.terminated
            if outcome is None:  # turns or tokens ran out: grade the state as it stands
                _, reward, _, _, info = await env.astep({"tool": "submit"})
            else:
                reward, info = outcome.reward, outcome.info
            infra = info.get("infra_failure")
            if infra:
                mask = [0] * len(mask)
            report = info.get("report") or {}
            response = prompt_ids[initial:]
            return AgentLoopOutput(
                prompt_ids=prompt_ids[:initial],
                response_ids=response[:response_length],
                response_mask=mask[:response_length],
                response_logprobs=logprobs[:response_length] if logprobs else None,
                reward_score=0.0 if infra else float(reward),
                num_turns=len(messages) - len(kwargs["raw_prompt"]),
                metrics={},
                extra_fields={"frog_infra_failure": infra or "",
                              "reward_extra_info": {"frog_resolved": float(bool(info.get("resolved"))),
                                                    "frog_submitted": float(submitted),
                                                    "frog_infra_failure": float(bool(infra)),
                                                    "frog_turns": float(turns)},
                              "frog": {"task_id": extra.get("task_id"), "status": report.get("resolved"),
                                       "steps": info.get("steps")}},
            )
        finally:
            await env.aclose()

    async def _unscored(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                        why: str) -> AgentLoopOutput:
        """A trajectory for an episode whose sandbox could not start: one untrained end token."""
        prompt_ids = await self.ct_build_initial_tokens(
            [*messages, {"role": "user", "content": f"Infrastructure failure (not scored): {why}"}], tools=tools)
        return AgentLoopOutput(
            prompt_ids=prompt_ids, response_ids=[self.tokenizer.eos_token_id], response_mask=[0], reward_score=0.0,
            num_turns=1, metrics={},
            extra_fields={"frog_infra_failure": why,
                          "reward_extra_info": {"frog_resolved": 0.0, "frog_submitted": 0.0,
                                                "frog_infra_failure": 1.0, "frog_turns": 0.0},
                          "frog": {"task_id": None, "status": None, "steps": 0}})


def _make_env(extra: dict[str, Any]) -> Any:
    import gymnasium as gym

    import frog_gym  # noqa: F401  (registers the envs)

    env_kwargs = extra.get("env_kwargs") or {}
    if isinstance(env_kwargs, str):
        env_kwargs = json.loads(env_kwargs) if env_kwargs.strip() else {}
    if extra.get("partial_credit"):
        env_kwargs = {**env_kwargs, "partial_credit": True}
    return gym.make(extra.get("env_id") or "FrogSWE-v0", **env_kwargs).unwrapped  # its async API


def _clip(text: str, keep: int) -> str:
    """Keep the head and tail of a long tool output (verl's ``max_tool_response_length``, 0: all)."""
    if not keep or len(text) <= keep:
        return text
    half = keep // 2
    return text[:half] + "...(truncated)..." + text[-half:]


def build_dataset(task_ids: Sequence[str], path: str | os.PathLike[str], *, env_id: str = "FrogSWE-v0",
                  max_turns: int = 30, partial_credit: bool = False, env_kwargs: dict[str, Any] | None = None,
                  system_prompt: str = SYSTEM_PROMPT, repeats: int = 1) -> Path:
    """Write verl's RL dataset (a parquet file, one row per episode) for these tasks.

    Each row has verl's columns: ``data_source``, ``prompt`` (the system message; the task's own prompt
    comes from the env at reset, since it names the sandbox), ``ability``, ``reward_model`` (its
    ``ground_truth`` is the task id; the reward itself is the agent loop's graded ``reward_score``),
    ``agent_name`` (:data:`AGENT_NAME`), and ``extra_info`` (``index``, ``task_id``, ``env_id``,
    ``max_turns``, ``partial_credit``, ``env_kwargs`` as JSON text; no ``tools_kwargs``, which verl reads
    as empty: the loop needs no per-tool arguments, and parquet cannot store an empty struct). ``repeats`` repeats each task; verl's ``rollout.n`` makes the groups.

    Returns:
        The parquet file's path.
    """
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover
        raise ImportError("build_dataset needs pandas and pyarrow; install the extra: pip install 'frog-gym[verl]'") \
            from None
    if not task_ids:
        raise ValueError("build_dataset needs at least one task id; list them with: frog-gym registry list")
    rows = []
    for index, task_id in enumerate(t for t in task_ids for _ in range(repeats)):
        rows.append({
            "data_source": DATA_SOURCE,
            "prompt": [{"role": "system", "content": system_prompt}],
            "ability": "swe",
            "reward_model": {"style": "frog_gym", "ground_truth": task_id},
            "agent_name": AGENT_NAME,
            "extra_info": {"index": index, "task_id": task_id, "env_id": env_id, "max_turns": max_turns,
                           "partial_credit": partial_credit, "env_kwargs": json.dumps(env_kwargs or {})},
        })
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path)
    return path


AGENT_LOOPS_YAML = f"""# verl agent loops (actor_rollout_ref.rollout.agent.agent_loop_config_path): written by frog_gym.adapters.verl
- name: {AGENT_NAME}
  _target_: frog_gym.adapters.verl.FrogSWEAgentLoop
"""


def write_recipe(task_ids: Sequence[str], out: str | os.PathLike[str], *, val_task_ids: Sequence[str] = (),
                 **dataset_kwargs: Any) -> dict[str, str]:
    """Write what verl's trainer reads: ``train.parquet``, ``val.parquet`` (the train tasks when no
    ``val_task_ids``) and ``agent_loops.yaml``; returns their paths by name."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    train = build_dataset(task_ids, out / "train.parquet", **dataset_kwargs)
    val = build_dataset(list(val_task_ids) or list(task_ids), out / "val.parquet", **dataset_kwargs)
    (out / "agent_loops.yaml").write_text(AGENT_LOOPS_YAML)
    return {"train": str(train), "val": str(val), "agent_loops": str(out / "agent_loops.yaml")}


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m frog_gym.adapters.verl --tasks ID,ID --out DIR``: write the recipe's files and print
    the verl command that trains on them."""
    p = argparse.ArgumentParser(prog="python -m frog_gym.adapters.verl", description=main.__doc__)
    p.add_argument("--tasks", required=True, help="comma-separated task ids (frog-gym registry list)")
    p.add_argument("--val-tasks", default="", help="comma-separated task ids for validation (default: --tasks)")
    p.add_argument("--out", required=True, help="folder for train.parquet, val.parquet, agent_loops.yaml")
    p.add_argument("--env-id", default="FrogSWE-v0")
    p.add_argument("--max-turns", type=int, default=30)
    p.add_argument("--repeats", type=int, default=1)
    a = p.parse_args(argv)
    split = [t for t in a.tasks.split(",") if t]
    files = write_recipe(split, a.out, val_task_ids=[t for t in a.val_tasks.split(",") if t], env_id=a.env_id,
                         max_turns=a.max_turns, repeats=a.repeats)
    print(json.dumps(files, indent=2))


if __name__ == "__main__":
    main()
