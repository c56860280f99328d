"""Gymnasium spaces for text in and text out."""

from __future__ import annotations

import string
from typing import Any

from gymnasium import spaces


class UnicodeText(spaces.Text):
    """A ``Text`` space whose members may hold any character (a repository's output is not ASCII).

    Sampling draws printable ASCII, which is what Gymnasium's checker needs; ``contains`` accepts every
    string up to ``max_length``.

    >>> UnicodeText(100).contains("naïve ✓")
    True
    """

    def __init__(self, max_length: int, seed: int | None = None):
        super().__init__(max_length=max_length, min_length=0, charset=string.printable, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.max_length})"
