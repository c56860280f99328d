"""``frog-gym train``: the curriculum loop with the scripted learner on the toy family."""

from __future__ import annotations

import json

from frog_gym.learners import Learner, LearnerOptions, env_tasks
from frog_gym.learners.scripted import ScriptedLearner

from frog_gym.cli import main
from frog_gym.commands.train import _prior_line, learner_factory, run_loop
from frog_gym.curriculum import CurriculumConfig, CurriculumState


def test_loop_measures_trains_and_remeasures(tmp_path):
    pool = env_tasks("FrogSWE-Toy-v0")[:3]
    cur = CurriculumState(pool, CurriculumConfig(seed=0))
    learner = ScriptedLearner(LearnerOptions(env_id="FrogSWE-Toy-v0", group_size=2, groups_per_update=3), cur,
                              start=0.0, rate=0.75)
    assert isinstance(learner, Learner)
    try:
        history = run_loop(learner, iterations=2, tasks_per_iteration=3, groups_per_update=3, eval_episodes=1,
                           out_dir=tmp_path, log=lambda _: None)
    finally:
        learner.close()
    first, second = history
    assert first["pass_rate"] == 0.0 and first["trained_tasks"] == 3
    assert first["trained_pass_after"] > first["trained_pass_before"]
    assert second["pass_rate"] > first["pass_rate"]
    assert (tmp_path / "iteration-002" / "scripted.json").exists()
    assert [json.loads(line)["iteration"] for line in (tmp_path / "loop.jsonl").read_text().splitlines()] == [1, 2]


def test_cli_runs_the_scripted_learner(tmp_path, capsys):
    code = main(["train", "--learner", "scripted", "--env", "FrogSWE-Toy-v0", "--tasks",
                 "frogtoy__handwritten-0001,frogtoy__handwritten-0002", "--iterations", "1",
                 "--tasks-per-iteration", "2", "--group-size", "2", "--groups-per-update", "2",
                 "--eval-episodes", "1", "--set", "rate=1", "--out", str(tmp_path)])
    assert code == 0
    assert "iteration 1: pool 2" in capsys.readouterr().out


def test_learner_names():
    assert learner_factory("scripted").__module__ == "frog_gym.learners.scripted"
    assert learner_factory("python:frog_gym.learners.scripted:make_learner") is learner_factory("scripted")
    try:
        learner_factory("gpro")
    except ValueError as e:
        assert "Unknown learner 'gpro'" in str(e)
    else:  # pragma: no cover
        raise AssertionError("an unknown learner must be refused")


def test_cli_runs_grpo_on_the_tiny_model(tiny_model, tmp_path, capsys):
    code = main(["train", "--learner", "grpo", "--model", tiny_model, "--env", "FrogSWE-Toy-v0", "--tasks",
                 "frogtoy__handwritten-0001,frogtoy__handwritten-0002", "--iterations", "1",
                 "--tasks-per-iteration", "2", "--group-size", "2", "--groups-per-update", "2",
                 "--eval-episodes", "1", "--set", "max_turns=2", "--set", "max_new_tokens=12",
                 "--set", "torch_threads=1", "--set", "tensorboard=false", "--out", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "step 1:" in out and "iteration 1: pool 2" in out
    assert (tmp_path / "iteration-001" / "model" / "config.json").exists()


def test_synthesizer_option_builds_the_mutation_synthesizer_over_the_pools_repositories(tmp_path, monkeypatch):
    from frog_gym.commands.train import make_synthesizer
    from frog_gym.catalog.task import TASK_DIRS_ENV, refresh_tasks

    monkeypatch.delenv(TASK_DIRS_ENV, raising=False)
    try:
        synth = make_synthesizer("mutation", ["toolz__handwritten-0001", "inflection__handwritten-0002"],
                                 tmp_path, seed=4)
        assert sorted(synth.specs) == ["inflection", "toolz"]
        assert synth.out_dir == tmp_path / "synthesized" and synth.config.seed == 4
        synth.close()
    finally:
        monkeypatch.delenv(TASK_DIRS_ENV, raising=False)
        refresh_tasks()
    assert make_synthesizer("", ["toolz__handwritten-0001"], tmp_path, 0) is None
    try:
        make_synthesizer("mutations", ["toolz__handwritten-0001"], tmp_path, 0)
    except ValueError as e:
        assert "Unknown --synthesizer 'mutations'. Did you mean 'mutation'?" in str(e)
    else:  # pragma: no cover
        raise AssertionError("a malformed --synthesizer must be refused")


def test_cli_names_a_bad_learner_or_synthesizer_without_a_traceback(tmp_path, capsys):
    base = ["train", "--env", "FrogSWE-Toy-v0", "--tasks", "frogtoy__handwritten-0001", "--out", str(tmp_path)]
    assert main([*base, "--learner", "gpro"]) == 2
    assert "Unknown learner 'gpro'" in capsys.readouterr().err
    assert main([*base, "--learner", "scripted", "--synthesizer", "mutatoin"]) == 2
    assert "Did you mean 'mutation'?" in capsys.readouterr().err


def _prior_means(out_dir):
    """Prior means of the curriculum the CLI built, from the state the scripted learner saved."""
    state = json.loads((out_dir / "iteration-001" / "scripted.json").read_text())["curriculum"]
    return {t: a / (a + b) for t, (a, b) in zip(state["task_ids"], state["prior"])}


def test_cli_builds_the_curriculum_prior_from_measured_difficulty(tmp_path, monkeypatch, capsys):
    from frog_gym.curriculum import prior_beta, prior_mean
    from frog_gym.catalog.task import TASK_DIRS_ENV, add_task_dir, load_task, refresh_tasks

    monkeypatch.setenv(TASK_DIRS_ENV, "")
    base = json.loads(load_task("frogtoy__handwritten-0001").to_json())
    rows = {"frogtoy__prior-0001": (1, 1), "frogtoy__prior-0002": (0, 1), "frogtoy__prior-0003": None}
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "frogtoy.jsonl").write_text("".join(
        json.dumps(dict(base, instance_id=iid, solve_rates={} if r is None else {
            "apr": {"solved": r[0], "runs": r[1], "fingerprint": "f", "max_steps": 8}})) + "\n"
        for iid, r in rows.items()))
    add_task_dir(tmp_path / "tasks")
    feats = {k: base["features"][k] for k in ("n_sites", "statement_level")}
    try:
        for agent in ("apr", "none"):
            out = tmp_path / agent
            code = main(["train", "--learner", "scripted", "--env", "FrogSWE-Toy-v0", "--tasks", ",".join(rows),
                         "--iterations", "1", "--tasks-per-iteration", "1", "--group-size", "2",
                         "--groups-per-update", "1", "--eval-tasks", "1", "--eval-episodes", "1",
                         "--prior-agent", agent, "--out", str(out)])
            assert code == 0
            means = _prior_means(out)
            if agent == "apr":
                assert "apr solve rates of 2" in capsys.readouterr().out
                solved, failed, untried = (means[t] for t in rows)
                a, b = prior_beta(feats, (1, 1))
                assert solved == a / (a + b) and solved > untried > failed
                assert untried == prior_mean(feats)
            else:
                assert "--prior-agent none" in capsys.readouterr().out
                assert set(means.values()) == {prior_mean(feats)}
        assert "Did you mean 'apr'? Agents measured on this pool: apr" in _prior_line("arp", list(rows), 3, 0)
    finally:
        refresh_tasks()
