"""``frog-gym oracle``: record the behavioural oracles of registered tasks, and measure their coverage."""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

HELP = "Record tasks' behavioural oracles (resumable) and print their coverage."


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True)
    rec = sub.add_parser("record", help="record the oracle of each task not yet recorded as it stands (resumable: "
                                        "each task's record is appended as soon as it is made)")
    _which_tasks(rec)
    rec.add_argument("--out", type=Path, default=None,
                     help="the oracle folder (default: the registry's, registry/oracles of a source checkout)")
    rec.add_argument("--seed", default="oracle", help="order of the tasks (seeded shuffle: running coverage "
                                                      "figures are a fair sample)")
    rec.add_argument("--again", action="store_true", help="record tasks that already have a current record too")
    rs = sub.add_parser("resettle", help="settle stored oracles again under a moved clock (records made before "
                                         "settling moved it): a call whose outcome depends on the date is dropped")
    _which_tasks(rs)
    rs.add_argument("--out", type=Path, default=None, help="the oracle folder (default: the registry's)")
    st = sub.add_parser("stats", help="coverage of the recorded oracles: pool and FrogLive tasks")
    st.add_argument("--out", type=Path, default=None, help="the oracle folder (default: the registry's)")
    cp = sub.add_parser("compact", help="rewrite each oracle file as one gzip stream, last record per task")
    cp.add_argument("--out", type=Path, default=None, help="the oracle folder (default: the registry's)")


def _which_tasks(p: argparse.ArgumentParser) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--all", action="store_true", help="every registered task")
    which.add_argument("--ids", nargs="+", metavar="ID", help="these task ids")
    which.add_argument("--repo", help="every task of this repository")


def _chosen(args: argparse.Namespace) -> list[str]:
    from frog_gym.catalog.task import load_task, task_index

    index = task_index()
    if args.all:
        return sorted(index)
    if args.repo:
        return sorted(i for i in index if load_task(i).repo == args.repo)
    return list(dict.fromkeys(args.ids))


def _wilson(k: int, n: int, z: float = 1.96) -> str:
    """The Wilson score interval of a proportion, as percentages (recording visits tasks in a seeded random
    order, so a partial run is a random sample).

    >>> _wilson(60, 100)
    '50.2-69.1%'
    """
    p = k / n
    mid, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return f"{100 * (mid - half):.1f}-{100 * (mid + half):.1f}%"


def _folder(out: Path | None) -> Path:
    from importlib import resources

    if out is not None:
        return out
    with resources.as_file(resources.files("frog_gym.registry")) as reg:
        return Path(reg) / "oracles"


def _existing(folder: Path) -> dict[str, dict]:
    from frog_gym.grading.oracle import _read_lines

    out: dict[str, dict] = {}
    for f in sorted(folder.glob("*.jsonl.gz")):
        for r in _read_lines(f.read_bytes()):
            out[r["instance_id"]] = r
    return out


def run(args: argparse.Namespace) -> int:
    from frog_gym.catalog.live import is_live
    from frog_gym.grading.oracle import RECORDER_VERSION, append_record, compact, record_task, task_digest
    from frog_gym.catalog.task import load_task, task_index

    folder = _folder(args.out)
    if args.action == "compact":
        compact(folder)
        return 0
    have = _existing(folder)
    if args.action == "stats":
        ids = sorted(task_index())
        for label, pool in (("pool", [i for i in ids if not is_live(i)]), ("FrogLive", [i for i in ids if is_live(i)])):
            cur = [have[i] for i in pool if i in have and have[i].get("digest") == task_digest(load_task(i))
                   and have[i].get("v") == RECORDER_VERSION]
            cov = sum(bool(r["calls"]) for r in cur)
            changed = sum(bool(r.get("changed_outcome")) for r in cur)
            pct = f"{100 * cov / len(cur):.1f}%, 95% interval {_wilson(cov, len(cur))}" if cur else "n/a"
            print(f"{label}: {len(cur)} of {len(pool)} tasks recorded; covered {cov} ({pct} of those recorded); "
                  f"gold tests whose outcome changed under recording: {changed} tasks")
        reasons: dict[str, int] = {}
        for r in have.values():
            if not r["calls"] and r.get("v") == RECORDER_VERSION:
                key = r.get("why", "?").split(":")[0][:90]
                reasons[key] = reasons.get(key, 0) + 1
        for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
            print(f"  {n:5d}  {why}")
        return 0
    if args.action == "resettle":
        return _resettle(args, folder, have)
    ids = _chosen(args)
    random.Random(args.seed).shuffle(ids)
    done = 0
    for n, iid in enumerate(ids, 1):
        task = load_task(iid)
        old = have.get(iid)
        if (old is not None and old.get("digest") == task_digest(task) and old.get("v") == RECORDER_VERSION
                and not args.again and not old.get("infra") and not old.get("changed_outcome")):
            continue
        t0 = time.monotonic()
        try:
            rec = record_task(task)
        except Exception as e:  # one task's failure is recorded (and retried on resume), never the end of the run
            rec = {"instance_id": iid, "repo": task.repo, "digest": task_digest(task), "calls": [], "covered": 0,
                   "recorded": 0, "stable": 0, "infra": True, "why": f"recording failed: {type(e).__name__}: {e}"[:400]}
        append_record(folder, rec)
        done += 1
        print(json.dumps({"n": n, "of": len(ids), "id": iid, "calls": len(rec["calls"]), "covered": rec["covered"],
                          "recorded": rec["recorded"], "why": rec.get("why", "")[:120],
                          "s": round(time.monotonic() - t0, 1)}), flush=True)
    print(f"recorded {done} tasks into {folder}", file=sys.stderr)
    return 0


def _resettle(args: argparse.Namespace, folder: Path, have: dict[str, dict]) -> int:
    from frog_gym.grading.oracle import append_record, resettle, task_digest
    from frog_gym.catalog.task import load_task

    ids = _chosen(args)
    counts = {"kept": 0, "fewer calls": 0, "lost its oracle": 0}
    for n, iid in enumerate(ids, 1):
        task = load_task(iid)
        old = have.get(iid)
        if old is None or old.get("digest") != task_digest(task):
            continue
        new = resettle(task, old)
        if new is None:
            continue
        append_record(folder, new)
        kind = ("kept" if len(new["calls"]) == len(old["calls"]) else "fewer calls" if new["calls"]
                else "lost its oracle")
        counts[kind] += 1
        print(json.dumps({"n": n, "of": len(ids), "id": iid, "calls": [len(old["calls"]), len(new["calls"])],
                          "covered": [old.get("covered", 0), new["covered"]], "s": new["resettled"]}), flush=True)
    print(f"resettled into {folder}: " + ", ".join(f"{v} {k}" for k, v in counts.items()), file=sys.stderr)
    return 0

