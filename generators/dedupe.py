"""No redundant tasks: at most one single-bug task per mutated line, and every combined task holds at
least one bug that is not itself a task.

:func:`plan` picks the tasks to drop: on each mutated line it keeps the single-bug task that the fewest
combined tasks are built from (so that the dropped ones free combined tasks), then, while a combined task
has every bug registered as a single task, it drops the single task that frees the most combined tasks
(a greedy hitting set), so as few tasks as possible go. Hand-written tasks (no sites) are never dropped.

Example:
    >>> def single(i, line): return {"instance_id": i, "provenance": {"sites": [
    ...     {"path": "m.py", "lineno": line, "start": line, "end": line + 1, "replacement": i}]}}
    >>> combo = {"instance_id": "c", "provenance": {"sites": single("a", 1)["provenance"]["sites"]
    ...          + single("b", 5)["provenance"]["sites"]}}
    >>> sorted(plan([single("a", 1), single("a2", 1), single("b", 5), combo]))
    ['a']
"""

from __future__ import annotations

from collections import Counter


def site_key(site: dict) -> tuple:
    return site["path"], site["start"], site["end"], site["replacement"]


def plan(records: list[dict]) -> set[str]:
    """Ids of the tasks of one repository to drop (see the module docstring)."""
    singles = [d for d in records if len(d.get("provenance", {}).get("sites", [])) == 1]
    combos = [d for d in records if len(d.get("provenance", {}).get("sites", [])) > 1]
    uses: Counter = Counter(site_key(s) for c in combos for s in c["provenance"]["sites"])
    by_line: dict[tuple, list[dict]] = {}
    for d in singles:
        s = d["provenance"]["sites"][0]
        by_line.setdefault((s["path"], s["lineno"]), []).append(d)
    drop: set[str] = set()
    for group in by_line.values():
        group.sort(key=lambda d: (uses[site_key(d["provenance"]["sites"][0])], d["instance_id"]))
        drop.update(d["instance_id"] for d in group[1:])
    task_of = {site_key(d["provenance"]["sites"][0]): d["instance_id"] for d in singles}

    def blocked(c: dict) -> list[str]:
        """The single tasks standing for every bug of ``c`` ([] when some bug of ``c`` is not a task)."""
        ids = [task_of.get(site_key(s)) for s in c["provenance"]["sites"]]
        return [] if any(i is None or i in drop for i in ids) else ids  # type: ignore[misc]

    while True:
        stuck = [ids for c in combos if (ids := blocked(c))]
        if not stuck:
            return drop
        drop.add(Counter(i for ids in stuck for i in ids).most_common(1)[0][0])


def violations(records: list[dict]) -> list[str]:
    """What breaks the rules in one repository's tasks (empty: none)."""
    out = []
    lines: Counter = Counter()
    singles = set()
    for d in records:
        sites = d.get("provenance", {}).get("sites", [])
        if len(sites) == 1:
            lines[(sites[0]["path"], sites[0]["lineno"])] += 1
            singles.add(site_key(sites[0]))
    out += [f"{n} single-bug tasks on {p}:{ln}" for (p, ln), n in lines.items() if n > 1]
    for d in records:
        sites = d.get("provenance", {}).get("sites", [])
        if len(sites) > 1 and all(site_key(s) in singles for s in sites):
            out.append(f"{d['instance_id']}: every bug is also a single-bug task")
    return out
