"""Train/eval splits of the training pool that share no bug: by repository, and by function.

A split by task id leaks: most combined tasks hold a bug that is also a registered single-bug task, and two
single-bug tasks may break the same function in different ways. So a task's *bug keys* are the functions its
gold patch changes (``path::qualname`` in the repository's pinned snapshot, where the fixed code is;
``path::<module>`` for a change outside any function), and:

- **by repository**: whole repositories go to eval, chosen by a salted hash until about ``EVAL_SHARE`` of the
  pool's tasks are there;
- **by function**: tasks that share a function key are joined (a combined task joins the functions of all
  its bugs, and so goes with its single bugs), and each joined group goes to eval by a salted hash of its
  smallest key, until about ``EVAL_SHARE`` of the tasks are there. No function has tasks on both sides.

FrogLive (real fixes from later releases) is an eval set of its own and in neither split. The splits are
data (``registry/splits.json``, with every task's keys), rebuilt by ``python -m frog_gym.generators.splits
--write`` after the pool changes; a test checks the file against the registry and the invariants above.

Example (for a training run that is checked on functions it never saw)::

    from frog_gym.generators.splits import split_ids
    env = gym.make("FrogSWE-v0", task_ids=split_ids("function", "train"))
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Iterable

EVAL_SHARE = 0.2
"""The share of the pool's tasks each split puts on the eval side (about: groups are not cut)."""
SALT = "frog-gym-splits-v1"
KINDS = ("repository", "function")
SIDES = ("train", "eval")

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def changed_lines(patch: str) -> dict[str, list[int]]:
    """Per file, the line numbers on the patch's *new* side that it adds, or where it removes lines.

    >>> changed_lines("--- a/m.py\\n+++ b/m.py\\n@@ -1,3 +1,3 @@\\n x\\n-y\\n+z\\n w\\n@@ -9,2 +9,1 @@\\n a\\n-b\\n")
    {'m.py': [2, 10]}
    """
    out: dict[str, list[int]] = defaultdict(list)
    path, line = None, 0
    for text in patch.splitlines():
        if text.startswith("+++ "):
            target = text[4:].strip()
            path = target[2:] if target.startswith("b/") else None
            continue
        if text.startswith("--- ") or text.startswith("diff "):
            continue
        m = _HUNK.match(text)
        if m:
            line = int(m.group(1))
            continue
        if path is None or not text or text[0] not in " +-":
            continue
        if text[0] == "+":
            out[path].append(line)
            line += 1
        elif text[0] == "-":
            out[path].append(line)
        else:
            line += 1
    return {p: sorted(set(ls)) for p, ls in out.items()}


def enclosing(source: str, line: int) -> str:
    """The qualified name of the innermost function (or class body) around ``line``, else ``<module>``.

    >>> enclosing("class A:\\n    def f(self):\\n        return 1\\n", 3)
    'A.f'
    >>> enclosing("x = 1\\n", 1)
    '<module>'
    """
    best: tuple[int, str] = (-1, "<module>")

    def walk(node: ast.AST, prefix: str, depth: int) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                if start <= line <= (child.end_lineno or child.lineno) and depth > best[0]:
                    best = (depth, name)
                walk(child, name + ".", depth + 1)
            else:
                walk(child, prefix, depth)

    walk(ast.parse(source), "", 0)
    return best[1]


def bug_keys(task, tree: Path) -> list[str]:
    """The functions ``task``'s gold patch changes, as ``path::qualname`` in ``tree`` (the fixed code)."""
    keys = set()
    for path, lines in changed_lines(task.patch).items():
        f = tree / path
        if not path.endswith(".py") or not f.is_file():
            keys.add(f"{path}::<file>")
            continue
        source = f.read_text(encoding="utf-8", errors="replace")
        try:
            keys.update(f"{path}::{enclosing(source, n)}" for n in lines)
        except SyntaxError:
            keys.add(f"{path}::<file>")
    return sorted(keys)


def pool_keys(task_ids: Iterable[str]) -> dict[str, list[str]]:
    """Each pool task's bug keys (``repo/path::qualname``), read from its repository's snapshot."""
    from frog_gym.catalog.snapshot import snapshot_tree
    from frog_gym.catalog.spec import load_repo
    from frog_gym.catalog.task import load_task

    trees: dict[str, Path] = {}
    out = {}
    for i in task_ids:
        t = load_task(i)
        if t.repo not in trees:
            trees[t.repo] = snapshot_tree(load_repo(t.repo))
        out[i] = [f"{t.repo}/{k}" for k in bug_keys(t, trees[t.repo])]
    return out


def _score(text: str) -> float:
    return int(hashlib.sha256(f"{SALT}\0{text}".encode()).hexdigest()[:12], 16) / 16**12


def _fill(groups: dict[str, list[str]], total: int) -> set[str]:
    """The groups (by key) put on the eval side: in salted-hash order, each that keeps eval at or under
    ``EVAL_SHARE`` of ``total`` tasks."""
    chosen, size = set(), 0
    for key in sorted(groups, key=_score):
        if size + len(groups[key]) <= EVAL_SHARE * total:
            chosen.add(key)
            size += len(groups[key])
    return chosen


def build(keys: dict[str, list[str]]) -> dict:
    """Both splits of the pool tasks in ``keys`` (task id -> bug keys)."""
    ids = sorted(keys)
    by_repo: dict[str, list[str]] = defaultdict(list)
    for i in ids:
        by_repo[i.split("__", 1)[0]].append(i)
    eval_repos = _fill(by_repo, len(ids))
    parent = {i: i for i in ids}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    first: dict[str, str] = {}
    for i in ids:
        for k in keys[i]:
            if k in first:
                parent[find(i)] = find(first[k])
            else:
                first[k] = i
    members: dict[str, list[str]] = defaultdict(list)
    for i in ids:
        members[find(i)].append(i)
    groups = {min(k for m in ms for k in keys[m] or [m]): ms for ms in members.values()}
    eval_groups = _fill(groups, len(ids))
    fn_eval = sorted(i for g in eval_groups for i in groups[g])
    return {
        "about": "Train/eval splits of the FrogSWE-v0 pool that share no bug; see frog_gym/generators/splits.py.",
        "eval_share": EVAL_SHARE,
        "salt": SALT,
        "repository": {"eval": sorted(eval_repos), "train": sorted(set(by_repo) - eval_repos)},
        "function": {"eval": fn_eval, "train": sorted(set(ids) - set(fn_eval))},
        "keys": {i: keys[i] for i in ids},
    }


def pool_ids() -> list[str]:
    """The training pool: every registered task but FrogLive's."""
    from frog_gym.catalog.live import is_live
    from frog_gym.catalog.task import registered_task_ids

    return [i for i in registered_task_ids() if not is_live(i)]


def load() -> dict:
    """The committed splits (``registry/splits.json``)."""
    return json.loads(resources.files("frog_gym.registry").joinpath("splits.json").read_text(encoding="utf-8"))


def split_ids(kind: str, side: str) -> list[str]:
    """The task ids on ``side`` (``train`` or ``eval``) of the split by ``kind`` (``repository`` or ``function``).

    Raises:
        UsageError: an unknown kind or side, with the valid ones.
    """
    from frog_gym.errors import UsageError

    if kind not in KINDS or side not in SIDES:
        raise UsageError(f"No split {kind!r}/{side!r}: kind is one of {', '.join(KINDS)}, side one of "
                         f"{', '.join(SIDES)}.")
    data = load()
    if kind == "function":
        return list(data["function"][side])
    repos = set(data["repository"][side])
    return [i for i in sorted(data["keys"]) if i.split("__", 1)[0] in repos]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Compute the pool's train/eval splits (registry/splits.json).")
    p.add_argument("--write", action="store_true", help="write registry/splits.json (else print the figures)")
    args = p.parse_args(argv)
    data = build(pool_keys(pool_ids()))
    n = len(data["keys"])
    fn_eval = len(data["function"]["eval"])
    repo_eval = sum(1 for i in data["keys"] if i.split("__", 1)[0] in set(data["repository"]["eval"]))
    print(f"pool: {n} tasks; by repository: eval {repo_eval} tasks in {len(data['repository']['eval'])} "
          f"repositories ({', '.join(data['repository']['eval'])}); by function: eval {fn_eval} tasks "
          f"({fn_eval / n:.1%})")
    if args.write:
        out = Path(str(resources.files("frog_gym.registry").joinpath("splits.json")))
        out.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
