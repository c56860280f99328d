"""Hidden tests (SWE-bench's contract): the workspace holds the repository without the FAIL_TO_PASS tests.

Per task, the test functions of FAIL_TO_PASS are cut out of their test files by :mod:`ast` line spans
(decorators included; a class left without tests goes too; a file left without tests is removed). The
task's ``test_patch`` is the diff that adds them back (from the workspace's test files to the pristine
ones): the template of the task is built without them, and grading applies ``test_patch`` to the graded
tree after the agent's changes. Tests that are not functions of a test file (doctests in the source) stay
visible. The agent can still run every other test.

Example:
    >>> src = "import x\\n\\n\\ndef test_a():\\n    assert 1\\n\\n\\n@mark\\ndef test_b():\\n    assert x.f()\\n"
    >>> print(without_tests(src, {((), "test_b")}), end="")
    import x
    <BLANKLINE>
    <BLANKLINE>
    def test_a():
        assert 1
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from frog_gym.generators.testsource import split_test_id
from frog_gym.workspace import Change, diff_text


def _span(node: ast.stmt) -> tuple[int, int]:
    decos = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decos)])
    return start, node.end_lineno or node.lineno


def _has_tests(body: list[ast.stmt], gone: set[int]) -> bool:
    """Whether ``body`` keeps something pytest may collect: a ``test*`` function, or a class that has a
    ``test*`` method left, a base class (inherited tests) or ``Test`` in its name."""
    for n in body:
        if id(n) in gone:
            continue
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test"):
            return True
        if isinstance(n, ast.ClassDef) and (n.bases or "Test" in n.name or _has_tests(n.body, gone)):
            return True
    return False


def without_tests(src: str, targets: set[tuple[tuple[str, ...], str]]) -> str | None:
    """``src`` without the test functions ``targets`` (``(classes, name)``); None when no test is left.

    Returns ``src`` unchanged when none of the targets is found.
    """
    tree = ast.parse(src)
    spans: list[tuple[int, int]] = []
    gone: set[int] = set()

    def visit(body: list[ast.stmt], path: tuple[str, ...]) -> bool:
        """Cut targets out of ``body``; True when something was cut."""
        cut = False
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (path, node.name) in targets:
                spans.append(_span(node))
                gone.add(id(node))
                cut = True
            elif isinstance(node, ast.ClassDef) and any(t[0][: len(path) + 1] == (*path, node.name) for t in targets):
                if visit(node.body, (*path, node.name)) and not any(
                        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")
                        and id(n) not in gone for n in node.body):
                    spans[:] = [s for s in spans if not (node.lineno <= s[0] <= (node.end_lineno or 0))]
                    spans.append(_span(node))
                    gone.add(id(node))
                    cut = True
                elif any(id(n) in gone for n in node.body):
                    cut = True
        return cut

    if not visit(tree.body, ()):
        return src
    if not _has_tests(tree.body, gone):
        return None
    lines = src.splitlines(keepends=True)
    drop: set[int] = set()
    for a, b in spans:  # with the blank lines that separated it from what precedes
        a -= 1
        while a > 0 and not lines[a - 1].strip():
            a -= 1
        drop.update(range(a, b))
    return "".join(line for i, line in enumerate(lines) if i not in drop)


def hidden_test_changes(tree: Path, fail_to_pass: list[str] | tuple[str, ...],
                        is_test_file: Callable[[str], bool]) -> list[Change]:
    """Pristine -> hidden changes of the test files of ``fail_to_pass`` in the pristine ``tree``."""
    by_file: dict[str, set[tuple[tuple[str, ...], str]]] = {}
    for t in fail_to_pass:
        file, classes, func = split_test_id(t)
        if func and file.endswith(".py") and is_test_file(file):
            by_file.setdefault(file, set()).add((tuple(classes), func))
    out = []
    for file, targets in sorted(by_file.items()):
        p = tree / file
        try:
            old = p.read_text(encoding="utf-8")
            new = without_tests(old, targets)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError):
            continue
        if new != old:
            out.append(Change(file, old.encode("utf-8"), None if new is None else new.encode("utf-8")))
    return out


def hidden_tests_patch(tree: Path, fail_to_pass: list[str] | tuple[str, ...], is_test_file: Callable[[str], bool]) -> str:
    """The task's ``test_patch``: the diff from the hidden test files back to the pristine ones ('' when
    no FAIL_TO_PASS test can be hidden)."""
    changes = hidden_test_changes(tree, fail_to_pass, is_test_file)
    return diff_text([Change(c.path, c.new, c.old) for c in changes])


def hide_tests_file(path: Path) -> Counter:
    """Set ``test_patch`` of every task of one ``<repo>.jsonl`` (in place) from its pristine snapshot."""
    from frog_gym.generators.synthesis import read_existing, rewrite_task_file
    from frog_gym.snapshot import snapshot_tree
    from frog_gym.spec import load_repo

    records = read_existing(path)
    if not records:
        return Counter()
    spec = load_repo(records[0]["repo"])
    tree = snapshot_tree(spec)
    return rewrite_task_file(path, lambda d: dict(d, test_patch=hidden_tests_patch(
        tree, d["FAIL_TO_PASS"], spec.tests.is_test_file)))
