"""The pool's train/eval splits share no bug, and match the registry as it stands."""

from __future__ import annotations

from collections import defaultdict

import pytest

from frog_gym.errors import UsageError
from frog_gym.generators import splits
from frog_gym.generators.dedupe import site_key
from frog_gym.catalog.task import load_task

REWRITE = "rebuild it: python -m frog_gym.generators.splits --write"


@pytest.fixture(scope="module")
def data():
    return splits.load()


def test_the_splits_cover_the_pool_as_it_stands(data):
    pool = set(splits.pool_ids())
    assert set(data["keys"]) == pool, f"registry/splits.json is stale ({len(set(data['keys']) ^ pool)} ids differ); {REWRITE}"
    for kind in splits.KINDS:
        train, ev = set(splits.split_ids(kind, "train")), set(splits.split_ids(kind, "eval"))
        assert not train & ev and train | ev == pool, kind
        assert 0.15 <= len(ev) / len(pool) <= 0.25, (kind, len(ev), len(pool))


def test_no_repository_and_no_function_is_on_both_sides(data):
    assert not set(data["repository"]["train"]) & set(data["repository"]["eval"])
    side = {i: s for s in splits.SIDES for i in data["function"][s]}
    sides_of_key = defaultdict(set)
    for i, keys in data["keys"].items():
        assert keys, f"{i} has no bug key"
        for k in keys:
            sides_of_key[k].add(side[i])
    shared = [k for k, s in sides_of_key.items() if len(s) > 1]
    assert not shared, shared[:5]


def test_a_combined_task_goes_with_the_single_bugs_it_holds(data):
    """Checked on the generators' own record of each bug (its sites), not on the keys the split was built from."""
    side = {i: s for s in splits.SIDES for i in data["function"][s]}
    single_at = {}
    tasks = [load_task(i) for i in sorted(data["keys"])]
    for t in tasks:
        sites = (t.provenance or {}).get("sites", [])
        if len(sites) == 1:
            single_at[(t.repo, *site_key(sites[0]))] = t.instance_id
    checked = 0
    for t in tasks:
        sites = (t.provenance or {}).get("sites", [])
        if len(sites) > 1:
            for s in sites:
                single = single_at.get((t.repo, *site_key(s)))
                if single is not None:
                    checked += 1
                    assert side[single] == side[t.instance_id], (t.instance_id, single)
    assert checked > 500  # issue 22 counted 672 combined tasks holding a registered single bug


def test_split_ids_names_what_is_valid():
    with pytest.raises(UsageError, match="No split 'functon'/'train': kind is one of repository, function"):
        splits.split_ids("functon", "train")


@pytest.mark.slow
def test_the_stored_bug_keys_are_what_the_snapshots_say(data):
    assert splits.pool_keys(sorted(data["keys"])) == data["keys"], REWRITE
