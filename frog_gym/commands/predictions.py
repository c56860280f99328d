"""``frog-gym predictions``: a bench run's patches as SWE-bench predictions JSONL."""

from __future__ import annotations

import argparse

HELP = "Export a bench run's patches as SWE-bench predictions (instance_id, model_name_or_path, model_patch)."


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="a bench run directory (or its results.jsonl)")
    p.add_argument("--out", default="predictions.jsonl", help="the JSONL file to write")
    p.add_argument("--model-name", help="model_name_or_path (default: the run's agent label)")
    p.add_argument("--sample", type=int, default=0, help="which sample of each task to export")


def run(args: argparse.Namespace) -> int:
    from frog_gym.bench.predictions import export_predictions

    n = export_predictions(args.run, args.out, args.model_name, args.sample)
    print(f"wrote {n} prediction(s) to {args.out}")
    return 0
