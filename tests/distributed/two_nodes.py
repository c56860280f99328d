"""Two Ray nodes on this machine, run by ``test_ray_cluster.py`` in a private network namespace (``unshare
--net``: only loopback exists).

1. ``ray start --head --num-cpus 1`` and ``ray start --address HEAD --num-cpus 1``.
2. A :class:`~frog_gym.bench.distributed.RayEnvPool` of 4 actors at 0.5 CPU each (so the head alone cannot hold
   them) runs 4 oracle episodes; each result says the node it ran on.
3. ``frog-gym bench --ray HEAD --workers 4 --cpus-per-env 0.5 --spares 0``, as ``docs/training.md`` writes it.

Writes ``summary.json`` into OUT. Usage: two_nodes.py OUT
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

from cluster_scenario import alive_nodes, listening, tear_down, wait_for

TOY = [f"frogtoy__handwritten-000{i}" for i in range(1, 5)]


def main(out: Path) -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    out.mkdir(parents=True, exist_ok=True)
    temp = Path(f"/tmp/frt{os.getpid()}")  # Ray's socket paths must stay short
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"127.0.0.1:{port}"
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16))  # every node and the driver
    ray = [sys.executable, "-m", "ray.scripts.scripts"]  # Ray's CLI, from this interpreter (a venv may lack the script)
    common = ["--num-cpus", "1", "--object-store-memory", str(80 * 2**20), "--block", "--disable-usage-stats"]
    procs = []
    summary: dict = {"address": address}
    try:
        procs.append(subprocess.Popen([*ray, "start", "--head", "--port", str(port), "--include-dashboard", "false",
                                       "--temp-dir", str(temp), *common], start_new_session=True,
                                      stdout=subprocess.DEVNULL, stderr=open(out / "head.log", "w")))
        wait_for(lambda: listening(port), 90, "the head node listening")
        procs.append(subprocess.Popen([*ray, "start", "--address", address, *common], start_new_session=True,
                                      stdout=subprocess.DEVNULL, stderr=open(out / "second.log", "w")))
        wait_for(lambda: alive_nodes(address, dict(os.environ)) == 2, 120, "two nodes alive")

        from frog_gym.bench.distributed import PoolConfig, RayEnvPool, connect
        from frog_gym.bench.harness import HarnessSpec

        ray_mod = connect(address)
        summary["nodes"] = sorted(n["NodeID"] for n in ray_mod.nodes() if n["Alive"])
        pool = RayEnvPool(PoolConfig(workers=4, spares=0, cpus_per_env=0.5), repos=["frogtoy"])
        try:
            spec = HarnessSpec.for_suite(",".join(TOY))
            done = list(pool.run_episodes(spec, "oracle", {}, "oracle", spec.episodes()))
        finally:
            pool.close()
        summary["pool"] = [{"task_id": d["result"]["task_id"], "resolved": d["result"]["resolved"],
                            "infra_failure": d["result"]["infra_failure"], "node_id": d["node_id"]} for d in done]
        ray_mod.shutdown()

        bench = subprocess.run([sys.executable, "-m", "frog_gym.cli", "bench", "--agent", "oracle", "--suite",
                                ",".join(TOY), "--ray", address, "--workers", "4", "--cpus-per-env", "0.5",
                                "--spares", "0", "--no-progress", "--out", str(out / "run")],
                               capture_output=True, text=True, timeout=600)
        summary["bench"] = {"rc": bench.returncode, "stdout": bench.stdout, "stderr": bench.stderr[-4000:]}
    finally:
        tear_down(procs, out, summary, temp)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
