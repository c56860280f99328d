"""FrogLive is held out of training by time: the contamination checks of the time split.

A live fix counts as held out only when it is released after its repository's training snapshot and its new
lines are not in that snapshot (``frog_gym.generators.timesplit``). These tests recompute the split from the
registry's specs, task records and the snapshots' sources (fetched from PyPI into the cache), so they fail
when a re-pin, a new live task or a new training task breaks it. On the registry before the split (all
training snapshots at their newest release), 121 of 126 measured live fixes had more than 5% of their new
lines verbatim in the training snapshot and 46 shared a new line with 204 training tasks' gold patches
(``python -m frog_gym.generators.timesplit --registry <old checkout>/registry --figures``).
"""

from __future__ import annotations

import ast
import random

import gymnasium as gym
import pytest

import frog_gym  # noqa: F401  (registers the envs)
from frog_gym.bench.suites import resolve
from frog_gym.catalog.live import is_live, live_task_ids, time_split
from frog_gym.catalog.task import registered_task_ids
from frog_gym.generators import timesplit as ts

REWRITE = "rebuild it with `python -m frog_gym.generators.timesplit --write` after the registry changes"


@pytest.fixture(scope="module")
def registry() -> ts.Registry:
    return ts.Registry(ts.registry_dir())


@pytest.fixture(scope="module")
def rows(registry: ts.Registry) -> list[dict]:
    return ts.figures(registry, ts._tree)


def test_the_split_file_is_the_registry_as_it_stands(registry):
    assert time_split() == ts.split(registry, ts._tree), f"registry/timesplit.json is stale; {REWRITE}"


def test_froglive_and_its_suites_hold_only_held_out_fixes():
    verdicts = time_split()["live"]
    live = sorted(i for i in registered_task_ids() if is_live(i))
    assert sorted(verdicts) == live, f"every registered live task has a verdict; {REWRITE}"
    held = sorted(i for i in live if verdicts[i]["held_out"])
    seen = set(live) - set(held)
    assert held
    assert gym.spec("FrogLive-v0").kwargs["task_ids"] == held == live_task_ids()
    assert sorted(live_task_ids(seen=True)) == sorted(seen)
    assert {iid for iid, _ in resolve("live").tasks} == set(held)
    since = "2025-06-01"
    dated = [iid for iid, _ in resolve(f"live@{since}").tasks]
    assert dated and set(dated) < set(held)
    assert all(verdicts[i]["released"] >= since for i in dated)
    assert not any(verdicts[i]["released"] >= since for i in set(held) - set(dated))


def test_every_held_out_fix_is_released_after_its_training_snapshot(registry):
    counts = registry.training_counts()
    for rec in registry.records(("live",)):
        if not time_split()["live"][rec["instance_id"]]["held_out"] or not counts.get(rec["repo"]):
            continue
        src, prov = registry.spec(rec["repo"])["source"], ts.provenance(rec)
        assert ts._version(prov["to_version"]) > ts._version(src["version"]), rec["instance_id"]
        assert str(prov["released"])[:10] > src["released"], (rec["instance_id"], prov["released"], src["released"])


def test_at_most_5_percent_of_a_held_out_fix_is_verbatim_in_its_training_snapshot(rows):
    measured = [r for r in rows if r["held_out"] and r["verbatim"] is not None]
    assert measured, "some held-out fix is of a repository that has training tasks"
    over = [(r["id"], round(r["verbatim"], 2)) for r in measured if r["verbatim"] > ts.MAX_VERBATIM]
    assert not over, f"held-out fixes found in their training snapshot: {over}"


def test_no_training_task_adds_a_line_that_a_held_out_fix_adds(rows):
    shared = {r["id"]: r["shared_with"][:3] for r in rows if r["held_out"] and r["shared_with"]}
    assert not shared, f"training tasks whose gold patch adds a held-out fix's new line: {shared}"


def test_the_check_finds_a_fix_in_a_snapshot_that_holds_it(registry, rows):
    """Measured against the release each fix comes from (N+1), the same check sees the fix: so a snapshot
    that held it would fail the test above."""
    held = [r for r in rows if r["held_out"] and r["new_lines"] >= 2]
    assert held
    by_id = {rec["instance_id"]: rec for rec in registry.records(("live",))}
    for r in random.Random(0).sample(held, min(5, len(held))):
        prov = ts.provenance(by_id[r["id"]])
        fixed = ts.snapshot_lines(ts._tree(r["repo"], {"version": prov["to_version"], "sha256": prov["to_sha256"]}))
        src = ast.literal_eval(prov["source"]) if isinstance(prov["source"], str) else prov["source"]
        base = ts.snapshot_lines(ts._tree(r["repo"], src))
        fix = ts.fix_lines(by_id[r["id"]], lambda src: base)
        assert len(fix & fixed) / len(fix) >= 0.95, r["id"]


def test_the_table_shows_each_repository_s_split():
    """``--table`` (the table of docs/froglive_timesplit.md) gives each repository's snapshot, date and counts as the
    split file holds them."""
    data = time_split()
    rows = [line.strip("|").split(" | ") for line in ts.table(data).splitlines()[2:]]
    assert [r[0].strip() for r in rows] == sorted(data["repos"])
    for repo, snap, date, held, seen, span in ([c.strip() for c in r] for r in rows):
        mine = {i: v for i, v in data["live"].items() if i.startswith(repo + "__")}
        held_dates = sorted(v["released"] for v in mine.values() if v["held_out"])
        assert (int(held), int(seen)) == (len(held_dates), len(mine) - len(held_dates)), repo
        assert date == (data["repos"][repo]["training_date"] or "-"), repo
        assert snap.startswith(data["repos"][repo]["training_release"] or "- (no training task)"), repo
        assert span == ("-" if not held_dates else f"{held_dates[0]} .. {held_dates[-1]}" if len(set(held_dates)) > 1
                        else held_dates[0]), repo
