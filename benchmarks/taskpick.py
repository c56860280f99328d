"""Named benchmark tasks that survive a change of the registry.

Benchmarks name the tasks they measure (a light bug, a heavy combined one), but re-pinning a repository
(the time split, ``docs/froglive.md``) makes its pool again under new ids. :func:`pick` keeps a named id when it
is registered, else takes the registered pool task of the same repository and family (``combo2``,
``removed_statement``...) whose selected test count is closest to the named task's recorded one, or the first
by id; it says what it replaced on stderr, so a figure is never silently measured on another task.
"""

from __future__ import annotations

import sys

from frog_gym.catalog.live import is_live
from frog_gym.catalog.task import load_task, registered_task_ids


def _family(iid: str) -> str:
    return iid.split("__", 1)[1].rsplit("-", 1)[0] if "__" in iid else ""


def pick(ids: list[str] | tuple[str, ...], heaviest: bool = False) -> list[str]:
    """``ids`` with each unregistered one replaced (see the module); ``heaviest``: by the most selected tests."""
    registered = set(registered_task_ids())
    out = []
    for iid in ids:
        if iid in registered:
            out.append(iid)
            continue
        repo, family = iid.split("__", 1)[0], _family(iid)
        same = sorted(i for i in registered if i.startswith(repo + "__") and not is_live(i) and _family(i) == family)
        if not same:
            raise SystemExit(f"{iid}: not registered, and {repo} has no pool task of family {family!r}; "
                             f"name another task with --task")
        new = max(same, key=lambda i: (len(load_task(i).selected_tests), i)) if heaviest else same[0]
        print(f"note: {iid} is no longer registered (its repository was re-pinned); measuring {new} instead",
              file=sys.stderr)
        out.append(new)
    return out
