"""The mini-swe-agent adapter: an agent that drives its own environment, run through real episodes."""

from __future__ import annotations

from typing import Any

import pytest

from frog_gym.agents.miniswe import SUBMIT_MARKER, MiniSweAgentAdapter, parse_bash_observation
from frog_gym.bench.harness import HarnessSpec, run_episode

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
    assert grep == {"output": "1\n", "returncode": 0, "exception_info": ""}
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
        "output": "x\n[step budget of 3 used up: the episode ends]", "returncode": 0, "exception_info": ""}
    assert parse_bash_observation("partial\n[timed out after 30 s: ...]")["returncode"] == -1


# --- the real mini-swe-agent package: its DefaultAgent, its shipped configs, its DeterministicModel ----------

REAL_TASK = "inflection__handwritten-0001"


def _deterministic(outputs: list[dict[str, Any]]):
    from minisweagent.models.test_models import DeterministicModel

    def factory(model_cfg: dict[str, Any]) -> Any:
        keep = {k: model_cfg[k] for k in ("observation_template", "multimodal_regex") if k in model_cfg}
        return DeterministicModel(outputs=outputs, **keep)

    return factory


@pytest.mark.parametrize("config", ["default", "mini", "mini_textbased"])
def test_real_default_agent_with_each_shipped_config_applies_the_gold_fix(config):
    pytest.importorskip("minisweagent", reason="the 'miniswe' extra: pip install 'frog-gym[miniswe]'")
    from minisweagent.models.test_models import make_output

    from frog_gym.agents.miniswe import load_config, mini_swe_agent
    from frog_gym.catalog.task import load_task

    cfg = load_config(config)
    assert "{{" in cfg["agent"]["system_template"] + cfg["agent"]["instance_template"]
    patch = load_task(REAL_TASK).patch
    outputs = [
        make_output("Apply the fix.", [{"command": f"cd /testbed && git apply <<'FROG_GOLD'\n{patch}FROG_GOLD"}]),
        make_output("Check it.", [{"command": "git diff --stat && python -c 'import inflection; "
                                              "print(inflection.ordinal(13))'"}]),
        make_output("Submit.", [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}]),
    ]
    agent = mini_swe_agent(_deterministic(outputs), config=config)
    result = run_episode(HarnessSpec.for_suite(REAL_TASK), agent, "mini", REAL_TASK, 0)
    assert result.error is None and result.infra_failure is None, result.error
    assert result.resolved and result.submitted and result.reward == 1.0
    assert result.steps == 4  # three commands, then submit
    assert agent.stats.extra["exit"].startswith("{'exit_status': 'Submitted'")
    assert "inflection/__init__.py" in result.model_patch


def test_a_crashing_real_agent_is_an_agent_error_with_its_message_not_a_silent_submit():
    pytest.importorskip("minisweagent", reason="the 'miniswe' extra: pip install 'frog-gym[miniswe]'")
    from minisweagent.models.test_models import make_output

    from frog_gym.agents.miniswe import mini_swe_agent

    outputs = [make_output("Look.", [{"command": "ls"}])]  # the model's second call fails: it has no more outputs
    result = run_episode(HarnessSpec.for_suite(REAL_TASK), mini_swe_agent(_deterministic(outputs)), "mini",
                         REAL_TASK, 0)
    assert result.error == "AgentCrashed: IndexError: list index out of range"
    assert not result.resolved and result.steps == 2
