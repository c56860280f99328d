"""The time split between the training pool and FrogLive, kept as data, and the contamination figures.

FrogLive checks that what a policy learned on synthetic bugs carries to real fixes, so a live fix must
not be in the code the policy trained on. A live task is **held out** when its repository has no training
task at all, or when its fix release (N+1 of the pair N -> N+1) comes after the repository's training
snapshot both in version order and by upload date. Every other live task is *seen*: it stays loadable by
id, but is in no FrogLive suite (``FrogLive-v0``, the ``live`` and ``live@DATE`` suites).

``registry/timesplit.json`` records the verdict (built by ``python -m frog_gym.generators.timesplit
--write``, checked against the registry by ``tests/test_time_split.py``)::

    {"repos": {"semver": {"training_release": "3.0.2", "training_date": "2023-10-09", "training_tasks": 50}},
     "live": {"semver__live-3.1.0-1": {"released": "2023-...", "held_out": true, "why": "..."}}}

The contamination figures (``--figures``) read any registry folder (``--registry DIR``, e.g. a checkout of an
older commit), so that the split's effect is measured, not asserted:

- **verbatim**: the share of a live fix's *new* lines (added lines, whitespace-normalised, of at least
  :data:`MIN_TOKENS` tokens, that its base release N holds nowhere: :func:`fix_lines`) found verbatim in the
  repository's training snapshot (its ``.py`` files);
- **shared**: training tasks whose gold patch adds one of a live fix's new lines.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from packaging.version import InvalidVersion, Version

MIN_TOKENS = 4
"""A line counts when it has at least this many tokens (``else:``, ``return None``, ``)`` do not: such lines
are in every code base and say nothing about a fix)."""
MAX_VERBATIM = 0.05
"""At most this share of a held-out fix's new lines may appear verbatim in its training snapshot."""
LIVE_MARK, MIRROR_MARK = "__live-", "__mirror-"
_TOKEN = re.compile(r"\w+|[^\w\s]")


def registry_dir() -> Path:
    return Path(str(resources.files("frog_gym.registry")))


def normalised(line: str) -> str | None:
    """``line`` with its whitespace collapsed, or None when it is too small to mean anything (or a comment)."""
    text = " ".join(line.split())
    if not text or text.startswith("#") or len(_TOKEN.findall(text)) < MIN_TOKENS:
        return None
    return text


def new_lines(patch: str) -> set[str]:
    """The lines a patch adds that it does not also remove (moved lines are not new), normalised.

    >>> sorted(new_lines("--- a/m.py\\n+++ b/m.py\\n@@ -1,2 +1,3 @@\\n-x = f(a, b)\\n+y = g(a, b)\\n+x = f(a, b)\\n else:\\n"))
    ['y = g(a, b)']
    """
    added, removed = set(), set()
    for line in patch.splitlines():
        if line.startswith(("+++", "---")):
            continue
        if line.startswith("+") and (n := normalised(line[1:])):
            added.add(n)
        elif line.startswith("-") and (n := normalised(line[1:])):
            removed.add(n)
    return added - removed


def snapshot_lines(tree: Path) -> set[str]:
    """Every normalised line of the ``.py`` files under ``tree``."""
    out: set[str] = set()
    for f in tree.rglob("*.py"):
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        out.update(n for line in text.splitlines() if (n := normalised(line)))
    return out


def _version(v: str) -> Version:
    try:
        return Version(v)
    except InvalidVersion:
        return Version("0")


@dataclass
class Registry:
    """A registry folder read as plain files (specs and task records), independent of the installed one."""

    root: Path

    def spec(self, repo: str) -> dict[str, Any]:
        return tomllib.loads((self.root / "repos" / f"{repo}.toml").read_text(encoding="utf-8"))

    def records(self, kinds: Iterable[str] = ("pool", "mirror", "live")) -> Iterable[dict[str, Any]]:
        for f in sorted((self.root / "tasks").glob("*.jsonl")):
            parts = f.name.split(".")
            kind = parts[1] if len(parts) == 3 else "pool"
            if kind in kinds:
                for line in f.read_text(encoding="utf-8").splitlines():
                    if line.strip():
                        yield json.loads(line)

    def training_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for f in sorted((self.root / "tasks").glob("*.ids")):
            parts = f.name.split(".")
            if len(parts) == 3 and parts[1] == "live":
                continue
            repo = parts[0]
            counts[repo] = counts.get(repo, 0) + sum(1 for line in f.read_text().splitlines()
                                                     if line.strip() and not line.startswith("#"))
        return counts


def provenance(record: dict[str, Any]) -> dict[str, Any]:
    p = record.get("provenance") or {}
    return ast.literal_eval(p) if isinstance(p, str) else p


def split(reg: Registry, tree_of: Any = None) -> dict[str, Any]:
    """The time split of a registry folder: per repository its training snapshot, per live task its verdict.

    With ``tree_of`` (see :func:`figures`), a fix released after the snapshot is still *seen* when more than
    :data:`MAX_VERBATIM` of its new lines are verbatim in the training snapshot (a fix of a regression that
    came after the snapshot: the training code holds the fixed lines).
    """
    cache: dict[tuple[str, str], set[str]] = {}

    def lines(repo: str, source: dict[str, Any]) -> set[str]:
        if (repo, source["sha256"]) not in cache:
            cache[repo, source["sha256"]] = snapshot_lines(tree_of(repo, source))
        return cache[repo, source["sha256"]]

    counts = reg.training_counts()
    repos: dict[str, Any] = {}
    live: dict[str, Any] = {}
    for rec in reg.records(("live",)):
        repo = rec["repo"]
        if repo not in repos:
            src = reg.spec(repo)["source"]
            n = counts.get(repo, 0)
            repos[repo] = {"training_release": src.get("version") if n else None,
                           "training_date": (src.get("released") or None) if n else None, "training_tasks": n}
        r, p = repos[repo], provenance(rec)
        released, to = str(p.get("released", ""))[:10], str(p.get("to_version", ""))
        if not r["training_tasks"]:
            held, why = True, "the repository has no training task"
        elif not r["training_date"]:
            held, why = False, "the training snapshot's release date is unknown"
        elif _version(to) > _version(r["training_release"]) and released > r["training_date"]:
            held, why = True, f"fix {to} ({released}) after the training snapshot {r['training_release']} ({r['training_date']})"
        else:
            held, why = False, (f"fix {to} ({released}) is not after the training snapshot "
                                f"{r['training_release']} ({r['training_date']}): the training code holds it")
        if held and r["training_tasks"] and tree_of is not None:
            fix = fix_lines(rec, lambda src: lines(repo, src))
            share = len(fix & lines(repo, reg.spec(repo)["source"])) / len(fix) if fix else 0.0
            if share > MAX_VERBATIM:
                held, why = False, (f"{share:.0%} of the fix's new lines are verbatim in the training snapshot "
                                    f"{r['training_release']} (a regression after it, fixed back)")
        live[rec["instance_id"]] = {"released": released, "held_out": held, "why": why}
    return {"repos": dict(sorted(repos.items())), "live": dict(sorted(live.items()))}


def figures(reg: Registry, tree_of: Any) -> list[dict[str, Any]]:
    """Per live task: its new lines, the share verbatim in its training snapshot, and the training tasks
    whose gold patch adds one of them. ``tree_of(repo, source)`` gives the tree of a release (``source``: a
    dict with ``version`` and ``sha256``)."""
    data = split(reg, tree_of)
    adds: dict[str, list[tuple[str, set[str]]]] = {}
    for rec in reg.records(("pool", "mirror")):
        adds.setdefault(rec["repo"], []).append((rec["instance_id"], new_lines(rec.get("patch", ""))))
    lines_of: dict[tuple[str, str], set[str]] = {}

    def lines(repo: str, source: dict[str, Any]) -> set[str]:
        key = (repo, source["sha256"])
        if key not in lines_of:
            lines_of[key] = snapshot_lines(tree_of(repo, source))
        return lines_of[key]

    out = []
    for rec in reg.records(("live",)):
        repo, iid = rec["repo"], rec["instance_id"]
        fix = fix_lines(rec, lambda src: lines(repo, src))
        row = {"id": iid, "repo": repo, "held_out": data["live"][iid]["held_out"], "new_lines": len(fix),
               "verbatim": None, "shared_with": []}
        if data["repos"][repo]["training_tasks"]:
            row["verbatim"] = (len(fix & lines(repo, reg.spec(repo)["source"])) / len(fix)) if fix else 0.0
            row["shared_with"] = sorted(t for t, added in adds.get(repo, []) if added & fix)
        out.append(row)
    return out


def fix_lines(record: dict[str, Any], release_lines: Any) -> set[str]:
    """What a live fix teaches: its new lines (:func:`new_lines`) that its own base release N does not
    already hold anywhere (a fix that moves or reuses existing code adds nothing new with those lines).
    ``release_lines(source)`` gives the normalised lines of a release."""
    src = provenance(record).get("source")
    src = ast.literal_eval(src) if isinstance(src, str) else src
    return new_lines(record.get("patch", "")) - release_lines(src)


def _tree(repo: str, source: dict[str, Any]) -> Path:
    from frog_gym.catalog.live import release_spec
    from frog_gym.catalog.snapshot import snapshot_tree
    from frog_gym.catalog.spec import load_repo

    return snapshot_tree(release_spec(load_repo(repo), source["version"], source["sha256"]))


def report(rows: list[dict[str, Any]]) -> str:
    held = [r for r in rows if r["held_out"]]
    seen = [r for r in rows if not r["held_out"]]
    measured = [r for r in rows if r["verbatim"] is not None and r["new_lines"]]
    lines = [f"live tasks: {len(rows)}; held out: {len(held)} from {len({r['repo'] for r in held})} repositories; "
             f"seen: {len(seen)}",
             f"fixes with >= 80% of their new lines verbatim in the training snapshot: "
             f"{sum(r['verbatim'] >= 0.8 for r in measured)} of {len(measured)} measured",
             f"fixes with > {MAX_VERBATIM:.0%} verbatim: {sum(r['verbatim'] > MAX_VERBATIM for r in measured)}; "
             f"of them held out: {sum(r['verbatim'] > MAX_VERBATIM for r in measured if r['held_out'])}",
             f"live fixes sharing a new line with a training task's gold patch: "
             f"{sum(bool(r['shared_with']) for r in rows)} (training tasks: "
             f"{len({t for r in rows for t in r['shared_with']})}); held out: "
             f"{sum(bool(r['shared_with']) for r in held)}"]
    return "\n".join(lines)


def table(data: dict[str, Any], was: Registry | None = None) -> str:
    """The split per repository as a markdown table (``docs/froglive.md``): its training snapshot and date,
    with ``was`` the pin it had there (e.g. a checkout from before the split), and its live fixes: held out and
    seen, with the release dates of the held-out ones."""
    head = ["repository", *(["pin before"] if was else []), "training snapshot", "its upload date",
            "live held out", "live seen", "held-out fixes released"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for repo, r in data["repos"].items():
        mine = {i: v for i, v in data["live"].items() if i.startswith(repo + "__")}
        dates = sorted(v["released"] for v in mine.values() if v["held_out"])
        held = sum(v["held_out"] for v in mine.values())
        before = []
        if was:
            old = was.spec(repo)["source"] if (was.root / "repos" / f"{repo}.toml").exists() else {}
            before = [old.get("version", "-")]
        snap = r["training_release"] or "- (no training task)"
        span = f"{dates[0]} .. {dates[-1]}" if len(set(dates)) > 1 else (dates[0] if dates else "-")
        out.append("| " + " | ".join([repo, *before, snap, r["training_date"] or "-", str(held),
                                       str(len(mine) - held), span]) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m frog_gym.generators.timesplit", description=__doc__.split("\n\n")[0])
    ap.add_argument("--registry", type=Path, default=None, help="a registry folder (default: the installed one)")
    ap.add_argument("--write", action="store_true", help="write registry/timesplit.json")
    ap.add_argument("--figures", action="store_true", help="print the contamination figures (fetches snapshots)")
    ap.add_argument("--table", action="store_true", help="print the split per repository as a markdown table")
    ap.add_argument("--was", type=Path, default=None, help="with --table: a registry folder from before the split, "
                    "whose pins the table shows beside the new ones")
    args = ap.parse_args(argv)
    reg = Registry(args.registry or registry_dir())
    data = split(reg, _tree)
    if args.write:
        (reg.root / "timesplit.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    held = sum(v["held_out"] for v in data["live"].values())
    print(f"{held} of {len(data['live'])} live tasks held out")
    for repo, r in data["repos"].items():
        n = sum(1 for i, v in data["live"].items() if i.startswith(repo + "__") and v["held_out"])
        print(f"  {repo:16} training {r['training_release'] or '-':10} {r['training_date'] or '-':10} "
              f"({r['training_tasks']} tasks)  held out {n}")
    if args.table:
        print(table(data, Registry(args.was) if args.was else None))
    if args.figures:
        print(report(figures(reg, _tree)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
