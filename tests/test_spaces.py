"""The text spaces under Gymnasium's async vector env: shared memory carries any Unicode, live."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

import frog_gym  # noqa: F401  (registers the envs)
from frog_gym.env.spaces import UnicodeText

TASK = "inflection__handwritten-0001"


def test_shared_memory_round_trips_unicode_and_reads_live():
    space = UnicodeText(16)
    buf = create_shared_memory(space, n=2)
    view = read_from_shared_memory(space, buf, n=2)
    assert tuple(view) == ("", "")
    write_to_shared_memory(space, 0, "héllo ✓ 🐸", buf)
    write_to_shared_memory(space, 1, "x" * 40, buf)  # longer than the space: cut at max_length
    assert view[0] == "héllo ✓ 🐸" and view[1] == "x" * 16
    snapshot = copy.deepcopy(view)
    write_to_shared_memory(space, 0, "ok", buf)
    assert view[0] == "ok" and snapshot == ("héllo ✓ 🐸", "x" * 16) and isinstance(snapshot, tuple)
    assert np.frombuffer(buf.get_obj(), dtype=np.int32)[0] == 2  # length-prefixed code points


def test_make_vec_async_works_out_of_the_box_with_non_ascii_output():
    envs = gym.make_vec("FrogSWE-v0", num_envs=2, vectorization_mode="async", task_id=TASK)
    try:
        obs, _ = envs.reset(seed=0)
        assert all("inflection" in o for o in obs) and not any(set(o) == {"0"} for o in obs)
        obs, reward, terminated, truncated, _ = envs.step(
            ("```bash\necho héllo ✓\n```", {"tool": "bash", "command": "echo naïve ✓ $((6*7))"})
        )
        assert obs[0].startswith("héllo ✓") and obs[1].startswith("naïve ✓ 42"), obs
        assert not terminated.any() and not truncated.any()
    finally:
        envs.close()
