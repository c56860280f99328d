"""Share of tasks one ``candidate_fixes`` edit undoes, per operator family and for the whole training pool.

The pool is what ``FrogSWE-v0`` samples: every registered task file but the held-out FrogLive ones
(``*.live.jsonl``) and the toy family. Each task counts by its recorded mutation sites:

* **single-bug** (one site): undone when some candidate edit on its mutated lines of the buggy file
  gives back the pristine file (compared as ASTs; :mod:`frog_gym.generators.undo`);
* **combined** (two or more sites, in different functions): never undone by one edit. A candidate edit
  changes one site, and the bugs at the other sites stay, so the tree is not the pristine one and the
  task's FAIL_TO_PASS tests of those bugs still fail. They count as not undone in the all-tasks share
  and are left out of the single-bug share;
* **without recorded sites** (hand-written bugs, mirror tasks): not measurable here; counted and left
  out of both shares.

The **gold patch shape** of every measured task is printed too (medians of files / hunks / changed lines,
a changed line being one ``-`` or ``+`` line of the task's ``patch``), with the **token distance**: per hunk,
the token-level edit distance between its removed and its added lines (words, numbers, strings and
operators as tokens; a moved token counts twice), summed over hunks. The share within 2 tokens is the share
of tasks a model can fix by retyping one or two tokens.

Both suite figures are printed, always: the all-tasks share (single-bug and combined tasks) and the
single-bug-only share. The **sample** columns measure a seeded sample of each family's mutations of the
registered repositories' mutable code (``--per-family`` each), which also covers families without tasks.

No test runs here: it is source analysis. Verdicts are cached under ``$FROG_GYM_HOME/undo`` per digest of
the operator code (``--no-cache`` measures everything again; a cold run of the whole pool takes several
CPU minutes).

Run: ``python benchmarks/one_edit_undo.py [--per-family 0] [--tasks-dir DIR] [--json OUT]``
(``--tasks-dir`` reads task files from elsewhere, e.g. a worktree of an older commit's
``registry/tasks``, to measure the pool as it was).
"""

from __future__ import annotations

import argparse
import difflib
import io
import json
import re
import statistics
import time
import tokenize
from collections import Counter
from pathlib import Path

from frog_gym.generators.bugsize import MAX_UNDONE, MIN_MEDIAN_LINES
from frog_gym.generators.operators import FAMILIES
from frog_gym.generators.undo import UndoCache, sample_shares


def pool_files(tasks_dir: Path) -> list[Path]:
    """The task files of ``FrogSWE-v0``'s pool: no FrogLive file, no toy family."""
    from frog_gym import TOY_REPO

    return sorted(p for p in tasks_dir.glob("*.jsonl")
                  if not p.name.endswith(".live.jsonl") and p.name.split(".")[0] != TOY_REPO)


_TOKEN = re.compile(r"\w+|'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"|\S")


def _tokens(lines: list[str]) -> list[str]:
    """The tokens of some source lines (comments and layout left out); a regex split where they do not
    tokenize on their own (a hunk may cut a bracket or a string in two)."""
    text = "".join(line + "\n" for line in lines)
    try:
        return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline)
                if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                  tokenize.DEDENT, tokenize.ENDMARKER)]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return _TOKEN.findall("\n".join(line.split("#")[0] if "'" not in line and '"' not in line else line
                                         for line in lines))


def patch_shape(patch: str) -> tuple[int, int, int, int]:
    """``(files, hunks, changed lines, token distance)`` of a unified diff.

    The token distance compares each hunk's two sides in order, context lines included, so a line moved
    within a hunk counts its tokens twice (deleted and inserted) rather than cancelling out.

    Example:
        >>> patch_shape("--- a/m.py\\n+++ b/m.py\\n@@ -1,2 +1,2 @@\\n x = 1\\n-y = x < 2\\n+y = x <= 2\\n")
        (1, 1, 2, 1)
        >>> patch_shape("--- a/m.py\\n+++ b/m.py\\n@@ -1,2 +1,2 @@\\n-n += 1\\n return n\\n+n += 1\\n")
        (1, 1, 2, 4)
    """
    files = hunks = changed = distance = 0
    old: list[str] = []
    new: list[str] = []

    def flush() -> int:
        a, b = _tokens(old), _tokens(new)
        old.clear()
        new.clear()
        ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")

    for line in patch.splitlines():
        if line.startswith("+++ "):
            files += 1
        elif line.startswith("--- "):
            continue
        elif line.startswith("@@"):
            distance += flush()
            hunks += 1
        elif line.startswith("-"):
            old.append(line[1:])
            changed += 1
        elif line.startswith("+"):
            new.append(line[1:])
            changed += 1
        elif line.startswith(" "):
            old.append(line[1:])
            new.append(line[1:])
    return files, hunks, changed, distance + flush()


def shape_summary(shapes: list[tuple[int, int, int, int]]) -> str:
    """One line: how many patches, their median files / hunks / changed lines and the share within 2 tokens."""
    if not shapes:
        return "no tasks"
    med = [statistics.median(s[i] for s in shapes) for i in range(3)]
    near = sum(1 for s in shapes if s[3] <= 2)
    return (f"{len(shapes):>5} tasks, median files/hunks/changed lines {med[0]:g} / {med[1]:g} / {med[2]:g}, "
            f"within 2 tokens of the gold {near:>5} ({near / len(shapes):.1%}), "
            f"changed lines >= 4: {sum(1 for s in shapes if s[2] >= 4) / len(shapes):.1%}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per-family", type=int, default=150, help="sampled mutations per family (0: none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repos", help="comma-separated registry names (default: all with tasks)")
    p.add_argument("--tasks-dir", help="read task files here instead of the registry's task folder")
    p.add_argument("--no-cache", action="store_true", help="measure every task again")
    p.add_argument("--json", help="also write the figures here")
    p.add_argument("--max-file-lines", type=int, default=800,
                   help="sample only from source files up to this many lines (candidate search is per module)")
    args = p.parse_args()

    from frog_gym.generators.coverage_map import mutable_files
    from frog_gym.catalog.snapshot import PreparedRepo, snapshot_tree
    from frog_gym.catalog.spec import load_repo
    from frog_gym.catalog.task import _tasks_dir

    t0 = time.monotonic()
    tasks_dir = Path(args.tasks_dir) if args.tasks_dir else Path(str(_tasks_dir()))
    by_repo: dict[str, list[dict]] = {}
    for f in pool_files(tasks_dir):
        recs = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        by_repo.setdefault(f.name.split(".")[0], []).extend(recs)
    repos = sorted(by_repo)
    if args.repos:
        repos = [r for r in repos if r in args.repos.split(",")]
    cache = UndoCache(persist=not args.no_cache)
    by_family: dict[str, Counter] = {}
    kinds = Counter()
    per_repo: dict[str, Counter] = {}
    sources: list[str] = []
    shapes: dict[str, list[tuple[int, int, int, int]]] = {"single": [], "combined": [], "no sites": []}
    for repo in repos:
        spec = load_repo(repo)
        tree = snapshot_tree(spec)
        pr = per_repo.setdefault(repo, Counter())
        for d in by_repo[repo]:
            sites = d.get("provenance", {}).get("sites", [])
            shapes["single" if len(sites) == 1 else "combined" if sites else "no sites"].append(
                patch_shape(d.get("patch", "")))
            if not sites:
                kinds["no sites"] += 1
                pr["no sites"] += 1
            elif len(sites) > 1:
                kinds["combined"] += 1
                pr["combined"] += 1
            else:
                done = bool(cache.task_undone(tree, d))
                by_family.setdefault(sites[0]["family"], Counter())[done] += 1
                kinds["single undone" if done else "single kept"] += 1
                pr["single undone" if done else "single kept"] += 1
        cache.save()
        if args.per_family:
            for f in mutable_files(PreparedRepo(spec, tree, tree), tree):  # no venv needed to list files
                try:
                    text = (tree / f).read_text(encoding="utf-8")
                    if text.count("\n") <= args.max_file_lines:
                        sources.append(text)
                except (OSError, UnicodeDecodeError):
                    continue
    print(f"tasks measured in {time.monotonic() - t0:.0f} s", flush=True)
    sample = sample_shares(sources, args.per_family, args.seed) if args.per_family else {}
    print(f"{'family':24} {'tasks undone':>14} {'share':>6}   {'sample undone':>14} {'share':>6}")
    rows = {}
    for fam in FAMILIES:
        c = by_family.get(fam, Counter())
        n = c[True] + c[False]
        u, s = sample.get(fam, (0, 0))
        rows[fam] = {"tasks": [c[True], n], "sample": [u, s]}
        tshare = f"{c[True] / n:6.0%}" if n else "     -"
        sshare = f"{u / s:6.0%}" if s else "     -"
        print(f"{fam:24} {c[True]:>6} / {n:<5} {tshare}   {u:>6} / {s:<5} {sshare}")
    undone = kinds["single undone"]
    single = undone + kinds["single kept"]
    measured = single + kinds["combined"]
    print(f"\npool: {measured + kinds['no sites']} tasks on {len(repos)} repositories: {single} single-bug, "
          f"{kinds['combined']} combined (2-3 sites; one edit never undoes them), {kinds['no sites']} without "
          "recorded sites (hand-written, mirror: not measured)")
    print(f"{'suite, all measured tasks':32} {undone:>6} / {measured:<5} {undone / max(1, measured):6.1%}")
    print(f"{'suite, single-bug tasks only':32} {undone:>6} / {single:<5} {undone / max(1, single):6.1%}")
    print("\ngold patches (files / hunks / changed lines; token distance to the buggy code):")
    for kind, rows_ in shapes.items():
        print(f"  {kind:10} {shape_summary(rows_)}")
    single_median = statistics.median(s[2] for s in shapes["single"]) if shapes["single"] else 0
    share = undone / max(1, single)
    print(f"\nissue 22 targets (generators/bugsize.py): single-bug median changed lines {single_median:g} "
          f"(>= {MIN_MEDIAN_LINES}: {'met' if single_median >= MIN_MEDIAN_LINES else 'not met'}), undone by one "
          f"edit {share:.1%} (<= {MAX_UNDONE:.0%}: {'met' if share <= MAX_UNDONE else 'not met'})")
    print(f"({len(sources)} source files sampled, {time.monotonic() - t0:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"families": rows, "suite_all": [undone, measured], "suite_single": [undone, single],
                       "combined": kinds["combined"], "no_sites": kinds["no sites"],
                       "shapes": {k: [list(x) for x in v] for k, v in shapes.items()},
                       "repos": {r: dict(c) for r, c in per_repo.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
