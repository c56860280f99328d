"""Scale-out benchmark: episodes per second with 1, 2 and 4 Ray env actors against the local process pool
with the same number of workers, on the same tasks, and what one env costs (CPU, memory, disk).

Both sides run ``frog_gym.bench.runner.bench`` on the same harness; only ``ray=`` differs. Runs are paired, and
the side that goes first alternates (by worker count and by round), so that neither side always meets a
warmer or a colder machine; every task's template is built before any timed run (the first reset of a task
builds it, which used to flatter whichever side ran second). Each run has its own nonce so that every
episode is really graded (the agent is the oracle plus a one-line file, as in ``benchmarks/harness.py``).
The Ray side includes starting its actors (at ``--cpus-per-env`` each, on one Ray started once here). The
load average is printed beside every figure: on a shared machine the absolute numbers move with it, the
paired ratio less.

    python benchmarks/scale.py [--tasks 40] [--workers 1,2,4] [--rounds 2]

Per env (measured in this process over ``--measure`` episodes): CPU seconds per episode (this process
and its children: the sandboxed shell, tools and the graded test run), peak resident memory of the env's
process and of its largest child, and disk: the episode's workspace and grading scratch, plus the shared
per-repository snapshot and venv, which a node holds once for all its envs. ``docs/scaling.md`` projects
these onto 1,500 concurrent envs and records the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # workers import benchmarks/harness.py as `harness` (its UniqueOracle)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)

from harness import UniqueOracle  # noqa: E402

from frog_gym.bench.runner import bench  # noqa: E402
from frog_gym.bench.harness import HarnessSpec, make_env  # noqa: E402
from frog_gym.catalog.snapshot import prepare  # noqa: E402
from frog_gym.catalog.spec import load_repo  # noqa: E402
from frog_gym.bench.suites import resolve  # noqa: E402
from frog_gym.catalog.task import load_task  # noqa: E402


def pick_tasks(n: int) -> list[str]:
    """``n`` tasks of the ``lite`` suite, spread over it (every k-th id), the same on every run."""
    ids = [t for t, _ in resolve("lite").tasks]
    step = max(1, len(ids) // n)
    return ids[::step][:n]


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else 0


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def measure_env(spec: HarnessSpec, n: int) -> dict[str, float]:
    """CPU, memory and disk of one env over ``n`` oracle episodes, in a process that runs nothing else
    (so that its children are the env's: the sandboxed shells and the graded test runs). CPU is counted
    after ``close()``, when the persistent shells have exited and been reaped, so only the mean is exact."""
    before = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    env = make_env(spec)
    agent = UniqueOracle(uuid.uuid4().hex)
    disk, peak_rss = [], 0
    for task_id in spec.task_ids[:n]:
        obs, info = env.reset(seed=0, options={"task_id": task_id})
        agent.reset(obs, info)
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs))
            done = terminated or truncated
            peak_rss = max(peak_rss, rss_kb())
        disk.append(du(env.unwrapped._dir))
    env.close()
    after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime for a, b in zip(after, before))
    repos = sorted({load_task(t).repo for t in spec.task_ids[:n]})
    shared = [du(prepare(load_repo(r)).venv) + du(prepare(load_repo(r)).tree) for r in repos]
    return {"episodes": len(disk), "cpu_s_per_episode": cpu / len(disk), "env_process_rss_mb": peak_rss / 1024,
            "largest_child_rss_mb": after[1].ru_maxrss / 1024,
            "workspace_mb_mean": sum(disk) / len(disk) / 2**20, "workspace_mb_max": max(disk) / 2**20,
            "repo_snapshot_and_venv_mb_mean": sum(shared) / len(shared) / 2**20}


def warm_templates(spec: HarnessSpec) -> None:
    """Reset an env once on every task, untimed: each task's template is then built for both sides."""
    env = make_env(spec)
    for task_id in spec.task_ids:
        env.reset(seed=0, options={"task_id": task_id})
    env.close()


def run_side(spec: HarnessSpec, workers: int, out: Path, ray: bool, cpus_per_env: float = 0.25) -> dict[str, float]:
    """One paired side: ``bench`` of the nonce'd oracle on every task of ``spec``."""
    s = bench(spec, "python:harness:unique_oracle", {"nonce": uuid.uuid4().hex}, out, workers=workers,
              progress=False, ray="local" if ray else None, spares=0, cpus_per_env=cpus_per_env if ray else None)
    return {"finished": s.finished, "wall_s": s.wall_s, "resolved": s.resolved, "infra_failures": s.infra_failures}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one-local", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--measure-only", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--ids", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--measure", type=int, default=8, help="episodes measured for the per-env costs")
    ap.add_argument("--sides", default="local,ray", help="which sides run (a partial rerun: 'local' or 'ray')")
    ap.add_argument("--rounds", type=int, default=2, help="paired runs per worker count (the first side alternates)")
    ap.add_argument("--cpus-per-env", type=float, default=0.25, help="CPUs each Ray actor reserves")
    args = ap.parse_args()
    if args.measure_only:
        print(json.dumps(measure_env(HarnessSpec.for_suite(args.ids), args.measure_only)))
        return
    if args.one_local:
        print(json.dumps(run_side(HarnessSpec.for_suite(args.ids), args.one_local, Path(args.out), ray=False)))
        return
    workers = [int(w) for w in args.workers.split(",")]
    tasks = pick_tasks(args.tasks)
    ids = Path(tempfile.gettempdir()) / f"frog-scale-{len(tasks)}.txt"  # a long id list goes in a file
    ids.write_text("\n".join(tasks) + "\n")
    spec = HarnessSpec.for_suite(str(ids))
    repos = sorted({load_task(t).repo for t in tasks})
    print(f"{len(tasks)} tasks in {len(repos)} repositories; harness {spec.fingerprint()}; "
          f"{os.cpu_count()} CPUs; load {load()}", flush=True)
    t = time.monotonic()
    for r in repos:  # both sides find every snapshot and venv built
        prepare(load_repo(r))
    print(f"repositories prepared in {time.monotonic() - t:.0f} s", flush=True)
    t = time.monotonic()
    warm_templates(spec)
    print(f"templates built in {time.monotonic() - t:.0f} s (untimed, for both sides)", flush=True)

    from frog_gym.bench.distributed import connect

    t = time.monotonic()
    connect(None, num_cpus=max(workers) + 1)
    print(f"local Ray started in {time.monotonic() - t:.1f} s (num_cpus={max(workers) + 1}, "
          f"{args.cpus_per_env:g} CPU per actor)", flush=True)

    print(f"\n{'workers':>7} {'round':>5} {'side':>6} {'first':>5} {'episodes/s':>10} {'per worker':>10} {'wall s':>7} "
          f"{'resolved':>9} {'infra':>5}  load 1/5/15 before -> after")
    rows: dict[tuple[int, str], list[float]] = {}
    sides = args.sides.split(",")
    with tempfile.TemporaryDirectory(prefix="frog-scale-") as tmp:
        for i, w in enumerate(workers):
            for r in range(args.rounds):
                order = sides if (i + r) % 2 == 0 else sides[::-1]
                for side in order:
                    before = load()
                    out = Path(tmp) / f"{side}-{w}-{r}"
                    try:
                        if side == "ray":
                            s = run_side(spec, w, out, ray=True, cpus_per_env=args.cpus_per_env)
                        else:  # in a process without Ray's threads (a sandbox is forked from the bench process)
                            cmd = [sys.executable, __file__, "--one-local", str(w), "--ids", str(ids), "--out", str(out)]
                            p = subprocess.run(cmd, capture_output=True, text=True)
                            if p.returncode:
                                raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode)
                            s = json.loads(p.stdout)
                    except Exception as e:  # noqa: BLE001 (reported in the table; the other runs go on)
                        print(f"{w:>7} {r:>5} {side:>6} failed: {type(e).__name__}: {e}", flush=True)
                        continue
                    per_s = s["finished"] / s["wall_s"]
                    rows.setdefault((w, side), []).append(per_s)
                    print(f"{w:>7} {r:>5} {side:>6} {'yes' if side == order[0] else 'no':>5} {per_s:>10.3f} "
                          f"{per_s / w:>10.3f} {s['wall_s']:>7.1f} {s['resolved']:>5}/{s['finished']:<3} "
                          f"{s['infra_failures']:>5}  {before} -> {load()}", flush=True)

    def mean(w: int, side: str) -> float:
        v = rows.get((w, side), [])
        return sum(v) / len(v) if v else float("nan")

    print(f"\nepisodes per second (mean of {args.rounds} rounds), and per worker:")
    print(f"{'workers':>7} " + " ".join(f"{side + ' eps/s':>13} {side + ' /worker':>14}" for side in sides)
          + ("   ray/local" if set(sides) == {"local", "ray"} else ""))
    for w in workers:
        line = f"{w:>7} " + " ".join(f"{mean(w, side):>13.3f} {mean(w, side) / w:>14.3f}" for side in sides)
        if set(sides) == {"local", "ray"}:
            line += f"   {mean(w, 'ray') / mean(w, 'local'):>9.2f}x"
        print(line)

    cmd = [sys.executable, __file__, "--measure-only", str(args.measure), "--ids", str(ids)]
    m = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    print(f"\nper env over {m['episodes']} oracle episodes, in a process of its own (load {load()}):")
    for k, v in m.items():
        if k != "episodes":
            print(f"  {k:<34} {v:8.2f}")


if __name__ == "__main__":
    main()
