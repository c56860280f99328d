"""NoopAgent, ReplayAgent and CallableAgent."""

from __future__ import annotations

import json

import pytest

from frog_gym.agents.base import Agent
from frog_gym.agents.simple import CallableAgent, NoopAgent, ReplayAgent

PROMPT = "Fix the failing test."
LS = {"tool": "bash", "command": "ls"}
SUBMIT = {"tool": "submit"}


def test_noop_agent_submits_at_once():
    agent = NoopAgent()
    assert isinstance(agent, Agent)
    agent.reset(PROMPT, {})
    assert agent.act(PROMPT) == SUBMIT
    agent.act(PROMPT)["tool"] = "bash"
    assert agent.act(PROMPT) == SUBMIT


def test_replay_agent_replays_a_list_then_submits_and_rewinds_on_reset():
    text = "```bash\npytest -q\n```"
    agent = ReplayAgent([LS, text])
    assert isinstance(agent, Agent)

    agent.reset(PROMPT, {})
    assert [agent.act(o) for o in (PROMPT, "README.md", "1 passed", "")] == [LS, text, SUBMIT, SUBMIT]
    agent.reset(PROMPT, {})
    assert agent.act(PROMPT) == LS


def test_replay_agent_hands_out_copies():
    agent = ReplayAgent([{"tool": "view", "path": "src", "view_range": [1, 5]}])
    agent.reset(PROMPT, {})
    agent.act(PROMPT)["view_range"].append(9)
    agent.reset(PROMPT, {})
    assert agent.act(PROMPT) == {"tool": "view", "path": "src", "view_range": [1, 5]}


@pytest.mark.parametrize("as_str", [True, False])
def test_replay_agent_reads_the_actions_of_a_jsonl_trajectory(tmp_path, as_str):
    records = [
        {"task": "flask-0001", "seed": 3},
        {"step": 0, "observation": PROMPT, "action": LS},
        {"step": 1, "observation": "README.md", "action": "```bash\npytest -q\n```"},
        {"result": "resolved"},
    ]
    path = tmp_path / "trajectory.jsonl"
    path.write_text(
        "\n".join(json.dumps(r) for r in records[:2]) + "\n\n" + "\n".join(map(json.dumps, records[2:]))
    )

    agent = ReplayAgent(str(path) if as_str else path)
    assert agent.actions == [LS, "```bash\npytest -q\n```"]
    agent.reset(PROMPT, {})
    assert [agent.act("") for _ in range(3)] == [LS, "```bash\npytest -q\n```", SUBMIT]


def test_replay_agent_names_the_bad_line_of_a_trajectory(tmp_path):
    path = tmp_path / "trajectory.jsonl"
    path.write_text(json.dumps({"action": LS}) + "\n{not json\n")
    with pytest.raises(ValueError) as e:
        ReplayAgent(path)
    assert str(e.value).startswith(f"{path}:2 is not a JSON record (")
    assert str(e.value).endswith("); a trajectory file holds one JSON object per line.")


def test_callable_agent_passes_the_observation_and_a_copy_of_the_history():
    seen = []

    def step(observation, history):
        seen.append((observation, history))
        history.append("scribble")
        return SUBMIT if history[:-1] else LS

    agent = CallableAgent(step)
    assert isinstance(agent, Agent)
    agent.reset(PROMPT, {})
    assert agent.act(PROMPT) == LS
    assert agent.act("README.md") == SUBMIT

    assert agent.history == [
        {"observation": PROMPT, "action": LS},
        {"observation": "README.md", "action": SUBMIT},
    ]
    assert seen[1] == ("README.md", [{"observation": PROMPT, "action": LS}, "scribble"])
    agent.reset(PROMPT, {})
    assert agent.history == []
    assert agent.act(PROMPT) == LS


def test_callable_agent_refuses_what_it_cannot_call():
    with pytest.raises(
        TypeError, match=r"^CallableAgent needs a function f\(observation, history\) -> action, got str\.$"
    ):
        CallableAgent("my_agent.step")
