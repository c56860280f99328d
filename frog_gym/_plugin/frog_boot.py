"""Start a graded pytest run when the package under test is one pytest itself imports (pluggy, iniconfig, ...).

``python -m pytest`` imports pytest's own dependencies before it loads any ``-p`` plugin. When the package
under test is one of them, the agent's copy of it would run first: before the report plugin reads its key
and installs the audit hook, and then as the very machinery (pluggy calls every hook, the report plugin's
included) that reports the outcomes. So grading starts here instead (``python /frog/plugin/frog_boot.py
<pytest arguments>``, run in ``/testbed``):

1. with ``/testbed`` off ``sys.path`` and the pristine release's import paths (``$FROG_PRISTINE``, mounted
   read-only) in its place, it imports pytest, every built-in pytest plugin and then the report plugin (key,
   audit hook, seal): pytest is bound to a pristine copy of the package, and nothing the agent controls runs;
2. it drops every module of the package under test (``$FROG_OWNED``) from ``sys.modules``, so the tests
   import the agent's copy afresh;
3. it becomes what ``python -m pytest`` in ``/testbed`` would be (``sys.path``, ``sys.argv``) and runs it.

Two copies of the package then live in the process: pytest's (pristine) and the tests' (the agent's).
"""

import importlib
import os
import sys

TESTBED = "/testbed"


def _outside_testbed(path):
    return path != TESTBED and not path.startswith(TESTBED + "/")


def main():
    owned = [n for n in os.environ.pop("FROG_OWNED", "").split(",") if n]
    pristine = [p for p in os.environ.pop("FROG_PRISTINE", "").split(":") if p]
    path = list(sys.path)  # [this folder, $PYTHONPATH..., the standard library, site-packages, .pth entries]
    sys.path[:] = [*pristine, *filter(_outside_testbed, path)]
    import pytest
    from _pytest import config
    from _pytest.assertion import rewrite

    for name in config.default_plugins:
        importlib.import_module(name if "." in name else f"_pytest.{name}")
    # The report plugin is imported before pytest could mark it for assertion rewriting; that is expected.
    warn = rewrite.AssertionRewritingHook._warn_already_imported

    def _warn_unless_ours(self, name):
        if name != "frog_report":
            warn(self, name)

    rewrite.AssertionRewritingHook._warn_already_imported = _warn_unless_ours
    import frog_report  # noqa: F401  (its key, its audit hook and its seal of pytest, before any code under test)
    for name in list(sys.modules):
        if name.split(".")[0] in owned:
            del sys.modules[name]
    sys.path[:] = [os.getcwd(), *path[1:]]  # as `python -m`: the working directory first, this folder gone
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py"), *sys.argv[1:]]
    raise SystemExit(pytest.console_main())


if __name__ == "__main__":
    main()
