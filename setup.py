"""The one thing ``pyproject.toml`` can't say: the report plugin's optional C helper (``frog_gym/_plugin/frog_accel.c``),
built where a C compiler is found and skipped where none is (the plugin then does the same checks in Python)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("frog_gym._plugin.frog_accel", ["frog_gym/_plugin/frog_accel.c"], optional=True)])
