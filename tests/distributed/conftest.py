"""A local Ray for the tests of this folder (2 CPUs, a small object store), started once per module;
the workers see this folder on their PYTHONPATH (for :mod:`slow_agents`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed: pip install 'frog-gym[ray]'")
    from frog_gym.bench.distributed import connect

    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), old) if p)
    connect(None, num_cpus=2, object_store_mb=80)
    yield ray
    from frog_gym.bench.distributed import close_pools

    close_pools()
    ray.shutdown()
    if old is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old
