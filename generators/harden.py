"""Harder tasks from easy ones: pair each hard bug with an easy one in another function, validated as one.

A single-bug task that one ``candidate_fixes`` edit undoes (:mod:`frog_gym.generators.undo`) teaches
little on its own. :func:`harden` takes a repository's registered single-bug tasks of the *anchor*
families (by default the kinds one candidate edit cannot undo) and pairs each with such an easy
single-bug task of another family, in another function (another file where one is left): the two bugs
are validated again as one combined task (every failure of both parts must be among its FAIL_TO_PASS),
and the easy bug's own single-bug task is then retired, since it lives on inside the combination. So
each combined task holds a bug that is not itself a task (:mod:`frog_gym.generators.dedupe`), the
anchor stays a task of its own, and the registry's count is unchanged while one easy task becomes a
harder one: an agent must find and fix two bugs, in two places, one of which no single candidate edit
restores.

Each anchor goes into at most ``max_uses`` combinations and each easy task into one. The run is
resumable like :func:`~frog_gym.generators.synthesis.generate`: refused pairs are remembered per seed,
and a combined task whose easy part is still registered as a single task (an interrupted run) has that
task retired on the next run.

Run: ``frog-gym generate toolz --harden 10 --seed 0`` validates up to 10 such pairs (``--families`` names
the anchor families).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Callable, Iterator

from frog_gym.generators import coverage_map, statements
from frog_gym.generators.hunks import changed_lines
from frog_gym.generators.operators import HARD_FAMILIES  # (defined beside the families; used here)
from frog_gym.generators.synthesis import GENERATOR, Candidate, GenerateConfig, Site, Summary, _bar, _ordered, _Pool, _reason_class, _Rejections, _sha8, combinable, combination_tests, make_task, tasks_path
from frog_gym.generators.taskfiles import append_task, read_existing, rewrite_task_file
from frog_gym.generators.undo import UndoCache
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.spec import RepoSpec



def _site(d: dict) -> dict:
    return d["provenance"]["sites"][0]


def _singles(records: list[dict]) -> list[dict]:
    return [d for d in records if d.get("provenance", {}).get("generator") == GENERATOR
            and len(d["provenance"]["sites"]) == 1 and not d.get("features", {}).get("crash")]


def retire_paired(records: list[dict]) -> set[str]:
    """Ids of single-bug tasks to retire: the easy part of every combined task made here (``harden`` in its
    provenance) that is still registered as a single task."""
    singles = {d["instance_id"] for d in records if len(d.get("provenance", {}).get("sites", [])) == 1}
    return {d["provenance"]["harden"]["easy"] for d in records
            if d.get("provenance", {}).get("harden") and d["provenance"]["harden"]["easy"] in singles}


def pairs(records: list[dict], fit: Callable[[dict, dict], bool], anchors: tuple[str, ...],
          rng: random.Random, max_uses: int = 2) -> Iterator[tuple[dict, dict]]:
    """(anchor, easy) pairs of single-bug task records in a seeded order, each anchor at most ``max_uses``
    times (combinations of earlier runs, ``provenance.harden``, included) and each easy task once: the easy one is of another family, in another function (preferably in
    another file), its span disjoint from the anchor's, and ``fit(anchor, easy)`` holds (the caller's test:
    undone by one candidate edit, not refused before).

    >>> def rec(i, fam, path, func, line): return {"instance_id": i, "provenance": {
    ...     "generator": GENERATOR, "sites": [{"path": path, "function": func, "lineno": line,
    ...     "end_lineno": line, "family": fam}]}}
    >>> recs = [rec("h", "missing_branch", "a.py", "f", 1), rec("e1", "comparison_flip", "a.py", "g", 9),
    ...         rec("e2", "comparison_flip", "b.py", "k", 3), rec("e3", "wrong_variable", "a.py", "f", 2)]
    >>> [(a["instance_id"], e["instance_id"]) for a, e in pairs(recs, lambda a, e: True, ("missing_branch",),
    ...                                                             random.Random(0))]
    [('h', 'e2'), ('h', 'e1')]
    """
    singles = sorted(_singles(records), key=lambda d: d["instance_id"])
    hard = [d for d in singles if _site(d)["family"] in anchors]
    easy = [d for d in singles if _site(d)["family"] not in anchors]
    rng.shuffle(hard)
    rng.shuffle(easy)
    used: Counter = Counter(d["provenance"]["harden"]["anchor"] for d in records
                            if d.get("provenance", {}).get("harden"))  # combinations made by earlier runs
    taken: set[str] = set()
    for _round in range(max_uses):
        for a in hard:
            if used[a["instance_id"]] >= max_uses:
                continue
            sa = _site(a)
            fits = [e for e in easy if e["instance_id"] not in taken
                    and combinable([Site(**_fields(sa)), Site(**_fields(_site(e)))])]
            # another file first: the agent must look in two places
            fits.sort(key=lambda e: _site(e)["path"] == sa["path"])
            for e in fits:
                if fit(a, e):
                    taken.add(e["instance_id"])
                    used[a["instance_id"]] += 1
                    yield a, e
                    break


def _fields(s: dict) -> dict:
    """A site dict with every field :class:`Site` needs (doctest records carry only the ones compared)."""
    out = {"path": "", "start": 0, "end": 0, "replacement": "", "lineno": 0, "end_lineno": 0, "family": "",
           "description": "", "function": "", "function_lines": 0, "module": ""}
    out.update({k: v for k, v in s.items() if k in out})
    return out


def harden(spec: RepoSpec, cfg: GenerateConfig, want: int, progress: bool = True,
           anchors: tuple[str, ...] | None = None, easy_below: int | None = None) -> Summary:
    """Make up to ``want`` combined tasks of one repository as the module docstring says; with ``easy_below``,
    only easy tasks whose gold patch changes fewer lines than that are retired (a big bug that one edit undoes,
    a swapped ``if``/``else``, stays a single-bug task: retiring it would shrink the pool's big bugs)."""
    import time

    start = time.monotonic()
    summary = Summary(spec.name)
    out = tasks_path(spec, cfg)
    anchors = anchors or cfg.families or HARD_FAMILIES
    records = read_existing(out)
    summary.existing = len(records)
    stale = retire_paired(records)
    if stale:
        rewrite_task_file(out, lambda d: None if d["instance_id"] in stale else d)
        summary.deduped += len(stale)
        records = read_existing(out)
    if want <= 0:
        return summary
    repo = prepare(spec)
    cmap, _ = coverage_map.build(repo)
    passing = cmap.passing()
    from frog_gym.generators.validate import baseline

    passing &= {t for t, s in baseline(repo).items() if s in ("PASSED", "XFAIL")}
    writer = statements.load_writer(cfg.statement_writer)
    rejections = _Rejections(coverage_map.gen_dir(repo) / f"rejected-seed{cfg.seed}.jsonl")
    known_ids = {d["instance_id"] for d in records}
    verdicts = UndoCache()

    def undone(d: dict) -> bool | None:
        return verdicts.task_undone(repo.tree, d)

    parts_of: dict[str, tuple[dict, dict]] = {}

    def combo_id(a: dict, e: dict) -> str:
        keys = sorted(Site(**_site(d)).key for d in (a, e))
        return f"{spec.name}__combo2-{_sha8(cfg.seed, *keys)}"

    def fit(a: dict, e: dict) -> bool:
        iid = combo_id(a, e)
        if easy_below is not None and changed_lines(e.get("patch", "")) >= easy_below:
            return False
        return iid not in known_ids and iid not in rejections.seen and bool(undone(e))

    def cands() -> Iterator[Candidate]:
        for a, e in pairs(records, fit, anchors, random.Random(f"{cfg.seed}:{spec.name}:harden")):
            sites = [Site(**_site(a)), Site(**_site(e))]
            iid = combo_id(a, e)
            parts_of[iid] = (a, e)
            yield Candidate(iid, sites, combination_tests(repo, cmap, passing, sites, [a, e], cfg, iid))

    pool = _Pool(cfg.workers)
    bar = _bar(progress, spec.name, want, 0)
    try:
        for cand, v in _ordered(pool, spec, cands(), cfg, window=cfg.workers + 1):
            a, e = parts_of[cand.iid]
            summary.tried += 1
            summary.test_runs += v.test_runs
            need = set(a["FAIL_TO_PASS"]) | set(e["FAIL_TO_PASS"])
            reason = v.reason if not v.ok else ""
            if v.ok and not need <= set(v.fail_to_pass):
                reason = "combined bug: FAIL_TO_PASS lacks some failures of its parts"
            if reason:
                summary.rejected["combo: " + _reason_class(reason)] += 1
                if "infrastructure" not in reason and "raised" not in reason:
                    rejections.add(cand.iid, reason, "combo")
                continue
            task = make_task(repo, cand, v, cfg, writer)
            task.provenance["parts"] = sorted([a["instance_id"], e["instance_id"]])
            task.provenance["harden"] = {"anchor": a["instance_id"], "easy": e["instance_id"]}
            append_task(out, task)
            rewrite_task_file(out, lambda d, drop=e["instance_id"]: None if d["instance_id"] == drop else d)
            known_ids.add(task.instance_id)
            summary.combined += 1
            summary.deduped += 1
            bar.update(1)
            if summary.combined >= want:
                break
    finally:
        pool.close()
        bar.close()
        verdicts.save()
    summary.seconds = time.monotonic() - start
    return summary


def describe(s: Summary) -> str:
    """One line about a :func:`harden` run."""
    rejected = ", ".join(f"{k}: {v}" for k, v in s.rejected.most_common())
    return (f"{s.repo}: +{s.combined} combined tasks pairing a hard bug with an easy one, {s.deduped} easy "
            f"single-bug tasks retired into them; tried {s.tried} in {s.seconds:.0f} s, {s.test_runs} test runs; "
            f"rejected {rejected or 'none'}")
