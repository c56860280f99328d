"""The mini-swe-agent adapter: an agent that drives its own environment, run through real episodes."""

from __future__ import annotations

from typing import Any

from frog_gym.agents.miniswe import SUBMIT_MARKER, MiniSweAgentAdapter, parse_bash_observation
from frog_gym.harness import HarnessSpec, run_episode

TASK = "frogtoy__handwritten-0004"  # `return g > h` should be `return g < h`


class ScriptedMini:
    """A mini-swe-agent-style agent: it calls env.execute itself and reads output and returncode."""

    def __init__(self, env: Any):
        self.env = env
        self.seen: list[dict[str, Any]] = []

    def run(self, task: str) -> dict[str, Any]:
        assert "is_less" in task
        self.seen.append(self.env.execute("grep -c 'return g > h' frogtoy.py"))
        self.seen.append(self.env.execute("false"))
        self.seen.append(self.env.execute({"command": "sed -i 's/return g > h/return g < h/' frogtoy.py"}))
        self.seen.append(self.env.execute("pwd", cwd="/tmp"))
        self.env.execute(f"echo {SUBMIT_MARKER}")
        raise AssertionError("the submit marker ends the run")  # never reached


def test_a_mini_style_agent_solves_a_task_through_our_bash_tool():
    spec = HarnessSpec.for_suite(TASK)
    made: list[ScriptedMini] = []

    def factory(env: Any) -> ScriptedMini:
        made.append(ScriptedMini(env))
        return made[-1]

    adapter = MiniSweAgentAdapter(factory)
    result = run_episode(spec, adapter, "mini", TASK, 0)
    assert result.resolved and result.submitted
    assert result.steps == 6  # five commands, then submit
    grep, false, sed, pwd = made[0].seen
    assert grep == {"output": "1\n", "returncode": 0}
    assert false["returncode"] == 1 and sed["returncode"] == 0
    assert pwd["output"].strip() == "/tmp"


class Endless:
    def __init__(self, env: Any):
        self.env = env

    def run(self, task: str) -> None:
        while True:
            try:
                self.env.execute("true")
            except Exception:  # noqa: BLE001, S112  (an agent that swallows errors must still be stopped)
                continue


def test_the_agent_thread_stops_when_the_budget_ends_the_episode():
    spec = HarnessSpec.for_suite(TASK, max_steps=3)
    adapter = MiniSweAgentAdapter(Endless)
    result = run_episode(spec, adapter, "mini", TASK, 0)
    assert result.steps == 3 and not result.submitted and not result.resolved
    thread = adapter._thread
    adapter.reset("next", {})
    assert thread is not None and not thread.is_alive()


def test_observations_become_mini_results():
    assert parse_bash_observation("x\n[exit code 0]\n[step budget of 3 used up: the episode ends]") == {
        "output": "x\n[step budget of 3 used up: the episode ends]", "returncode": 0}
    assert parse_bash_observation("partial\n[timed out after 30 s: ...]")["returncode"] == -1
