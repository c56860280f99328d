"""Hand-written bugs: the first tasks of the registry, each a small real-world-looking defect.

``frog-gym generate --handwritten REPO`` validates these with :func:`frog_gym.generators.validate.validate`
(full suite, 3 runs) and writes them to ``registry/tasks/<repo>.jsonl``.
"""

from __future__ import annotations

from frog_gym.generators.validate import Edit

I = "inflection/__init__.py"
C = "src/cachetools/__init__.py"
K = "src/cachetools/keys.py"
T = "toolz/itertoolz.py"
F = "frogtoy.py"  # the FrogSWE-Toy-v0 family (registry/toy/frogtoy)

# (repo, edits, problem statement)
BUGS: list[tuple[str, list[Edit], str]] = [
    ("inflection", [Edit(I, "if number % 100 in (11, 12, 13):", "if number % 100 in (11, 12):")],
     "`ordinalize(13)` returns '13rd' and `ordinal(113)` gives 'rd'. Numbers ending in 13 should take 'th', "
     "like 11 and 12 do ('13th', '113th')."),
    ("inflection", [Edit(I, "return string[0].lower() + camelize(string)[1:]", "return string[0] + camelize(string)[1:]")],
     "`camelize('device_type', False)` returns 'DeviceType', but with `uppercase_first_letter=False` the "
     "result should start lowercase: 'deviceType'."),
    ("inflection", [Edit(I, "return word.replace('_', '-')", "return word.replace('_', '-', 1)")],
     "`dasherize('puni_puni_kun')` returns 'puni-puni_kun': only the first underscore becomes a dash. "
     "Every underscore should be replaced."),
    ("inflection", [Edit(I, '    word = re.sub(r"_id$", "", word)\n', "")],
     "`humanize('author_id')` returns 'Author id'. A trailing '_id' should be dropped, as documented: "
     "'Author'."),
    ("inflection", [Edit(I, "    number = abs(int(number))\n", "    number = int(number)\n")],
     "Ordinals of negative numbers are wrong: `ordinalize(-1021)` gives '-1021th' instead of '-1021st', "
     "and `ordinal(-2)` is 'th' instead of 'nd'."),
    ("cachetools", [Edit(C, "while self.__currsize + 1 > maxsize:", "while self.__currsize + 1 >= maxsize:")],
     "A `Cache(maxsize=2)` only ever holds one item: inserting a second key evicts the first. A cache "
     "should keep up to `maxsize` items before evicting anything."),
    ("cachetools", [Edit(C, "if itemsize > maxsize:\n                raise ValueError(\"value too large\")",
                         "if itemsize >= maxsize:\n                raise ValueError(\"value too large\")")],
     "With `getsizeof`, a value whose size equals `maxsize` is refused with `ValueError: value too large`, "
     "although it fits exactly. Only values larger than `maxsize` should be refused."),
    ("cachetools", [Edit(C, "        if key in self:\n            return self[key]\n        else:\n            return default",
                         "        if key in self:\n            return self[key]\n        else:\n            return None")],
     "`cache.get(key, default)` ignores the default: for a missing key it returns None instead of the value "
     "I passed."),
    ("cachetools", [Edit(C, "            value = self[key]\n            del self[key]\n        elif",
                         "            value = self[key]\n        elif")],
     "`cache.pop(key)` returns the value but leaves the key in the cache: `key in cache` is still True "
     "afterwards and `len(cache)` does not shrink."),
    ("cachetools", [Edit(K, "    return key + tuple(map(type, args))\n\n\ndef typedmethodkey",
                         "    return key\n\n\ndef typedmethodkey")],
     "`typedkey(1)` and `typedkey(1.0)` return equal keys, so `@cached(cache, key=typedkey)` returns the "
     "cached int result for a float argument. The key should include the argument types."),
    ("toolz", [Edit(T, "        return seq[-n:]", "        return seq[-n + 1:]")],
     "`tail(2, [10, 20, 30, 40, 50])` returns `[50]`; it should return the last two elements, `[40, 50]`. "
     "Iterators that are not sequences work correctly."),
    ("toolz", [Edit(T, "    return itertools.islice(seq, 0, None, n)", "    return itertools.islice(seq, 1, None, n)")],
     "`list(take_nth(2, [10, 20, 30, 40, 50]))` gives `[20, 40]`, but the first element should be included: "
     "`[10, 30, 50]`."),
    ("toolz", [Edit(T, "        d[item] += 1\n    return dict(d)", "        d[item] = 1\n    return dict(d)")],
     "`frequencies(['cat', 'cat', 'ox'])` reports every count as 1: `{'cat': 1, 'ox': 1}` instead of "
     "`{'cat': 2, 'ox': 1}`."),
    ("toolz", [Edit(T, "    return itertools.islice(seq, n, None)", "    return itertools.islice(seq, n + 1, None)")],
     "`drop(2, [10, 20, 30, 40, 50])` drops three elements and returns `[40, 50]`; it should return "
     "`[30, 40, 50]`."),
    ("toolz", [Edit(T, "    return zip(*(collections.deque(itertools.islice(it, i), 0) or it",
                    "    return zip(*(collections.deque(itertools.islice(it, i + 1), 0) or it")],
     "`list(sliding_window(2, [1, 2, 3, 4]))` returns `[(2, 3), (3, 4)]`: the windows start one element "
     "late and the first window `(1, 2)` is missing."),
    ("frogtoy", [Edit(F, "return a + b", "return a - b")],
     "`add(2, 3)` returns -1 instead of 5: `add` should return the sum of its arguments."),
    ("frogtoy", [Edit(F, "return c - d", "return c + d")],
     "`subtract(7, 2)` returns 9; it should return the difference, 5."),
    ("frogtoy", [Edit(F, "return e * f", "return e + f")],
     "`multiply(3, 4)` returns 7 instead of the product, 12."),
    ("frogtoy", [Edit(F, "return g < h", "return g > h")],
     "`is_less(1, 2)` returns False, but 1 is smaller than 2."),
    ("frogtoy", [Edit(F, "return m > n", "return m < n")],
     "`is_greater(5, 3)` returns False, but 5 is larger than 3."),
    ("frogtoy", [Edit(F, "return p == q", "return p != q")],
     "`is_equal(4, 4)` returns False: equal numbers should compare equal."),
]


def generate_handwritten(spec, tasks_dir: str | None = None) -> int:
    """Validate this repository's hand-written bugs (full suite, 3 runs) and append the new ones to its
    task file as ``<repo>__handwritten-<n>``; returns how many were written."""
    from frog_gym.generators.synthesis import GenerateConfig, tasks_path
    from frog_gym.generators.taskfiles import append_task, read_existing
    from frog_gym.generators.validate import bug_changes, patches, validate
    from frog_gym.catalog.snapshot import prepare
    from frog_gym.catalog.task import Task

    repo = prepare(spec)
    out = tasks_path(spec, GenerateConfig(tasks_dir=tasks_dir))
    have = {d["instance_id"] for d in read_existing(out)}
    written = 0
    mine = [b for b in BUGS if b[0] == spec.name]
    for n, (_, edits, statement) in enumerate(mine, 1):
        iid = f"{spec.name}__handwritten-{n:04d}"
        if iid in have:
            continue
        changes = bug_changes(repo, edits)
        v = validate(repo, changes)
        if not v.ok:
            print(f"{iid}: refused: {v.reason}")
            continue
        bug, gold = patches(changes)
        files = sorted({e.path for e in edits})
        append_task(out, Task(
            instance_id=iid, repo=spec.name, version=spec.source.version, base_commit=spec.source.key, patch=gold,
            problem_statement=statement, FAIL_TO_PASS=tuple(v.fail_to_pass), PASS_TO_PASS=tuple(v.pass_to_pass),
            bug_patch=bug, statement_level="full", provenance={"generator": "handwritten", "files": files},
            features={"family": "handwritten", "n_sites": len(edits), "files_touched": len(files),
                      "f2p": len(v.fail_to_pass), "statement_level": "full"},
            validation={"runs": v.runs, "seconds": round(v.seconds, 2), "flaky": v.flaky}))
        written += 1
    return written
