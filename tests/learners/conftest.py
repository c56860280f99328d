"""Fixtures of the learner tests: the tiny toy policy, built once per session (tokenizer trained on the
toy family's text, a 2-layer GPT-2 from a config, the format warm-up), saved with save_pretrained."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the learner tests need the torch extra")
pytest.importorskip("transformers", reason="the learner tests need the torch extra")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    from frog_gym.learners.toy import make_tiny_model

    torch.set_num_threads(1)  # a tiny model runs fastest on one thread, and the tests share two cores
    return str(make_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0, warm_steps=60))
