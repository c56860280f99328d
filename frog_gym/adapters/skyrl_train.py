"""Training on FrogSWE with skyrl-train: a dataset builder and an entry point.

skyrl-train (NovaSky-AI's trainer; on PyPI it ships inside the ``skyrl`` package as ``skyrl.train``, which
from 0.4 needs Python 3.12+, and its ``fsdp`` extra brings vLLM and a CUDA torch) reads a dataset of rows
``{"prompt": [messages], "env_class": NAME, ...}``: its ``PromptDataset`` hands every other column to the
env as ``extras``, and its generator makes one ``skyrl_gym`` env per rollout with
``skyrl_gym.make(env_class, env_config=..., extras=...)``. :func:`build_dataset` writes such rows for
:class:`~frog_gym.adapters.skyrl.FrogSWESkyRLEnv` (``env_class`` ``frog_swe``; ``task_id``, ``env_id``,
``env_kwargs`` as JSON text; the documented ``reward_spec`` and ``extra_info``).

:func:`main` is skyrl-train's own PPO entry point with FrogSWE's settings: it registers the env in the
trainer's process (skyrl-train runs its trainer in a Ray task, where our registration must happen),
gives the chat template our tools (``generator.chat_template_kwargs.tools``, so prompts carry the tool
schemas and the model answers with native calls), and sets ``environment.env_class=frog_swe`` and
multi-turn conversations unless the command line says otherwise. Every other option is skyrl-train's.

Example:
    >>> build_dataset(["frogtoy__handwritten-0001"], "runs/skyrl/train.parquet", env_id="FrogSWE-Toy-v0")  # doctest: +SKIP
    PosixPath('runs/skyrl/train.parquet')
    $ python -m frog_gym.adapters.skyrl_train data.train_data="['runs/skyrl/train.parquet']" \\
          trainer.policy.model.path=Qwen/Qwen2.5-1.5B-Instruct generator.max_turns=20 ...
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from frog_gym.errors import FrogGymError
from frog_gym.env.toolspec import openai_tools

ENV_CLASS = "frog_swe"
"""The rows' ``env_class``: the id :func:`frog_gym.adapters.skyrl.register` gives the env."""

SYSTEM_PROMPT = ("You are fixing a bug in a Python repository. Use the tools: one tool call per message, "
                 "and call submit when the bug is fixed.")

DEFAULTS = {
    "environment.env_class": ENV_CLASS,
    "generator.use_conversation_multi_turn": "true",
    "generator.max_turns": "30",
}
"""The overrides :func:`main` adds unless the command line sets them."""


def build_dataset(task_ids: Sequence[str], path: str | os.PathLike[str], *, env_id: str = "FrogSWE-v0",
                  env_kwargs: dict[str, Any] | None = None, system_prompt: str = SYSTEM_PROMPT,
                  repeats: int = 1, data_source: str = "frog_gym") -> Path:
    """Write skyrl-train's dataset (parquet, one row per task; ``.jsonl`` for JSON lines) for these tasks.

    Each row: ``prompt`` (the system message; the env's ``init`` adds the task's prompt, which names the
    sandbox), ``env_class``, ``data_source``, ``task_id``, ``env_id``, ``env_kwargs`` (JSON text),
    ``reward_spec`` (``{"method": "env", "ground_truth": task_id}``: the env grades, no rule does) and
    ``extra_info`` (``index``). skyrl-train's ``generator.n_samples_per_prompt`` makes the groups;
    ``repeats`` repeats rows.
    """
    if not task_ids:
        raise ValueError("build_dataset needs at least one task id; list them with: frog-gym registry list")
    rows = [{"prompt": [{"role": "system", "content": system_prompt}], "env_class": ENV_CLASS,
             "data_source": data_source, "task_id": task_id, "env_id": env_id,
             "env_kwargs": json.dumps(env_kwargs or {}),
             "reward_spec": {"method": "env", "ground_truth": task_id}, "extra_info": {"index": index}}
            for index, task_id in enumerate(t for t in task_ids for _ in range(repeats))]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix in (".jsonl", ".json"):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover
        raise ImportError("build_dataset writes parquet with pandas and pyarrow (pip install pandas pyarrow), "
                          "or write a .jsonl path") from None
    pd.DataFrame(rows).to_parquet(path)
    return path


def overrides(argv: Sequence[str]) -> list[str]:
    """skyrl-train's command-line overrides with :data:`DEFAULTS` added where ``argv`` sets none.

    Example:
        >>> overrides(["generator.max_turns=8"])
        ['environment.env_class=frog_swe', 'generator.use_conversation_multi_turn=true', 'generator.max_turns=8']
    """
    given = {a.split("=", 1)[0] for a in argv if "=" in a}
    return [f"{k}={v}" for k, v in DEFAULTS.items() if k not in given] + list(argv)


def _train(cfg: Any) -> None:
    from skyrl.train.entrypoints.main_base import BasePPOExp

    from frog_gym.adapters.skyrl import register

    register(ENV_CLASS)
    BasePPOExp(cfg).run()


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m frog_gym.adapters.skyrl_train KEY=VALUE ...``: skyrl-train's PPO with FrogSWE (see the
    module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if sys.version_info < (3, 12):
        raise FrogGymError(f"skyrl-train (the 'skyrl' package, 0.4 or newer) needs Python 3.12 or newer; this is "
                           f"{sys.version_info.major}.{sys.version_info.minor} (skyrl 0.3, the last release that "
                           "installs here, fails to import under it). Run with Python 3.12+ and pip install "
                           "'frog-gym[skyrl-train]'.")
    try:
        import ray
        from skyrl.train.config import SkyRLTrainConfig
        from skyrl.train.utils.utils import initialize_ray, validate_cfg
    except ImportError:
        raise FrogGymError("The skyrl-train entry point needs skyrl-train; install the extra: "
                           "pip install 'frog-gym[skyrl-train]'") from None
    cfg = SkyRLTrainConfig.from_cli_overrides(overrides(argv))
    cfg.generator.chat_template_kwargs = {**cfg.generator.chat_template_kwargs, "tools": openai_tools()}
    validate_cfg(cfg)
    initialize_ray(cfg)
    ray.get(ray.remote(num_cpus=1)(_train).remote(cfg))


if __name__ == "__main__":
    try:
        main()
    except FrogGymError as e:  # a setup problem: one line that says what to do, not a traceback
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
