"""SWE-bench instances in their own Docker images, graded by SWE-bench's own grading code.

An instance is a SWE-bench record (``instance_id``, ``repo``, ``problem_statement``, ``patch``,
``test_patch``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``, ``version``, and the harness fields ``image``,
``eval_script``, ``log_parser``, ``eval_type``) from a JSONL file or a ``datasets`` dataset. Its image
(pulled by the user, or built by SWE-bench's image builder where a registry is reachable) holds the
repository at ``/testbed`` and the environment to test it.

:class:`SWEBenchEnv` copies the image's ``/testbed`` out once into a host template, and runs each episode
in a :class:`~frog_gym.sandbox.docker.DockerSandbox` of that image over a fresh host copy (so the file
tools and diffs work as in :class:`~frog_gym.env.FrogSWEEnv`). At submit, :func:`evaluate` writes the
agent's changes into a fresh copy, runs the instance's ``eval_script`` in a new container with its log
going to a file the agent never sees, and judges that log with ``swebench.harness.grading.get_eval_report``
(the ``swebench`` extra: ``pip install 'frog-gym[swebench]'``).

Example:
    >>> inst = load_instances("instances.jsonl")[0]  # doctest: +SKIP
    >>> env = SWEBenchEnv(inst)  # doctest: +SKIP
    >>> obs, info = env.reset()  # doctest: +SKIP
    >>> env.step({"tool": "submit"})[1]  # doctest: +SKIP
    0.0
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import gymnasium as gym

from frog_gym import paths
from frog_gym.errors import FrogGymError, SandboxError
from frog_gym.env.prompt import tool_help
from frog_gym.sandbox.base import Limits
from frog_gym.sandbox.docker import DockerSandbox
from frog_gym.sandbox.images import docker_client
from frog_gym.env.spaces import UnicodeText
from frog_gym.env.tools import ActionError, FileTools, parse_action
from frog_gym.sandbox.workspace import Template, Workspace, _manifest, diff_text, write_changes

CONDA_PATH = "/opt/miniconda3/envs/testbed/bin:/opt/miniconda3/bin"
"""Put first on the agent's PATH: where SWE-bench's images keep the instance's environment."""

_REQUIRED = ("instance_id", "problem_statement", "FAIL_TO_PASS", "PASS_TO_PASS", "eval_script", "log_parser")


def load_instances(source: str | Path, split: str = "test") -> list[dict[str, Any]]:
    """SWE-bench instances from a ``.jsonl``/``.json`` file, or else a ``datasets`` name or folder."""
    p = Path(source)
    if p.is_file():
        text = p.read_text()
        rows = json.loads(text) if p.suffix == ".json" else [json.loads(x) for x in text.splitlines() if x.strip()]
    else:
        try:
            import datasets
        except ImportError as e:
            raise FrogGymError(f"{source!r} is not a file; loading a dataset needs the `datasets` package: "
                               "pip install 'frog-gym[hf]'") from e
        rows = [dict(r) for r in datasets.load_dataset(str(source), split=split)]
    for r in rows:
        missing = [k for k in _REQUIRED if k not in r]
        if missing:
            raise FrogGymError(f"SWE-bench instance {r.get('instance_id', '?')!r} from {source} lacks {missing}; "
                               "use a dataset with the harness fields (image, eval_script, log_parser, eval_type).")
    return rows


def _testbed_template(image: str, client: Any) -> Template:
    """The image's ``/testbed``, copied out once per image id into the cache (read-only by convention)."""
    image_id = client.images.get(image).id
    root = paths.home() / "swebench" / image_id.split(":")[-1][:24]
    tree = root / "testbed"
    if not (root / "manifest.json").exists():
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            ctr = client.containers.create(image, ["true"], network_mode="none", labels={"frog-gym": "1"})
            try:
                stream, _ = ctr.get_archive("/testbed")
                buf = io.BytesIO(b"".join(stream))
            finally:
                ctr.remove(force=True)
            with tarfile.open(fileobj=buf) as t:
                t.extractall(tmp, filter="tar")
            shutil.rmtree(tree, ignore_errors=True)
            (Path(tmp) / "testbed").replace(tree)
        (root / "manifest.json").write_text(json.dumps(_manifest(tree)))
    return Template(tree, json.loads((root / "manifest.json").read_text()))


def agent_path(image: str, client: Any) -> str:
    """The PATH of commands in ``image``: SWE-bench's conda environment first, then the image's own PATH."""
    env = client.images.get(image).attrs.get("Config", {}).get("Env") or []
    default = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    own = next((e[5:] for e in env if e.startswith("PATH=")), default)
    return f"{CONDA_PATH}:{own}"


def _test_spec(instance: dict[str, Any], image: str) -> Any:
    try:
        from swebench.harness.utils import make_test_spec
    except ImportError as e:
        raise FrogGymError("Grading SWE-bench instances needs the swebench package: "
                           "pip install 'frog-gym[swebench]'") from e
    return make_test_spec({"repo": "", "version": "", "eval_type": "pass_and_fail", **instance, "image": image})


def evaluate(instance: dict[str, Any], image: str, template: Template, changes: list, scratch: Workspace,
             timeout: float = 1800.0, client: Any | None = None) -> dict[str, Any]:
    """Grade ``changes`` to ``instance`` the SWE-bench way; returns ``get_eval_report``'s entry plus
    ``model_patch``, ``exit_code``, ``seconds`` and ``infra_failure`` (None, or why the run broke)."""
    from swebench.harness.grading import get_eval_report

    spec = _test_spec(instance, image)
    sb_client = client or docker_client()
    start = time.monotonic()
    scratch.sync(template)
    write_changes(scratch.path, changes)
    patch = diff_text(changes)
    with tempfile.TemporaryDirectory(dir=paths.home()) as io_dir:
        io_path = Path(io_dir)
        (io_path / "in").mkdir()
        (io_path / "out").mkdir()
        (io_path / "in" / "eval.sh").write_text(spec.eval_script)
        sb = DockerSandbox(scratch.path, limits=Limits(command_timeout=timeout, output_cap=8192), image=image,
                           env={"PATH": agent_path(image, sb_client)},
                           binds=((io_path / "in", "/frog/in", False), (io_path / "out", "/frog/out", True)),
                           read_only=False, client=sb_client)
        try:
            result = sb.exec(["bash", "-c", "bash /frog/in/eval.sh > /frog/out/eval.log 2>&1"], timeout)
        except SandboxError as e:
            return {"resolved": False, "infra_failure": str(e), "model_patch": patch, "exit_code": None,
                    "seconds": time.monotonic() - start}
        finally:
            sb.close()
        log = io_path / "out" / "eval.log"
        infra = f"the eval script timed out after {timeout:.0f} s" if result.timed_out else None
        if not log.exists():
            infra = infra or f"the eval script wrote no log: {result.output[-500:]}"
            log.write_text("")
        report = get_eval_report(spec, {"instance_id": spec.instance_id, "model_name_or_path": "frog-gym",
                                        "model_patch": patch}, str(log), include_tests_status=True)
        entry = report[spec.instance_id]
        entry.update(model_patch=patch, exit_code=result.exit_code, seconds=time.monotonic() - start,
                     infra_failure=infra, log_tail=log.read_text(errors="replace")[-4000:])
        return entry


class SWEBenchEnv(gym.Env[str, Any]):
    """One SWE-bench instance as a Gymnasium env (the tools and action format of :class:`FrogSWEEnv`).

    Args:
        instance: the SWE-bench record (see the module docstring).
        image: the instance's image (default: ``instance["image"]``).
        max_steps: step budget; at the end the state is graded.
        limits: the agent's sandbox limits.
        grade_timeout_s: wall limit of the eval script.
        client: a docker SDK client (default: from ``DOCKER_HOST``).
    """

    metadata = {"render_modes": []}

    def __init__(self, instance: dict[str, Any], image: str | None = None, *, max_steps: int = 100,
                 limits: Limits | None = None, grade_timeout_s: float = 1800.0, client: Any | None = None):
        self.instance = instance
        self.image = image or instance.get("image") or ""
        if not self.image:
            raise FrogGymError(f"No image for SWE-bench instance {instance.get('instance_id')!r}: pass image=... "
                               "(pull it, or build it with SWE-bench's image builder).")
        self.max_steps = max_steps
        self.limits = limits or Limits()
        self.grade_timeout_s = grade_timeout_s
        self.client = client or docker_client()
        self.action_space = UnicodeText(4096)
        self.observation_space = UnicodeText(1_000_000)
        self._dir = paths.home() / "work" / f"swe-{uuid.uuid4().hex[:12]}"
        self._ws = Workspace(self._dir / "ws")
        self._scratch = Workspace(self._dir / "grade")
        self._tools = FileTools(self._ws.path)
        self._template: Template | None = None
        self._sandbox: DockerSandbox | None = None
        self._steps = 0
        self._done = True
        self.last_report: dict[str, Any] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if self._template is None:
            self._template = _testbed_template(self.image, self.client)
        self._ws.sync(self._template)
        self._tools.reset()
        if self._sandbox is None:
            self._sandbox = DockerSandbox(self._ws.path, limits=self.limits, image=self.image, client=self.client,
                                          env={"PATH": agent_path(self.image, self.client)})
        self._sandbox.restart()
        self._steps, self._done, self.last_report = 0, False, None
        return self._prompt(), self._info()

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._done:
            return "The episode is over; call reset() to start a new one.", 0.0, True, False, self._info()
        self._steps += 1
        call = parse_action(action)
        terminated = False
        if isinstance(call, ActionError):
            obs = f"Error: {call.message}"
        elif call.tool == "submit":
            obs, terminated = "Submitted. Grading with the instance's eval script.", True
        elif call.tool == "bash":
            assert self._sandbox is not None
            r = self._sandbox.run(call.args["command"])
            obs = r.output + ("\n[timed out: the command and every process it started were killed]" if r.timed_out
                              else f"\n[exit code {r.exit_code}]")
        else:
            obs, _ = self._tools.run(call)
        truncated = not terminated and self._steps >= self.max_steps
        reward, info = 0.0, self._info()
        if terminated or truncated:
            self._done = True
            assert self._template is not None
            self.last_report = evaluate(self.instance, self.image, self._template, self._ws.changes(),
                                        self._scratch, self.grade_timeout_s, self.client)
            reward = 1.0 if self.last_report["resolved"] else 0.0
            info.update(report=self.last_report, resolved=bool(self.last_report["resolved"]),
                        infra_failure=self.last_report.get("infra_failure"))
            obs += f"\n[graded: {'resolved' if reward else 'not resolved'}]"
        return obs, reward, terminated, truncated, info

    def diff(self) -> str:
        """The agent's changes so far, as a unified diff (the instance's ``model_patch``)."""
        return diff_text(self._ws.changes()) if self._ws.template else ""

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        shutil.rmtree(self._dir, ignore_errors=True)
        self._done = True

    def _prompt(self) -> str:
        return (f"You are working in the repository at /testbed ({self.instance.get('repo', '')}).\n"
                f"A user reported this problem:\n\n<issue>\n{self.instance['problem_statement'].strip()}\n</issue>\n\n"
                "Change the source code (not the tests) so that the problem is fixed, then call `submit`. "
                f"There is no network access.\n\nTools:\n{tool_help()}\n")

    def _info(self) -> dict[str, Any]:
        return {"instance_id": self.instance["instance_id"], "image": self.image, "steps": self._steps,
                "infra_failure": None}
