"""The leaderboard: stored results turned into ranked tables, plots, ``README.md`` and ``index.html``.

Results live as JSONL under ``leaderboard/results/`` (one file per submitted run, one
:class:`~frog_gym.bench.harness.EpisodeResult` a line). Only results with the same harness fingerprint are
ranked together: :func:`board` builds one table per fingerprint, and :func:`table` refuses a mix.

How a row is scored:

- An episode that ended in an infrastructure failure is shown apart and left out of the denominator: it
  says nothing about the agent.
- The solve rate is resolved / scored episodes, with a 95% Wilson interval.
- pass@k (unbiased, per task, averaged) is shown for each k up to the samples per task when there are
  several.
- Agents that read the answer (``oracle``) are listed under the table as references, never ranked.

Example:
    >>> from frog_gym.bench.harness import EpisodeResult
    >>> rs = [EpisodeResult("t1", 0, 0, "apr", "fp1", resolved=True), EpisodeResult("t2", 0, 0, "apr", "fp1")]
    >>> row = table(rs).rows[0]
    >>> row.agent, row.solved, row.scored
    ('apr', 1, 2)
"""

from __future__ import annotations

import functools
import html
import json
from collections import defaultdict
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from frog_gym.leaderboard.stats import mean_pass_at_k, wilson

from frog_gym.errors import FrogGymError
from frog_gym.bench.harness import EpisodeResult

TIERS = ("easy", "medium", "hard")


class FingerprintMismatchError(FrogGymError):
    """Results from different harnesses were given to one table."""


@dataclass
class Row:
    """One agent's scores under one harness."""

    agent: str
    ranked: bool
    episodes: int
    infra_failures: int
    scored: int
    solved: int
    tasks: int
    ci: tuple[float, float]
    pass_at: dict[int, float]
    tiers: dict[str, tuple[int, int]]
    repos: dict[str, tuple[int, int]]
    mean_steps: float
    mean_wall_s: float
    mean_tokens: float
    tampering: int = 0

    @property
    def rate(self) -> float:
        return self.solved / self.scored if self.scored else 0.0


@dataclass
class Table:
    """The ranked rows of one harness fingerprint, and the harness summary they share."""

    fingerprint: str
    harness: dict[str, Any]
    rows: list[Row] = field(default_factory=list)

    @property
    def ranked(self) -> list[Row]:
        return [r for r in self.rows if r.ranked]

    @property
    def references(self) -> list[Row]:
        return [r for r in self.rows if not r.ranked]


def _split(pairs: dict[str, list[bool]]) -> dict[str, tuple[int, int]]:
    return {k: (sum(v), len(v)) for k, v in sorted(pairs.items())}


def score(agent: str, results: list[EpisodeResult]) -> Row:
    """Score one agent's episodes (all under one harness)."""
    from frog_gym.agents.registry import is_ranked

    scored = [r for r in results if not r.infra_failure]
    per_task: dict[str, list[bool]] = defaultdict(list)
    tiers: dict[str, list[bool]] = defaultdict(list)
    repos: dict[str, list[bool]] = defaultdict(list)
    for r in scored:
        per_task[r.task_id].append(r.resolved)
        tiers[r.tier or "unknown"].append(r.resolved)
        repos[r.repo or "unknown"].append(r.resolved)
    counts = [(len(v), sum(v)) for v in per_task.values()]
    max_k = max((n for n, _ in counts), default=0)
    pass_at = {}
    if max_k > 1:
        for k in range(1, max_k + 1):
            v = mean_pass_at_k(counts, k)
            if v is not None:
                pass_at[k] = v
    solved = sum(r.resolved for r in scored)
    n = len(scored)

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    return Row(agent=agent, ranked=is_ranked(results[0].agent if results else agent), episodes=len(results),
               infra_failures=len(results) - n, scored=n, solved=solved,
               tasks=len({r.task_id for r in results}), ci=wilson(solved, n), pass_at=pass_at,
               tiers=_split(tiers), repos=_split(repos), mean_steps=mean([r.steps for r in scored]),
               mean_wall_s=mean([r.wall_s for r in scored]),
               mean_tokens=mean([r.prompt_tokens + r.completion_tokens for r in scored]),
               tampering=sum(1 for r in scored if r.tampering))


def table(results: list[EpisodeResult]) -> Table:
    """Rank the agents of ``results``, which must all share one harness fingerprint.

    Raises:
        FingerprintMismatchError: the results come from more than one harness.
    """
    fps = sorted({r.fingerprint for r in results})
    if len(fps) > 1:
        counts = {fp: sum(r.fingerprint == fp for r in results) for fp in fps}
        raise FingerprintMismatchError(
            f"These results come from {len(fps)} different harnesses ("
            + ", ".join(f"{fp}: {n} episodes" for fp, n in counts.items())
            + "). Scores under different harnesses (tools, budgets, sandbox, suite or task contents) are not "
            "comparable, so they are never ranked in one table. Render one table per harness (`frog-gym "
            "leaderboard` does), or rerun the agents under one harness: `frog-gym bench --harness FILE ...`.")
    if not fps:
        raise FrogGymError("No results to rank; run `frog-gym bench` and add its run with `frog-gym leaderboard --add`.")
    by_agent: dict[str, list[EpisodeResult]] = defaultdict(list)
    for r in results:
        by_agent[r.agent].append(r)
    rows = [score(a, rs) for a, rs in by_agent.items()]
    rows.sort(key=lambda r: (-r.rate, -r.ci[0], r.agent))
    harness = max(results, key=lambda r: r.finished_at).harness
    return Table(fps[0], harness, rows)


def dedupe(results: list[EpisodeResult]) -> list[EpisodeResult]:
    """One result per (fingerprint, agent, task, sample): the latest."""
    latest: dict[tuple[str, str, str, int], EpisodeResult] = {}
    for r in sorted(results, key=lambda r: r.finished_at):
        latest[(r.fingerprint, r.agent, r.task_id, r.sample)] = r
    return list(latest.values())


def board(results: list[EpisodeResult]) -> list[Table]:
    """One table per harness fingerprint, the one with the most episodes first; FrogLive's (suite ``live``)
    after the others, in their own tables."""
    results = dedupe(results)
    groups: dict[str, list[EpisodeResult]] = defaultdict(list)
    for r in results:
        groups[r.fingerprint].append(r)
    tables = [table(rs) for rs in groups.values()]
    tables.sort(key=lambda t: (t.harness.get("suite") == "live", -sum(r.episodes for r in t.rows), t.fingerprint))
    return tables


# -- storage ----------------------------------------------------------------------------------------
def leaderboard_dir() -> Path:
    """The package's leaderboard folder (the source tree's ``leaderboard/`` in an editable install)."""
    return Path(str(resources.files("frog_gym.leaderboard")))


def results_dir(root: Path | None = None) -> Path:
    return (root or leaderboard_dir()) / "results"


def load_results(paths: list[Path]) -> list[EpisodeResult]:
    """Every result in the given JSONL files and run directories (their ``results.jsonl``)."""
    from frog_gym.bench.runner import load_results as load_run

    out: list[EpisodeResult] = []
    for p in paths:
        if p.is_dir() and not (p / "results.jsonl").exists():
            for f in sorted(p.glob("*.jsonl")):
                out += load_run(f)
        else:
            out += load_run(p)
    return out


def add_run(run: Path, root: Path | None = None) -> Path:
    """Copy a bench run's results into the leaderboard as ``<agent>__<suite>__<fingerprint>.jsonl``."""
    from frog_gym.bench.runner import load_results as load_run

    results = load_run(run)
    if not results:
        raise FrogGymError(f"{run} has no results; run `frog-gym bench --out {run}` first.")
    fps = {r.fingerprint for r in results}
    if len(fps) > 1:
        raise FingerprintMismatchError(f"{run} mixes {len(fps)} harness fingerprints; a run has one.")
    agents = sorted({r.agent for r in results})
    suite = results[0].harness.get("suite", "suite")
    name = f"{'+'.join(agents)}__{suite}__{fps.pop()}".replace("/", "_").replace(":", "_") + ".jsonl"
    dest = results_dir(root) / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r.to_dict(), ensure_ascii=False, sort_keys=True)
             for r in sorted(results, key=lambda r: (r.agent, r.task_id, r.sample))]
    dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dest


# -- rendering --------------------------------------------------------------------------------------
def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _frac(pair: tuple[int, int] | None) -> str:
    if not pair or not pair[1]:
        return "–"
    return f"{_pct(pair[0] / pair[1])} ({pair[0]}/{pair[1]})"


def _version(v: Any) -> str:
    return f"v{v}" if str(v)[:1].isdigit() else str(v)


@functools.lru_cache(maxsize=None)
def _suite_size_today(name: str) -> int | None:
    """How many tasks the registry's suite ``name`` has today (None for an ad-hoc or unknown suite)."""
    from frog_gym.errors import FrogGymError
    from frog_gym.bench.suites import SUITES, resolve

    if name not in SUITES:
        return None
    try:
        return len(resolve(name).tasks)
    except FrogGymError:
        return None


def _harness_line(t: Table) -> str:
    h = t.harness
    today = _suite_size_today(str(h.get("suite")))
    was = (f"; the suite has {today} today: these results are on an earlier version of it"
           if today is not None and h.get("n_tasks") is not None and today != h.get("n_tasks") else "")
    return (f"suite `{h.get('suite')}` {_version(h.get('suite_version'))} ({h.get('n_tasks')} tasks{was}), "
            f"{h.get('max_steps')} steps, {h.get('command_timeout_s')} s per command, "
            f"{h.get('backend')} sandbox, prompt v{h.get('prompt_version')}, "
            f"{h.get('samples_per_task')} sample(s) per task")


def _columns(t: Table) -> tuple[list[int], list[str], list[str]]:
    ks = sorted({k for r in t.rows for k in r.pass_at})
    tiers = [x for x in TIERS if any(x in r.tiers for r in t.rows)]
    tiers += sorted({x for r in t.rows for x in r.tiers} - set(TIERS))
    repos = sorted({x for r in t.rows for x in r.repos})
    return ks, tiers, repos


def _main_rows(t: Table) -> tuple[list[str], list[list[str]]]:
    ks, _, _ = _columns(t)
    head = ["#", "agent", "solve rate", "95% CI", "solved / scored"] + [f"pass@{k}" for k in ks] + [
        "infra failures (not counted)", "tampering caught (scored 0)", "steps", "s / episode", "tokens / episode"]
    body = []
    for i, r in enumerate(t.ranked + t.references, 1):
        rank = str(i) if r.ranked else "ref."
        name = r.agent if r.ranked else f"{r.agent} (reads the gold patch; never ranked)"
        body.append([rank, name, _pct(r.rate), f"{_pct(r.ci[0])} – {_pct(r.ci[1])}", f"{r.solved} / {r.scored}"]
                    + [_pct(r.pass_at[k]) if k in r.pass_at else "–" for k in ks]
                    + [str(r.infra_failures), str(r.tampering), f"{r.mean_steps:.1f}", f"{r.mean_wall_s:.0f}",
                       f"{r.mean_tokens:.0f}"])
    return head, body


def _breakdown(t: Table, kind: str) -> tuple[list[str], list[list[str]]]:
    _, tiers, repos = _columns(t)
    keys = tiers if kind == "tiers" else repos
    head = ["agent"] + keys
    body = [[r.agent] + [_frac(getattr(r, kind).get(k)) for k in keys] for r in t.ranked + t.references]
    return head, body


def _md_table(head: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def _html_table(head: list[str], body: list[list[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in body)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def plot(t: Table, path: Path) -> Path:
    """Solve rate with 95% Wilson intervals, then the breakdown by tier and by repository, as one PNG."""
    try:
        import matplotlib
    except ImportError:
        raise FrogGymError("The leaderboard plots need matplotlib: pip install 'frog-gym[plot]'.") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = t.ranked + t.references
    _, tiers, repos = _columns(t)
    fig, axes = plt.subplots(1, 3, figsize=(15, 0.6 * len(rows) + 2.6),
                             gridspec_kw={"width_ratios": [1.2, 1, 1.3]})
    names = [r.agent + ("" if r.ranked else " (ref.)") for r in rows]
    ys = list(range(len(rows)))[::-1]
    rates = [r.rate for r in rows]
    err = [[r.rate - r.ci[0] for r in rows], [r.ci[1] - r.rate for r in rows]]
    axes[0].barh(ys, rates, xerr=err, color=["#2b7bba" if r.ranked else "#bbbbbb" for r in rows], capsize=4)
    axes[0].set_yticks(ys, names)
    axes[0].set_xlim(0, 1)
    axes[0].set_xlabel("solve rate (95% Wilson interval)")
    for ax, keys, kind, title in ((axes[1], tiers, "tiers", "by difficulty tier"),
                                  (axes[2], repos, "repos", "by repository")):
        width = 0.8 / max(1, len(rows))
        for i, r in enumerate(rows):
            vals = [(getattr(r, kind).get(k, (0, 0))) for k in keys]
            ax.bar([j + i * width for j in range(len(keys))], [s / n if n else 0 for s, n in vals], width,
                   label=names[i])
        ax.set_xticks([j + width * (len(rows) - 1) / 2 for j in range(len(keys))], keys,
                      rotation=30 if kind == "repos" else 0, ha="right" if kind == "repos" else "center")
        ax.set_ylim(0, 1)
        ax.set_title(title)
    axes[2].legend(fontsize=8, loc="upper right")
    fig.suptitle(f"harness {t.fingerprint}: {_harness_line(t).replace('`', '')}", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


_HEADER = """# frog-gym leaderboard

Generated by `frog-gym leaderboard` from `leaderboard/results/*.jsonl`; do not edit by hand.

Each table holds results under one harness (tools, prompt, budgets, sandbox, suite and task contents),
identified by its fingerprint. Results under different harnesses are never ranked together. The solve
rate counts resolved episodes (SWE-bench's RESOLVED_FULL) over scored episodes; infrastructure failures
are shown apart and left out of the denominator. Intervals are 95% Wilson score intervals.
"""


NO_PLOTS = "(No plot: matplotlib is not installed; `pip install 'frog-gym[plot]'` draws one.)"


def can_plot() -> bool:
    """Whether matplotlib is importable; without it the leaderboard is tables only."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def text_table(t: Table) -> str:
    """A table's main rows as plain text for a terminal, with its harness line above.

    >>> from frog_gym.bench.harness import EpisodeResult
    >>> print(text_table(table([EpisodeResult("t1", 0, 0, "apr", "fp1", resolved=True)])).splitlines()[-1][:16])
    | 1 | apr | 100.
    """
    head, rows = _main_rows(t)
    return f"harness {t.fingerprint}: {_harness_line(t).replace('`', '')}\n" + _md_table(head, rows)


def render(results: list[EpisodeResult], out: Path) -> list[Table]:
    """Write ``README.md``, ``index.html`` and, when matplotlib is installed, ``plots/<fingerprint>.png`` for
    ``results`` into ``out``."""
    tables = board(results) if results else []
    plots = out / "plots"
    draw = can_plot()
    if draw and plots.is_dir():  # only a renderer that can draw again drops the plots of harnesses now gone
        keep = {f"{t.fingerprint}.png" for t in tables}
        for old in plots.glob("*.png"):
            if old.name not in keep:
                old.unlink()
    md = [_HEADER]
    body_html = []
    if not tables:
        md.append("\nNo results yet. Run `frog-gym bench --agent apr --suite first` and "
                  "`frog-gym leaderboard --add runs/apr-first`.\n")
    for t in tables:
        png = plots / f"{t.fingerprint}.png"
        if draw:
            plot(t, png)
        # Without matplotlib an earlier plot stays and stays linked (it may predate the newest rows); none is deleted.
        rel = png.relative_to(out).as_posix() if png.is_file() else ""
        head, rows = _main_rows(t)
        tier_head, tier_rows = _breakdown(t, "tiers")
        repo_head, repo_rows = _breakdown(t, "repos")
        live = t.harness.get("suite") == "live"
        title = ("FrogLive (real fixes from PyPI releases, held out): harness" if live else "Harness") + \
            f" `{t.fingerprint}`"
        figure = f"![solve rates under harness {t.fingerprint}]({rel})" if rel else NO_PLOTS
        md += [f"\n## {title}\n", _harness_line(t) + ".\n", _md_table(head, rows),
               f"\n{figure}\n", "### By difficulty tier\n",
               _md_table(tier_head, tier_rows), "\n### By repository\n", _md_table(repo_head, repo_rows), ""]
        img = f'<img src="{rel}" alt="solve rates" style="max-width:100%">' if rel else html.escape(NO_PLOTS)
        body_html.append(
            f"<h2>{html.escape(title.split('`')[0])}<code>{t.fingerprint}</code></h2>"
            f"<p>{html.escape(_harness_line(t).replace('`', ''))}</p>"
            + _html_table(head, rows) + f"<p>{img}</p>"
            + "<h3>By difficulty tier</h3>" + _html_table(tier_head, tier_rows)
            + "<h3>By repository</h3>" + _html_table(repo_head, repo_rows))
    out.mkdir(parents=True, exist_ok=True)
    (out / "README.md").write_text("\n".join(md).rstrip() + "\n", encoding="utf-8")
    intro = "".join(f"<p>{html.escape(p)}</p>" for p in _HEADER.split("\n\n")[1:])
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>frog-gym leaderboard</title><style>"
            "body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem}"
            "table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.3rem .6rem;"
            "text-align:left}th{background:#f3f3f3}</style></head><body><h1>frog-gym leaderboard</h1>"
            + intro + ("".join(body_html) or "<p>No results yet.</p>") + "</body></html>\n")
    (out / "index.html").write_text(page, encoding="utf-8")
    return tables
