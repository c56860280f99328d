"""A two-node Ray cluster on this machine, run by ``test_ray_cluster.py`` inside a private network namespace
(``unshare --net``: only loopback exists, so every node and every byte stays on 127.0.0.1).

1. ``ray start --head`` (1 CPU) and ``ray start --address`` (2 CPUs), with token authentication.
2. ``frog-gym bench --ray 127.0.0.1:PORT`` with a wrong token: one line, exit 2.
3. ``frog-gym bench --ray 127.0.0.1:PORT --workers 3`` of a slow oracle on 6 tasks: 2 of the 3 actors are
   on the second node, which is killed (SIGKILL to its process group) while their episodes sleep.

Writes ``summary.json`` into OUT and leaves the run directory at OUT/run. Usage: cluster_scenario.py OUT
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOY = [f"frogtoy__handwritten-000{i}" for i in range(1, 7)]
SLEEP = "7.25"  # the slow oracle's sleep: a value no other process on the machine uses, to find its episodes


def wait_for(check, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise SystemExit(f"{what} did not happen in {seconds} s")


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def alive_nodes(address: str, env: dict[str, str]) -> int:
    code = f"import ray; ray.init(address={address!r}); print(sum(n['Alive'] for n in ray.nodes()))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    return int(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 and p.stdout.strip() else 0


def sleeping_episodes() -> int:
    p = subprocess.run(["pgrep", "-f", f"^sleep {SLEEP}$"], capture_output=True, text=True)
    return len(p.stdout.split())


def main(out: Path) -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    out.mkdir(parents=True, exist_ok=True)
    temp = Path(f"/tmp/frc{os.getpid()}")  # Ray's socket paths must stay short
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"127.0.0.1:{port}"
    token = secrets.token_hex(16)
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token,
           "PYTHONPATH": os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)}
    ray = [sys.executable, "-m", "ray.scripts.scripts"]  # Ray's CLI, from this interpreter (a venv may lack the script)
    common = ["--object-store-memory", str(80 * 2**20), "--block", "--disable-usage-stats"]
    procs = []
    summary: dict = {"address": address}
    try:
        procs.append(subprocess.Popen([*ray, "start", "--head", "--port", str(port), "--num-cpus", "1",
                                       "--include-dashboard", "false", "--temp-dir", str(temp), *common],
                                      env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                                      stderr=open(out / "head.log", "w")))
        wait_for(lambda: listening(port), 90, "the head node listening")
        second = subprocess.Popen([*ray, "start", "--address", address, "--num-cpus", "2", *common], env=env,
                                  start_new_session=True, stdout=subprocess.DEVNULL,
                                  stderr=open(out / "second.log", "w"))
        procs.append(second)
        wait_for(lambda: alive_nodes(address, env) == 2, 120, "two nodes alive")

        cli = [sys.executable, "-m", "frog_gym.cli", "bench", "--no-progress", "--suite", ",".join(TOY)]
        wrong = subprocess.run([*cli, "--agent", "noop", "--ray", address, "--out", str(out / "wrong")],
                               env={**env, "RAY_AUTH_TOKEN": "0" * 32}, capture_output=True, text=True, timeout=120)
        summary["wrong_token"] = {"rc": wrong.returncode, "stderr": wrong.stderr}

        bench = subprocess.Popen([*cli, "--agent", "python:slow_agents:make", "--agent-opt", f"seconds={SLEEP}",
                                  "--workers", "3", "--spares", "0", "--cpus-per-env", "1", "--ray", address, "--out", str(out / "run")],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: sleeping_episodes() >= 3 or bench.poll() is not None, 180, "three episodes running")
        summary["killed_at_sleeping"] = sleeping_episodes()
        os.killpg(second.pid, signal.SIGKILL)
        stdout, stderr = bench.communicate(timeout=600)
        summary["bench"] = {"rc": bench.returncode, "stdout": stdout, "stderr": stderr[-4000:]}
    finally:
        tear_down(procs, out, summary, temp)


def tear_down(procs: list, out: Path, summary: dict, temp: Path) -> None:
    """Stop the Ray processes a scenario started (newest first, each session's whole group), write its summary
    and remove its temp folder."""
    for p in reversed(procs):
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    subprocess.run(["rm", "-rf", str(temp)])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
