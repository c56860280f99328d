"""The leaderboard: statistics against known values, one table per harness, rendering and storage."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import subprocess
import sys

import pytest
from frog_gym.leaderboard.render import FingerprintMismatchError, add_run, board, load_results, render, table
from frog_gym.leaderboard.stats import mean_pass_at_k, pass_at_k, wilson

from frog_gym.bench.harness import EpisodeResult


def ep(task: str, agent: str = "apr", fp: str = "fp1", resolved: bool = False, sample: int = 0,
       infra: str | None = None, tier: str = "easy", repo: str = "toolz") -> EpisodeResult:
    return EpisodeResult(task, sample, sample, agent, fp, repo=repo, tier=tier, resolved=resolved,
                         infra_failure=infra, harness={"suite": "smoke", "suite_version": "1", "n_tasks": 3,
                                                       "max_steps": 100, "backend": "local"})


# -- statistics -------------------------------------------------------------------------------------
@pytest.mark.parametrize("k,n,expected", [
    (5, 10, (0.2366, 0.7634)),
    (0, 10, (0.0, 0.2775)),
    (10, 10, (0.7225, 1.0)),
])
def test_wilson_matches_known_intervals(k, n, expected):
    assert wilson(k, n) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("k,n", [(1, 20), (81, 263), (7, 15), (0, 3), (15, 15)])
def test_wilson_bounds_are_where_the_score_statistic_equals_z(k, n):
    # The Wilson interval is {p : |k/n - p| / sqrt(p (1 - p) / n) <= z}; check it from that definition.
    z = 1.959963984540054
    lo, hi = wilson(k, n)
    for bound in (lo, hi):
        if 0 < bound < 1:
            assert abs(k / n - bound) / math.sqrt(bound * (1 - bound) / n) == pytest.approx(z, rel=1e-9)
    assert lo <= k / n <= hi


def test_wilson_rejects_impossible_counts():
    with pytest.raises(ValueError, match="0 <= successes <= n"):
        wilson(3, 2)


@pytest.mark.parametrize("n,c,k,expected", [
    (5, 2, 1, 0.4), (5, 2, 2, 0.7), (5, 2, 3, 0.9), (5, 2, 4, 1.0), (10, 3, 5, 1 - 21 / 252),
])
def test_pass_at_k_matches_known_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize("n,c", [(6, 0), (6, 1), (6, 4), (7, 7), (8, 3)])
def test_pass_at_k_is_the_chance_a_random_k_subset_holds_a_pass(n, c):
    outcomes = [True] * c + [False] * (n - c)
    for k in range(1, n + 1):
        subsets = list(itertools.combinations(outcomes, k))
        assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))


def test_pass_at_k_averages_only_tasks_with_enough_samples():
    assert mean_pass_at_k([(3, 1), (3, 0), (1, 1)], 2) == pytest.approx((1 - 1 / 3 + 0) / 2)
    assert mean_pass_at_k([(1, 1)], 2) is None


# -- tables ------------------------------------------------------------------------------------------
def test_results_of_different_harnesses_are_never_ranked_together():
    mixed = [ep("t1", fp="aaaa"), ep("t2", fp="bbbb", resolved=True)]
    with pytest.raises(FingerprintMismatchError) as e:
        table(mixed)
    assert str(e.value).startswith("These results come from 2 different harnesses (aaaa: 1 episodes, "
                                   "bbbb: 1 episodes). Scores under different harnesses")
    assert "never ranked in one table" in str(e.value)
    assert sorted(t.fingerprint for t in board(mixed)) == ["aaaa", "bbbb"]


def test_infra_failures_are_shown_apart_and_not_in_the_denominator():
    row = table([ep("t1", resolved=True), ep("t2"), ep("t3", infra="grading timed out")]).rows[0]
    assert (row.solved, row.scored, row.infra_failures, row.episodes) == (1, 2, 1, 3)
    assert row.rate == 0.5 and row.ci == pytest.approx(wilson(1, 2))


def test_ranking_pass_at_k_breakdowns_and_references():
    rs = [ep("t1", "apr", resolved=True, sample=0), ep("t1", "apr", sample=1),
          ep("t2", "apr", sample=0, tier="hard", repo="six"), ep("t2", "apr", sample=1, tier="hard", repo="six"),
          ep("t1", "noop"), ep("t2", "noop", tier="hard", repo="six"),
          ep("t1", "oracle", resolved=True), ep("t2", "oracle", resolved=True, tier="hard", repo="six")]
    t = table(rs)
    assert [r.agent for r in t.ranked] == ["apr", "noop"]
    assert [r.agent for r in t.references] == ["oracle"]
    apr = t.ranked[0]
    assert apr.pass_at == {1: pytest.approx(0.25), 2: pytest.approx(0.5)}
    assert apr.tiers == {"easy": (1, 2), "hard": (0, 2)} and apr.repos == {"six": (0, 2), "toolz": (1, 2)}
    assert t.ranked[1].pass_at == {}  # one sample per task: no pass@k column


def test_a_later_result_of_the_same_episode_replaces_the_earlier():
    old, new = ep("t1"), ep("t1", resolved=True)
    old.finished_at, new.finished_at = 1.0, 2.0
    assert board([new, old])[0].rows[0].solved == 1


# -- rendering and storage ---------------------------------------------------------------------------
def test_render_writes_one_table_per_fingerprint_with_plots(tmp_path):
    rs = [ep("t1", resolved=True), ep("t2"), ep("t1", "oracle", resolved=True), ep("t1", fp="other")]
    tables = render(rs, tmp_path)
    readme = (tmp_path / "README.md").read_text()
    assert len(tables) == 2 and readme.count("## Harness `") == 2
    assert "| 1 | apr | 50.0% | 9.5% – 90.5% | 1 / 2 |" in readme
    assert "oracle (reads the gold patch; never ranked)" in readme
    assert "### By difficulty tier" in readme and "### By repository" in readme
    page = (tmp_path / "index.html").read_text()
    assert page.count("<table>") == 6
    for t in tables:
        png = tmp_path / "plots" / f"{t.fingerprint}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_add_run_stores_results_sorted_by_episode(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    lines = [ep("t2"), ep("t1", resolved=True)]
    (run / "results.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in lines))
    dest = add_run(run, root=tmp_path / "lb")
    assert dest.name == "apr__smoke__fp1.jsonl"
    stored = [json.loads(ln)["task_id"] for ln in dest.read_text().splitlines()]
    assert stored == ["t1", "t2"]
    assert {r.task_id for r in load_results([tmp_path / "lb" / "results"])} == {"t1", "t2"}


def test_cli_refuses_one_table_over_two_harnesses(tmp_path):
    f = tmp_path / "mixed.jsonl"
    f.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in [ep("t1", fp="aaaa"), ep("t1", fp="bbbb")]))
    cmd = [sys.executable, "-m", "frog_gym.cli", "leaderboard", "--results", str(f), "--dir", str(tmp_path / "o")]
    refused = subprocess.run([*cmd, "--one-table"], check=False, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1
    assert "frog-gym leaderboard: error: These results come from 2 different harnesses" in refused.stderr
    ok = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "harness aaaa" in ok.stdout and "harness bbbb" in ok.stdout


def test_stored_results_are_package_data_and_rank_per_harness():
    from frog_gym.leaderboard.render import leaderboard_dir, results_dir

    stored = load_results([results_dir()])
    assert stored, f"no results under {results_dir()}"
    assert all(r.fingerprint and r.harness.get("suite") for r in stored)
    tables = board(stored)
    assert {t.fingerprint for t in tables} == {r.fingerprint for r in stored}
    assert (leaderboard_dir() / "README.md").read_text().startswith("# frog-gym leaderboard")


def test_cli_without_matplotlib_shows_the_table_and_writes_no_plot(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n"
                                               for r in [ep("t1", resolved=True), ep("t2")]))
    blocked = ("import sys; sys.modules['matplotlib'] = None; from frog_gym.cli import main; "
               "sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", blocked, "leaderboard", "--add", str(run), "--dir",
                           str(tmp_path / "lb")], check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "| apr | 50.0%" in proc.stdout and "no plots (No plot: matplotlib is not installed" in proc.stdout
    assert not (tmp_path / "lb" / "plots").exists()
    assert "pip install 'frog-gym[plot]'" in (tmp_path / "lb" / "README.md").read_text()


def test_rendering_without_matplotlib_keeps_and_links_the_plots_already_drawn(tmp_path):
    rs = [ep("t1", resolved=True), ep("t2")]
    (table_,) = render(rs, tmp_path)
    png = tmp_path / "plots" / f"{table_.fingerprint}.png"
    drawn = png.read_bytes()
    stale = tmp_path / "plots" / "0000000000000000.png"
    stale.write_bytes(drawn)
    blocked = ("import sys, json, pathlib; sys.modules['matplotlib'] = None; "
               "from frog_gym.bench.harness import EpisodeResult; from frog_gym.leaderboard.render import render; "
               "rs = [EpisodeResult.from_dict(json.loads(x)) for x in sys.argv[2:]]; render(rs, pathlib.Path(sys.argv[1]))")
    proc = subprocess.run([sys.executable, "-c", blocked, str(tmp_path), *(json.dumps(r.to_dict()) for r in rs)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes() == drawn and stale.exists()  # nothing drawn is deleted by a renderer that can't redraw
    assert f"](plots/{table_.fingerprint}.png)" in (tmp_path / "README.md").read_text()
    render(rs, tmp_path)  # one that can draw drops only the plots of harnesses no longer shown
    assert png.exists() and not stale.exists()


def test_froglive_results_get_their_own_tables_after_the_others(tmp_path):
    live = [dataclasses.replace(ep(f"l{i}", fp="live1", repo="semver", resolved=i == 0),
                                harness={"suite": "live", "suite_version": "1", "n_tasks": 3}) for i in range(3)]
    rs = live + [ep("t1", resolved=True), ep("t2")]
    tables = render(rs, tmp_path)
    assert [t.fingerprint for t in tables] == ["fp1", "live1"]  # live last although it has more episodes
    readme = (tmp_path / "README.md").read_text()
    assert readme.count("## FrogLive (real fixes from PyPI releases, held out): harness `live1`") == 1
    assert readme.count("## Harness `fp1`") == 1
    assert "<h2>FrogLive (real fixes from PyPI releases, held out): harness <code>live1</code></h2>" in (
        tmp_path / "index.html").read_text()
