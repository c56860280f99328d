"""Mirror tasks (training): a mined fix reversed onto the repository's pinned release, a real historical
bug brought back, validated like every generated task."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from frog_gym.generators.hunks import Hunk
from frog_gym.grading.runner import TestStatus
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.spec import load_repo
from frog_gym.catalog.task import Task
from frog_gym.sandbox.workspace import Change, diff_text


def reverse_onto(tree: Path, hunks: list[Hunk], old: dict[str, str]) -> list[Change]:
    """The changes that undo ``hunks`` (a fix of release N, ``old`` its files) in another release's ``tree``:
    each hunk's fixed lines, with a line of N's context on each side (or, failing that, alone), must occur
    exactly once in the file (wherever it moved to), and are replaced by the lines before the fix.

    Raises:
        ValueError: a file is missing, or a hunk's fixed text is not found exactly once.
    """
    out = []
    by_path: dict[str, list[Hunk]] = {}
    for h in hunks:
        by_path.setdefault(h.path, []).append(h)
    for path, hs in sorted(by_path.items()):
        if any(h.created or h.deleted for h in hs):
            raise ValueError(f"{path}: the fix creates or deletes the file")
        # the module may have moved since: pkg.py -> pkg/__init__.py, into or out of src/
        moved = [path, path.removesuffix(".py") + "/__init__.py", f"src/{path}", path.removeprefix("src/")]
        p = next((tree / m for m in moved if (tree / m).is_file()), tree / path)
        if not p.is_file():
            raise ValueError(f"{path} is not in the pinned release")
        text = p.read_text(encoding="utf-8")
        a = (old.get(path) or "").splitlines(keepends=True)
        for h in sorted(hs, key=lambda h: -h.start):
            before = a[h.start - 1] if h.start > 0 else ""
            after = a[h.end] if h.end < len(a) else ""
            fixed = before + "".join(h.new) + after
            bare = "".join(h.new)
            if fixed.strip() and text.count(fixed) == 1:
                text = text.replace(fixed, before + "".join(a[h.start:h.end]) + after)
            elif bare.strip() and text.count(bare) == 1:  # its context changed since; its own lines did not
                text = text.replace(bare, "".join(a[h.start:h.end]))
            else:
                raise ValueError(f"{path}: the fixed lines near line {h.start + 1} occur "
                                 f"{text.count(fixed) if fixed.strip() else 0} times in the pinned release")
        out.append(Change(p.relative_to(tree).as_posix(), p.read_bytes(), text.encode()))
    return [c for c in out if c.old != c.new]


def mirror_task(fix: Task, hunks: list[Hunk], old: dict[str, str], runs: int = 3) -> tuple[Task | None, str]:
    """The fix of a mined task reversed onto the repository's pinned release (a real bug brought back),
    validated like every generated task (:func:`frog_gym.generators.validate.validate`), or ``(None, why)``.

    Its tests are the pinned release's own: the mined task's FAIL_TO_PASS and PASS_TO_PASS that still exist
    and pass there are the candidates; its FAIL_TO_PASS are hidden until grading, as in every training task
    (:func:`frog_gym.generators.hidden.hidden_tests_patch`)."""
    from frog_gym.generators.hidden import hidden_tests_patch
    from frog_gym.generators.validate import Scratch as _Scratch
    from frog_gym.generators.validate import baseline, validate

    spec = load_repo(fix.repo)
    repo = prepare(spec)
    try:
        fixed = reverse_onto(repo.tree, hunks, old)
    except (ValueError, UnicodeDecodeError) as e:  # a fix that no longer applies is the common case
        return None, f"the fix does not reverse onto {spec.source.version}: {str(e)[:160]}"
    if not fixed:
        return None, "the fix reverses to no change"
    passing = {t for t, s in baseline(repo).items() if TestStatus(s).ok}
    cands = [t for t in (*fix.FAIL_TO_PASS, *fix.PASS_TO_PASS) if t in passing]
    if not any(t in passing for t in fix.FAIL_TO_PASS):
        return None, f"none of the fix's tests passes on {spec.source.version} under the same id"
    with _Scratch() as ws:
        v = validate(repo, fixed, candidates=cands, runs=runs, workspace=ws, details=True, max_fail_to_pass=40)
    if not v.ok:
        return None, f"validation: {v.reason}"
    bug = diff_text(fixed)
    gold = diff_text([Change(c.path, c.new, c.old) for c in fixed])
    prov = {k: fix.provenance[k] for k in ("from_version", "to_version", "to_sha256", "released", "statement",
                                           "changelog", "changelog_score")}
    return dataclasses.replace(
        fix, instance_id=fix.instance_id, version=spec.source.version, base_commit=spec.source.key, patch=gold,
        bug_patch=bug, test_patch=hidden_tests_patch(repo.tree, v.fail_to_pass, spec.tests.is_test_file),
        FAIL_TO_PASS=tuple(v.fail_to_pass), PASS_TO_PASS=tuple(v.pass_to_pass),
        provenance={"generator": "mirror", **prov},
        features={**fix.features, "f2p": len(v.fail_to_pass), "crash": v.crash},
        validation={"runs": v.runs, "seconds": round(v.seconds, 1), "flaky": v.flaky}), ""
