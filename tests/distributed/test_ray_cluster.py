"""A real two-node Ray cluster (``ray start --head`` plus ``ray start --address``) on this machine, in a
private network namespace; see ``cluster_scenario.py``. The second node dies mid-run: its episodes are
rerun on the head and every one ends resolved, none scored as a failure; a wrong token is one line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from frog_gym.bench.runner import load_results

pytest.importorskip("ray", reason="the 'ray' extra is not installed: pip install 'frog-gym[ray]'")
HERE = Path(__file__).resolve().parent


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux) for a private network")
def test_a_node_killed_mid_run_has_its_episodes_rerun_elsewhere(tmp_path):
    p = subprocess.run(["unshare", "--net", sys.executable, str(HERE / "cluster_scenario.py"), str(tmp_path)],
                       capture_output=True, text=True, timeout=1200)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert p.returncode == 0, (p.stderr[-3000:], summary)

    wrong = summary["wrong_token"]
    assert wrong["rc"] == 2, wrong
    errors = [ln for ln in wrong["stderr"].splitlines() if ln.startswith("frog-gym bench: error:")]
    assert len(errors) == 1 and "refused this driver's authentication token" in errors[0], wrong["stderr"]
    assert "Traceback" not in wrong["stderr"]

    bench = summary["bench"]
    assert bench["rc"] == 0, bench["stderr"]
    assert summary["killed_at_sleeping"] >= 3
    lines = [json.loads(ln) for ln in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    results = load_results(tmp_path / "run")
    assert len(lines) == len(results) == 6
    assert all(r.resolved and r.reward == 1.0 and r.infra_failure is None for r in results), lines
    retried = [d for d in lines if d["ray_tries"] > 1]
    assert len(retried) == 2, [(d["task_id"], d["ray_tries"]) for d in lines]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux) for a private network")
def test_episodes_run_on_both_nodes_of_a_two_node_cluster(tmp_path):
    p = subprocess.run(["unshare", "--net", sys.executable, str(HERE / "two_nodes.py"), str(tmp_path)],
                       capture_output=True, text=True, timeout=1200)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert p.returncode == 0, (p.stderr[-3000:], summary)
    assert len(summary["nodes"]) == 2
    pool = summary["pool"]
    assert len(pool) == 4 and all(d["resolved"] and d["infra_failure"] is None for d in pool), pool
    assert {d["node_id"] for d in pool} == set(summary["nodes"])  # 4 actors of 0.5 CPU: 2 per 1-CPU node
    assert summary["bench"]["rc"] == 0, summary["bench"]["stderr"]
    results = load_results(tmp_path / "run")
    assert len(results) == 4 and all(r.resolved and r.infra_failure is None for r in results)
