"""``frog-gym bench``: benchmark an agent on a suite under a fixed, fingerprinted harness."""

from __future__ import annotations

import argparse
import sys

HELP = "Benchmark an agent on a task suite under a fixed harness (parallel, resumable)."


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent", required=True,
                   help="apr, openai, hf, replay, noop, oracle, or python:module:factory")
    p.add_argument("--agent-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="an agent option (repeatable), e.g. --agent-opt model=qwen2.5-coder")
    p.add_argument("--suite", default="smoke",
                   help="first, smoke, lite, full, live, live@DATE (see `frog-gym suites`), comma-separated task ids, or a file of ids")
    p.add_argument("--harness", metavar="FILE",
                   help="a harness TOML to run under (default: the standard harness for --suite)")
    p.add_argument("--write-harness", metavar="FILE", help="write the harness TOML and exit")
    p.add_argument("--max-steps", type=int, help="override the harness's steps per episode")
    p.add_argument("--samples", type=int, help="episodes per task (for pass@k)")
    p.add_argument("--backend", choices=("local", "docker"), help="sandbox backend")
    p.add_argument("--workers", type=int, default=1, help="episodes in parallel (processes, or Ray actors)")
    p.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="run episodes on Ray env actors (extra 'ray'): alone, a Ray started on this machine; "
                        "HOST:PORT (from `ray start --head`) or 'auto' joins that cluster")
    p.add_argument("--spares", type=int, default=1, help="with --ray: warm actors kept to replace lost ones")
    p.add_argument("--cpus-per-env", type=float, metavar="N",
                   help="with --ray: CPUs each env actor reserves (default 0.25: an episode mostly waits)")
    p.add_argument("--visible-tests", action="store_true", default=None,
                   help="keep the FAIL_TO_PASS tests in the workspace (default: hidden until grading)")
    p.add_argument("--impact-selection", action="store_true", default=None,
                   help="grade only the PASS_TO_PASS tests an agent's changes can reach, as training does (a "
                        "harness of its own; default: every selected test, as SWE-bench grades)")
    p.add_argument("--out", help="run directory (default: runs/<label>-<suite>); rerun to resume")
    p.add_argument("--label", help="the name results carry on the leaderboard (default: the agent name)")
    p.add_argument("--limit", type=int, help="run at most this many pending episodes")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from frog_gym.agents.registry import parse_options
    from frog_gym.bench.runner import bench
    from frog_gym.bench.harness import HarnessSpec

    overrides = {k: v for k, v in (("max_steps", args.max_steps), ("samples_per_task", args.samples),
                                   ("backend", args.backend), ("visible_tests", args.visible_tests),
                                   ("impact_selection", args.impact_selection))
                 if v is not None}
    if args.harness:
        spec = HarnessSpec.load(args.harness)
        if overrides:
            spec = spec.replace(**overrides)
    else:
        from frog_gym.errors import UnknownNameError, UsageError

        try:
            spec = HarnessSpec.for_suite(args.suite, **overrides)
        except UnknownNameError as e:
            raise UsageError(f"--suite: {e}") from None
    if args.write_harness:
        spec.save(args.write_harness)
        print(f"wrote {args.write_harness}: suite {spec.suite} ({len(spec.tasks)} tasks), fingerprint "
              f"{spec.fingerprint()}")
        return 0
    opts = parse_options(args.agent_opt)
    label = args.label or args.agent
    out = args.out or f"runs/{label.replace(':', '_').replace('/', '_')}-{spec.suite}"
    from frog_gym.agents.registry import check_agent
    from frog_gym.paths import check_writable

    check_agent(args.agent, opts)  # every refusal comes before the header line, and before the run folder exists
    check_writable(out, "--out")
    print(f"frog-gym bench: agent {label} on suite {spec.suite} ({len(spec.tasks)} tasks x "
          f"{spec.samples_per_task} samples), harness {spec.fingerprint()}, {args.workers} worker(s){' on Ray ' + args.ray if args.ray else ''}, out {out}",
          file=sys.stderr)
    s = bench(spec, args.agent, opts, out, workers=args.workers, label=label,
              progress=not args.no_progress, limit=args.limit, ray=args.ray, spares=args.spares,
              cpus_per_env=args.cpus_per_env)
    scored = [r for r in s.results if not r.infra_failure]
    rate = f"{sum(r.resolved for r in scored)}/{len(scored)}" if scored else "0/0"
    print(f"{s.finished} episode(s) run, {s.skipped} already done, {s.infra_failures} infrastructure failure(s); "
          f"resolved {rate} this call; {s.wall_s:.0f} s. Results: {s.out / 'results.jsonl'}")
    if s.interrupted:
        print(f"interrupted: the {s.finished} finished episode(s) are kept; rerun the same command to resume.",
              file=sys.stderr)
        return 130
    print(f"Next: frog-gym leaderboard --add {s.out}")
    return 0
