"""SWE-bench predictions from a bench run: ``instance_id``, ``model_name_or_path``, ``model_patch``.

SWE-bench's evaluation harness reads a JSONL (or JSON list) of such records. Our task ids are the
``instance_id`` of the SWE-bench rows that :mod:`frog_gym.generators.interop` exports, so a bench run's
patches can be scored by SWE-bench's own harness as well as ours.

Example:
    >>> from frog_gym.bench.harness import EpisodeResult
    >>> r = EpisodeResult("toolz__x-1", 0, 0, "apr", "fp", model_patch="diff --git a/x b/x\\n")
    >>> to_predictions([r])
    [{'instance_id': 'toolz__x-1', 'model_name_or_path': 'apr', 'model_patch': 'diff --git a/x b/x\\n'}]
"""

from __future__ import annotations

import json
from pathlib import Path

from frog_gym.errors import FrogGymError
from frog_gym.bench.harness import EpisodeResult


def to_predictions(results: list[EpisodeResult], model_name: str | None = None,
                   sample: int = 0) -> list[dict[str, str]]:
    """One SWE-bench prediction per task, from sample ``sample`` of each, sorted by instance id.

    Episodes that ended in an infrastructure failure are left out: they have no answer to score.
    """
    chosen = sorted((r for r in results if r.sample == sample and not r.infra_failure), key=lambda r: r.task_id)
    return [{"instance_id": r.task_id, "model_name_or_path": model_name or r.agent, "model_patch": r.model_patch}
            for r in chosen]


def export_predictions(run: str | Path, out: str | Path, model_name: str | None = None,
                       sample: int = 0) -> int:
    """Write a bench run's predictions as SWE-bench JSONL; returns how many were written."""
    from frog_gym.bench.runner import load_results

    results = load_results(run)
    if not results:
        raise FrogGymError(f"{run} holds no bench results; run `frog-gym bench --out {run}` first.")
    preds = to_predictions(results, model_name, sample)
    Path(out).write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in preds), encoding="utf-8")
    return len(preds)
