#!/usr/bin/env python
"""False positives of the static allowlist check (:func:`frog_gym.grading.integrity.tampering`) on honest fixes.

Usage: python .ci/allowlist_false_positives.py [--markdown FILE]

Every registered gold patch (the pool's and FrogLive's real fixes) and every fix the ``apr`` agent found in
``docs/difficulty/*.results.jsonl`` (its ``model_patch``, for a resolved task) is checked file by file, as the
agent would have written it: the starting (buggy) version of each Python file is the task's snapshot with its
bug patch applied, the fixed version is that plus the fix. Two figures per set:

- **raw**: what the fix adds to the file as the agent found it (``pristine=None``). This is the strict figure,
  the one the target (at most 1% of fixes) is about: for a gold patch, grading's own allowance (vocabulary the
  repository's own version of the file uses) is the fixed file itself, so as graded no gold patch can be flagged.
- **as graded**: with that allowance (``pristine`` = the file as the task's gold patch leaves it), as
  :func:`frog_gym.grading.grade.grade` calls the check.

A fix counts once however many of its files are flagged. It prints the counts, the rate and every flagged fix
with what was flagged; ``--markdown FILE`` also writes them as a table (``docs/allowlist-false-positives.md``
keeps the last run, with the reason each flag is allowed or not).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from frog_gym.grading.runner import patch_files
from frog_gym.grading.integrity import tampering
from frog_gym.catalog.live import task_spec
from frog_gym.catalog.snapshot import snapshot_tree
from frog_gym.catalog.task import load_task, registered_task_ids
from frog_gym.sandbox.workspace import apply_patch

ROOT = Path(__file__).resolve().parents[1]

_RESTORED = ("the bug took out (or changed) this construct of the repository's own code and the fix puts it "
             "back; allowed as graded, where the file's own version has it in that function")
REASONS = {
    **dict.fromkeys(("blinker__removed_statement-0d631d40", "boltons__combo2-1a21ec22",
                     "boltons__dict_key_or_attribute-560cc033", "pluggy__combo2-fa61425a", "pluggy__combo3-f0499753",
                     "pluggy__exception_handling-477889a9", "six__combo2-3c83df53", "six__combo2-5991f40b",
                     "six__combo2-aab52d56", "six__combo2-b3888268", "six__combo2-c6bd544a", "six__combo2-fb73b06b",
                     "six__removed_statement-22417924", "six__removed_statement-65a3f207",
                     "six__removed_statement-6b03902b", "six__removed_statement-7ef7bb1e", "toolz__combo2-bc33196b",
                     "toolz__missing_branch-4279f154", "toolz__missing_branch-7e089480", "wrapt__combo2-32a86189",
                     "wrapt__combo2-d4b9b1c0", "wrapt__missing_branch-c81a3518",
                     "wrapt__duplicated_branch_body-c034a768", "wrapt__duplicated_branch_body-f68fe3d6",
                     # the bigger bugs of session 14 (issue 22): their gold patches put back what the bug took out
                     "attrs__combo2-121e0e98", "attrs__combo2-7a044014", "attrs__duplicated_branch_body-fafeb17c",
                     "boltons__combo2-88af9eb1", "boltons__missing_state_update-453a5183", "wrapt__combo2-0a4f8aa9",
                     "wrapt__combo2-15154558", "wrapt__combo2-afd0395f", "wrapt__combo2-e2abaa5f",
                     "wrapt__duplicated_branch_body-dcea956c",
                     # session 15's bigger click bugs: a dropped branch body or state update held click's own
                     # translated templates formatted from data and its stdio swap in CliRunner; the fix puts them back
                     "click__duplicated_branch_body-16510759", "click__duplicated_branch_body-7684cc79",
                     "click__missing_state_update-0474a88d", "click__missing_state_update-7f8a8a6d"), _RESTORED),
    "boltons__live-26.0.0-2": "a real feature (partition by attribute name) reads an attribute named by the caller "
                              "in a new function; allowed as graded (the release's own code does it there); written "
                              "anywhere else it is refused: a computed attribute name is what forgeries use",
    "glom__live-23.4.0-2": "the fix checks each of a list of its own attributes by name (getattr with a computed name), "
                           "as the release does in that function; allowed as graded, refused anywhere else",
    "natsort__live-8.2.0-1": "the fix adds typing protocols (SupportsDunderLT, SupportsDunderGT) that declare __lt__ and "
                             "__gt__ for type checkers; allowed as graded (the release defines them there); a comparison "
                             "method defined anywhere else is refused",
    "natsort__live-8.3.0-5": "the fix asks globals() at module level whether a fallback (try_float, try_int) is "
                             "already defined, as the release's module does; allowed as graded, refused elsewhere",
    "markdown__live-3.9-1": "a real feature formats a template from the extension's configuration; allowed as graded "
                            "(the release does it in that function); elsewhere refused: str.format reaches attributes "
                            "by the names in a template the check can't read",
    "python-dotenv__live-1.0.1-1": "the library walks the caller's frames to find a .env file, and the fix extends "
                                   "that loop; allowed as graded (the same function walks frames in the release); a "
                                   "new frame walk is refused",
    **dict.fromkeys(("semver__live-3.1.1-1", "semver__live-3.1.1-2", "semver__live-3.1.1-4"),
                    "the fix turns the version regex template into an f-string, so its .format() no longer reads a "
                    "literal; allowed as graded (the release does it in those functions), refused elsewhere"),
    "tabulate__live-0.9.0-1": "a release's worth of features: an import of wcwidth at the top (a third-party module "
                              "the file imported only lazily), templates formatted from data, getattr by a column "
                              "name, sys.argv for a command line; allowed as graded, each refused where the release "
                              "does not do it",
}
"""Why each fix the check flags raw is allowed or not (the list in docs/allowlist-false-positives.md)."""


@dataclass(frozen=True)
class Fix:
    """One honest fix: where it comes from, and each Python file it touches as (path, buggy, fixed, gold)."""

    source: str  # "gold" or "apr"
    task_id: str
    files: tuple[tuple[str, bytes, bytes, bytes | None], ...]


def _versions(tree: Path, patches: list[str], files: list[str], label: str) -> dict[str, bytes | None]:
    """``files`` of ``tree`` as they read after applying ``patches`` in order (None: absent)."""
    with tempfile.TemporaryDirectory() as d:
        for f in files:
            if (tree / f).is_file():
                (Path(d) / f).parent.mkdir(parents=True, exist_ok=True)
                (Path(d) / f).write_bytes((tree / f).read_bytes())
        for p in patches:
            apply_patch(Path(d), p, label)
        return {f: (Path(d) / f).read_bytes() if (Path(d) / f).is_file() else None for f in files}


def fix_of(task_id: str, patch: str, source: str) -> Fix:
    """The Python files ``patch`` (a fix of ``task_id``'s bug) touches, before and after it, with the gold
    version grading allows vocabulary from."""
    task = load_task(task_id)
    tree = snapshot_tree(task_spec(task))  # a FrogLive task starts from its own (older) release
    files = sorted(f for f in patch_files(patch) | patch_files(task.patch) if f.endswith((".py", ".pyw", ".pyi")))
    buggy = _versions(tree, [task.bug_patch], files, f"{task_id}: bug")
    fixed = _versions(tree, [task.bug_patch, patch], files, f"{task_id}: {source} fix")
    gold = fixed if source == "gold" else _versions(tree, [task.bug_patch, task.patch], files, f"{task_id}: gold")
    out = tuple((f, buggy[f] or b"", fixed[f], gold[f]) for f in files
                if fixed[f] is not None and fixed[f] != buggy[f])
    return Fix(source, task_id, out)


def gold_fixes():
    """Every registered task's gold patch, as a :class:`Fix`."""
    for tid in registered_task_ids():
        yield fix_of(tid, load_task(tid).patch, "gold")


def apr_fixes():
    """Every fix ``apr`` found (a resolved row of ``docs/difficulty/*.results.jsonl``), once per task and patch."""
    from frog_gym.catalog.task import registered_task_ids

    seen, registered = set(), set(registered_task_ids())
    for results in sorted((ROOT / "docs" / "difficulty").glob("*.results.jsonl")):
        for line in results.read_text().splitlines():
            row = json.loads(line)
            # a task of a re-pinned repository (the time split) is gone with its snapshot: its fix is not checked
            if row["task_id"] not in registered:
                continue
            if row["agent"] == "apr" and row["resolved"] and (row["task_id"], row["model_patch"]) not in seen:
                seen.add((row["task_id"], row["model_patch"]))
                yield fix_of(row["task_id"], row["model_patch"], "apr")


def flags(fix: Fix, graded: bool) -> list[str]:
    """What the check flags in ``fix`` (``graded``: with grading's allowance for the gold file's vocabulary)."""
    out = []
    for path, buggy, fixed, gold in fix.files:
        out += tampering(path, buggy, fixed, gold if graded else None)
    return out


def measure(fixes) -> dict:
    """Counts and flagged fixes of each source, raw and as graded."""
    out: dict = {}
    for fix in fixes:
        s = out.setdefault(fix.source, {"fixes": 0, "files": 0, "raw": [], "graded": []})
        s["fixes"] += 1
        s["files"] += len(fix.files)
        for kind in ("raw", "graded"):
            if got := flags(fix, kind == "graded"):
                s[kind].append((fix.task_id, got))
    return out


def report(result: dict) -> str:
    """``measure``'s result as markdown: a summary table, then every flagged fix with its flags."""
    lines = [
        "# False positives of the static allowlist check", "",
        "Made by `python .ci/allowlist_false_positives.py --markdown docs/allowlist-false-positives.md` (slow test "
        "`test_the_static_check_passes_every_registered_gold_patch` checks it). Every registered gold patch (the "
        "pool's, and FrogLive's real fixes) and every fix the `apr` agent found (`docs/difficulty/*.results.jsonl`) "
        "is checked file by file as the agent would have written it, on the task's buggy tree.", "",
        "- **raw**: what the fix adds to the file as the agent found it, with no other allowance. The strict figure.",
        "- **as graded**: with grading's allowance for what the repository's own version of the file does (the same "
        "construct in the same function, a module it imports). For a gold patch that version *is* the fixed file, "
        "so this figure can only be 0 there; it is the figure that decides a reward, and the one that is "
        "informative for `apr`'s fixes, which differ from the gold.", "",
        "| fixes | count | Python files | flagged raw | rate raw | flagged as graded |", "|---|---|---|---|---|---|"]
    for source, s in sorted(result.items()):
        lines.append(f"| {source} | {s['fixes']} | {s['files']} | {len(s['raw'])} | "
                     f"{len(s['raw']) / max(s['fixes'], 1):.2%} | {len(s['graded'])} |")
    total = sum(s["fixes"] for s in result.values())
    raw = sum(len(s["raw"]) for s in result.values())
    graded = sum(len(s["graded"]) for s in result.values())
    lines += ["", f"All: {raw} of {total} fixes flagged raw ({raw / max(total, 1):.2%}), {graded} as graded "
                  f"({graded / max(total, 1):.2%}). Each fix flagged raw, with what was flagged and why it is "
                  f"allowed or not:", ""]
    for source, s in sorted(result.items()):
        for task_id, got in s["raw"]:
            constructs = "; ".join(f"`{g.split(': ', 2)[-1]}` ({g.split(': adds ')[-1].split(' (')[0].split(':')[0]})"
                                   for g in got)
            lines.append(f"- {source} `{task_id}`: {constructs}. **Why:** "
                         f"{REASONS.get(task_id, 'no reason recorded: decide, and add it to REASONS')}.")
    for source, s in sorted(result.items()):
        for task_id, got in s["graded"]:
            lines.append(f"- {source} `{task_id}` **flagged as graded**: " + "; ".join(f"`{g}`" for g in got))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", type=Path, help="also write the table and list to this file")
    args = ap.parse_args(argv)

    def every():
        yield from gold_fixes()
        yield from apr_fixes()

    text = report(measure(every()))
    print(text, end="")
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
