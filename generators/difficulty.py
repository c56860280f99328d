"""Measured difficulty: how often reference agents solve each task, recorded with the harness fingerprint.

A task's ``solve_rates`` maps an agent label to ``{"solved", "runs", "fingerprint", "max_steps"}``: how
many of its episodes under that harness resolved the task. They come from ``frog-gym bench`` results
(any agent's: run the reference ``apr`` at a fixed step budget, or import another agent's run) through
:func:`record_results`; only the latest fingerprint per agent is kept. :func:`reference_pass_rates` turns
them into the priors :class:`~frog_gym.curriculum.CurriculumState` takes (``reference_pass_rates=``), and
``frog-gym tasks --difficulty`` prints the distribution.

Example:
    >>> rates = {"apr": {"solved": 1, "runs": 4, "fingerprint": "f", "max_steps": 30}}
    >>> solve_rate(rates["apr"])
    0.25
    >>> bucket(0.25), bucket(0.0), bucket(None)
    ('(0, 0.25]', '0', 'unmeasured')
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

_BUCKETS = (("0", 0.0), ("(0, 0.25]", 0.25), ("(0.25, 0.5]", 0.5), ("(0.5, 0.75]", 0.75), ("(0.75, 1)", 0.999999),
            ("1", 1.0))


def solve_rate(entry: dict[str, Any] | None) -> float | None:
    """``solved / runs`` of one ``solve_rates`` entry (None when it has no run)."""
    if not entry or not entry.get("runs"):
        return None
    return entry["solved"] / entry["runs"]


def bucket(rate: float | None) -> str:
    if rate is None:
        return "unmeasured"
    return next(name for name, hi in _BUCKETS if rate <= hi)


def tally(results: list[Any], label: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """``{task_id: {agent: entry}}`` from :class:`~frog_gym.harness.EpisodeResult`s; infrastructure
    failures are not runs (they say nothing about the task). ``label`` names the agent (default: its own)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in results:
        if r.infra_failure:
            continue
        agent = label or r.agent
        e = out.setdefault(r.task_id, {}).setdefault(agent, {
            "solved": 0, "runs": 0, "fingerprint": r.fingerprint,
            "max_steps": r.harness.get("max_steps") if isinstance(r.harness, dict) else None})
        if e["fingerprint"] != r.fingerprint:
            raise ValueError(f"results of {agent} on {r.task_id} come from two harnesses ({e['fingerprint']}, "
                             f"{r.fingerprint}); import one run directory at a time")
        e["runs"] += 1
        e["solved"] += int(bool(r.resolved))
    return out


def record_results(run: str | Path, label: str | None = None) -> Counter:
    """Store the solve rates of a ``frog-gym bench`` run directory in the registered task records (the
    task files are rewritten; content hashes do not change). Returns how many tasks got a rate per file."""
    from frog_gym.bench import load_results
    from frog_gym.generators.synthesis import rewrite_task_file
    from frog_gym.task import refresh_tasks, task_index

    table = tally(load_results(run), label)
    index = task_index()
    files = sorted({index[t][0] for t in table if t in index})
    counts: Counter = Counter()
    for name in files:
        path = _path(name)

        def add(d: dict) -> dict:
            new = table.get(d["instance_id"])
            if not new:
                return d
            counts[name] += 1
            return dict(d, solve_rates={**d.get("solve_rates", {}), **new})

        rewrite_task_file(path, add)
    refresh_tasks()
    return counts


def _path(name: str) -> Path:
    import os
    from importlib import resources

    if os.path.isabs(name):
        return Path(name)
    with resources.as_file(resources.files("frog_gym.registry").joinpath("tasks", name)) as p:
        return Path(p)


def reference_pass_rates(task_ids: list[str], agent: str = "apr") -> dict[str, float]:
    """``task_id -> solve rate`` of ``agent`` for the tasks that have one (curriculum priors)."""
    from frog_gym.task import load_task

    out = {}
    for t in task_ids:
        rate = solve_rate(load_task(t).solve_rates.get(agent))
        if rate is not None:
            out[t] = rate
    return out


def histogram(tasks: list[Any]) -> str:
    """The distribution of solve rates per agent, as a text table (unmeasured tasks counted apart)."""
    agents = sorted({a for t in tasks for a in t.solve_rates})
    lines = [f"{len(tasks)} tasks; solve rates per reference agent (episodes resolved / episodes run):"]
    if not agents:
        return lines[0] + "\n  none measured yet: run `frog-gym bench --agent apr ...`, then " \
                          "`frog-gym tasks --import-results RUN_DIR`"
    for a in agents:
        c = Counter(bucket(solve_rate(t.solve_rates.get(a))) for t in tasks)
        fps = Counter(t.solve_rates[a]["fingerprint"] for t in tasks if a in t.solve_rates)
        lines.append(f"  {a} (harness {', '.join(f for f, _ in fps.most_common(3))}):")
        width = max(c.values())
        for name in [n for n, _ in _BUCKETS] + ["unmeasured"]:
            bar = "#" * round(30 * c[name] / width) if width else ""
            lines.append(f"    {name:>12} {c[name]:6}  {bar}")
    return "\n".join(lines)
