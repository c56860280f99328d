"""Measured difficulty: how often reference agents solve each task, recorded with the harness fingerprint.

A task's ``solve_rates`` maps an agent label to ``{"solved", "runs", "fingerprint", "max_steps"}``: how
many of its episodes under that harness resolved the task. They come from ``frog-gym bench`` results
(any agent's: run the reference ``apr`` at a fixed step budget, or import another agent's run) through
:func:`record_results`; only the latest fingerprint per agent is kept. :func:`reference_pass_rates` turns
them into the evidence :class:`~frog_gym.curriculum.CurriculumState` weighs in its priors
(``CurriculumState.from_registry`` reads them by default), and ``frog-gym tasks --difficulty`` prints the
distribution and its breakdown by statement level, tier and bug family.

Example:
    >>> rates = {"apr": {"solved": 1, "runs": 4, "fingerprint": "f", "max_steps": 30}}
    >>> solve_rate(rates["apr"])
    0.25
    >>> bucket(0.25), bucket(0.0), bucket(None)
    ('(0, 0.25]', '0', 'unmeasured')
    >>> family_of("attrs__combo2-05144183", {"family": "missing_branch+wrong_variable"})
    'combo2'
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
    """``{task_id: {agent: entry}}`` from :class:`~frog_gym.bench.harness.EpisodeResult`s; infrastructure
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
    from frog_gym.bench.runner import load_results
    from frog_gym.generators.taskfiles import rewrite_task_file
    from frog_gym.catalog.task import refresh_tasks, task_index

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


def reference_pass_rates(task_ids: list[str], agent: str = "apr") -> dict[str, tuple[int, int]]:
    """``task_id -> (solved, runs)`` of ``agent`` for the tasks it ran: the evidence the curriculum's priors
    weigh (``CurriculumState(reference_pass_rates=...)``, see :func:`frog_gym.curriculum.prior_beta`)."""
    from frog_gym.catalog.task import load_task

    out = {}
    for t in task_ids:
        entry = load_task(t).solve_rates.get(agent)
        if solve_rate(entry) is not None:
            out[t] = (int(entry["solved"]), int(entry["runs"]))
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


def family_of(instance_id: str, features: dict[str, Any]) -> str:
    """A task's bug family: ``features["family"]`` for a single bug, else the generator part of the id
    (``combo2``, ``handwritten``, ``live``, ...)."""
    family = features.get("family")
    if isinstance(family, str) and family and "+" not in family:
        return family
    return instance_id.partition("__")[2].split("-")[0] or "unknown"


def breakdown(tasks: list[Any]) -> str:
    """Solve rates per statement level, tier and bug family, as a text table: for each group, its task
    count, then per agent how many of its tasks were measured and the share of their episodes resolved."""
    from frog_gym.bench.suites import TIERS, tier_of

    agents = sorted({a for t in tasks for a in t.solve_rates})
    if not agents:
        return ""
    groups: dict[tuple[str, str], list[Any]] = {}
    for t in tasks:
        level = t.features.get("statement_level", t.statement_level)
        for key in (("level", level), ("tier", tier_of(t)), ("family", family_of(t.instance_id, t.features))):
            groups.setdefault(key, []).append(t)
    order = {"level": ("full", "medium", "vague"), "tier": TIERS}
    keys = sorted(groups, key=lambda k: (("level", "tier", "family").index(k[0]),
                                         order.get(k[0], ()).index(k[1]) if k[1] in order.get(k[0], ()) else 99,
                                         k[1]))
    width = max(len(f"{k}={v}") for k, v in keys)
    cells = [max(len(a), 14) for a in agents]
    head = f"  {'group':<{width}} {'tasks':>6}" + "".join(f" | {a:>{c}}" for a, c in zip(agents, cells))
    sub = f"  {'':<{width}} {'':>6}" + "".join(f" | {'measured  rate':>{c}}" for c in cells)
    lines = ["by group (rate: episodes resolved / episodes run, over the measured tasks):", head, sub]
    for kind, name in keys:
        row = f"  {kind + '=' + name:<{width}} {len(groups[kind, name]):>6}"
        for a, c in zip(agents, cells):
            entries = [t.solve_rates[a] for t in groups[kind, name] if solve_rate(t.solve_rates.get(a)) is not None]
            runs = sum(e["runs"] for e in entries)
            rate = f"{sum(e['solved'] for e in entries) / runs:.3f}" if runs else "-"
            row += f" | {f'{len(entries):>8} {rate:>5}':>{c}}"
        lines.append(row)
    return "\n".join(lines)
