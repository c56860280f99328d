"""A stable-baselines3 view of FrogSWE: a per-task menu of candidate actions, a small feature vector.

SB3's algorithms take a ``gymnasium.Env`` with array spaces; FrogSWE's are text. :class:`MenuEnv` is a
``gymnasium.Wrapper`` (the extension point SB3 documents for custom envs) that turns a FrogSWE env into
one that ``stable_baselines3.common.env_checker.check_env`` accepts:

- the action is ``Discrete(2 + max_candidates)``: ``0`` submits, ``1`` runs the repository's tests,
  ``2 + i`` applies candidate edit ``i``. The candidates are, at each reset,
  :func:`~frog_gym.generators.operators.candidate_fixes` on the functions the problem statement names
  (in the source files it names, else the spec's mutable files), as ``str_replace`` calls; a slot
  without a candidate is a harmless no-op that costs a step;
- the observation is a ``Box`` in [0, 1]: the statement's words hashed into ``statement_bins`` bins
  (which is all that tells tasks apart), which slots were tried, whether the last edit applied, the pass
  fraction of the last test run (a feature only: the reward stays the graded one) and the step fraction.

Example:
    >>> import gymnasium as gym, frog_gym
    >>> env = MenuEnv(gym.make("FrogSWE-Toy-v0", max_steps=2))  # doctest: +SKIP
    >>> from stable_baselines3 import PPO  # doctest: +SKIP
    >>> PPO("MlpPolicy", env).learn(2_000)  # doctest: +SKIP
"""

from __future__ import annotations

import ast
import re
import zlib
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from frog_gym.generators.operators import candidate_fixes

from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.spec import load_repo
from frog_gym.catalog.task import load_task
from frog_gym.sandbox.workspace import template_for

SUBMIT, RUN_TESTS = 0, 1
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SUMMARY = re.compile(r"(\d+) (passed|failed|error)")


def statement_targets(statement: str, tree: Path, files: list[str]) -> dict[str, set[int]]:
    """Per source file, the lines of the functions whose names the statement mentions (every line of a
    file the statement names by path, when it names no function there)."""
    words = set(_WORD.findall(statement))
    named = [f for f in files if f in statement or Path(f).stem in words]
    out: dict[str, set[int]] = {}
    for rel in named or files:
        try:
            source = (tree / rel).read_text(encoding="utf-8")
            module = ast.parse(source)
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        lines: set[int] = set()
        for node in ast.walk(module):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in words:
                lines |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        if lines or rel in named:
            out[rel] = lines or set(range(1, source.count("\n") + 2))
    return out


def _line_edit(source: str, start: int, end: int, replacement: str) -> tuple[str, str]:
    """The whole lines around ``source[start:end]`` before and after the edit, widened until ``old`` occurs
    once in ``source`` (as ``str_replace`` requires)."""
    lines = source.split("\n")
    offsets = np.cumsum([0] + [len(line) + 1 for line in lines]).tolist()
    first = int(np.searchsorted(offsets, start, side="right")) - 1
    last = int(np.searchsorted(offsets, max(end - 1, start), side="right")) - 1
    while True:
        lo, hi = offsets[first], offsets[last] + len(lines[last])
        old = source[lo:hi]
        if source.count(old) == 1 or (first == 0 and last == len(lines) - 1):
            return old, old[: start - lo] + replacement + old[end - lo:]
        first, last = (first - 1, last) if first > 0 else (first, last + 1)


def candidate_menu(task_id: str, max_candidates: int) -> list[dict[str, Any]]:
    """``str_replace`` actions from :func:`candidate_fixes` on the lines the statement points at."""
    task = load_task(task_id)
    spec = load_repo(task.repo)
    repo = prepare(spec)
    tree = template_for(repo, task.bug_patch, task_id).root
    files = sorted({str(p.relative_to(tree)) for m in spec.mutable or (".",)
                    for p in ([tree / m] if (tree / m).is_file() else (tree / m).rglob("*.py"))
                    if not spec.tests.is_test_file(str(p.relative_to(tree)))})
    menu: list[dict[str, Any]] = []
    for rel, lines in sorted(statement_targets(task.problem_statement, tree, files).items()):
        source = (tree / rel).read_text(encoding="utf-8")
        for m in candidate_fixes(source, lines):
            old, new = _line_edit(source, m.start, m.end, m.replacement)
            action = {"tool": "str_replace", "path": rel, "old_str": old, "new_str": new}
            if action not in menu:
                menu.append(action)
    return menu[:max_candidates]


class MenuEnv(gym.Wrapper):
    """A FrogSWE env with a discrete menu of actions and a feature-vector observation (see the module doc).

    Args:
        env: a FrogSWE env (its task is chosen by its own reset, or by ``options["task_id"]``).
        max_candidates: menu slots for candidate edits.
        statement_bins: hashed bins of the statement's words in the observation.
    """

    def __init__(self, env: gym.Env, max_candidates: int = 8, statement_bins: int = 32):
        super().__init__(env)
        self.max_candidates, self.bins = max_candidates, statement_bins
        n = 2 + max_candidates
        self.action_space = gym.spaces.Discrete(n)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (statement_bins + n + 3,), np.float32)
        self.menu: list[dict[str, Any]] = []
        self._statement = np.zeros(statement_bins, np.float32)
        self._tried = np.zeros(n, np.float32)
        self._applied = self._passed = 0.0
        self._steps = 0

    def _obs(self) -> np.ndarray:
        limit = getattr(self.env.unwrapped, "max_steps", None) or 1
        extra = [self._applied, self._passed, min(self._steps / limit, 1.0)]
        return np.concatenate([self._statement, self._tried, np.array(extra, np.float32)]).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        _, info = self.env.reset(seed=seed, options=options)
        self.menu = candidate_menu(info["task_id"], self.max_candidates)
        statement = load_task(info["task_id"]).problem_statement
        self._statement = np.zeros(self.bins, np.float32)
        for w in set(_WORD.findall(statement.lower())):
            self._statement[zlib.crc32(w.encode()) % self.bins] = 1.0
        self._tried[:] = 0.0
        self._applied = self._passed = 0.0
        self._steps = 0
        return self._obs(), {**info, "menu": list(self.menu)}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = int(action)
        self._steps += 1
        self._tried[a] = 1.0
        if a == SUBMIT:
            call: dict[str, Any] = {"tool": "submit"}
        elif a == RUN_TESTS:
            spec = load_repo(self.env.unwrapped.task.repo)
            call = {"tool": "bash", "command": "python -m pytest -q -p no:cacheprovider "
                                               + " ".join(spec.tests.paths) + " 2>&1 | tail -n 1"}
        elif a - 2 < len(self.menu):
            call = self.menu[a - 2]
        else:  # an empty slot: a harmless step that looks at the repository root
            call = {"tool": "view", "path": "."}
        text, reward, terminated, truncated, info = self.env.step(call)
        if call["tool"] == "str_replace":
            self._applied = float(bool(info.get("action_ok")))
        if a == RUN_TESTS:
            counts = {k: int(n) for n, k in _SUMMARY.findall(text)}
            total = sum(counts.values())
            self._passed = counts.get("passed", 0) / total if total else 0.0
        return self._obs(), float(reward), terminated, truncated, {**info, "text": text}
