"""``frog-gym demo``: a scripted episode on a real task, printed as a readable transcript."""

from __future__ import annotations

import argparse
import textwrap

HELP = "Run a scripted episode on a real task and print the transcript (the README's first command)."


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", default="inflection__handwritten-0002", help="task id (see `frog-gym tasks`)")


def _show(title: str, text: str, limit: int = 1800) -> None:
    text = text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters]"
    print(f"\n\033[1m{title}\033[0m\n{textwrap.indent(text.rstrip(), '  ')}")


def run(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import frog_gym  # noqa: F401  (registers the envs)
    from frog_gym.agents.oracle import hunks
    from frog_gym.catalog.task import load_task

    task = load_task(args.task)
    print(f"frog-gym demo: task {task.instance_id} in {task.repo} {task.version} "
          "(first run builds the repository's venv; later runs reuse it)")
    env = gym.make(f"FrogSWE/{task.instance_id}-v0")
    obs, info = env.reset(seed=0)
    _show("prompt", obs)
    path, old, new = hunks(task.patch)[0]
    check = _check_command(task)
    script = [
        {"tool": "bash", "command": check},
        {"tool": "view", "path": path},
        {"tool": "str_replace", "path": path, "old_str": old, "new_str": new},
        {"tool": "bash", "command": check},
        {"tool": "submit"},
    ]
    reward = 0.0
    for n, action in enumerate(script, 1):
        obs, reward, terminated, truncated, info = env.step(action)
        shown = {k: (v if len(str(v)) < 120 else str(v)[:117] + "...") for k, v in action.items()}
        _show(f"step {n}: {shown}", obs, limit=1200 if action["tool"] == "view" else 1800)
        if terminated or truncated:
            break
    report = info.get("report", {})
    f2p, p2p = report.get("fail_to_pass", {}), report.get("pass_to_pass", {})
    print(f"\n\033[1mresult\033[0m: {report.get('resolved')}  reward={reward}  "
          f"FAIL_TO_PASS {len(f2p.get('success', []))}/{len(task.FAIL_TO_PASS)}  "
          f"PASS_TO_PASS {len(p2p.get('success', []))}/{len(task.PASS_TO_PASS)}  "
          f"grading {report.get('seconds', 0):.1f} s")
    env.close()
    return 0 if reward == 1.0 else 1


def _check_command(task) -> str:
    """What an agent runs to see the bug, with the FAIL_TO_PASS tests hidden: the statement's reproduction
    (its first ``python`` block), else the visible tests of the file the hidden ones belong to."""
    import re
    import shlex

    block = re.search(r"```python\n(.*?)```", task.problem_statement, re.S)
    if block:
        return f"python - <<'EOF'\n{block.group(1).rstrip()}\nEOF"
    test_file = task.FAIL_TO_PASS[0].split("::")[0]
    return f"python -m pytest -q -p no:cacheprovider {shlex.quote(test_file)} 2>&1 | tail -n 5"
