"""Gymnasium spaces for text in and text out."""

from __future__ import annotations

import string
from collections.abc import Sequence
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


class SharedStrings(Sequence[str]):
    """The strings in an async vector env's shared observation buffer: a live view that reads the buffer
    on access; ``copy.deepcopy`` (what the env returns unless ``copy=False``) gives a plain tuple."""

    def __init__(self, rows: Any):
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    __hash__ = None  # type: ignore[assignment]  (mutable: its contents change as the workers write)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self)[i]
        row = self._rows[i]
        return row[1:1 + int(row[0])].tobytes().decode("utf-32-le", "surrogatepass")

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (tuple, SharedStrings)) and tuple(self) == tuple(other)

    def __repr__(self) -> str:
        return repr(tuple(self))


def _register_shared_memory() -> None:
    """Teach Gymnasium's async vector env to carry :class:`UnicodeText` through shared memory.

    Gymnasium's own ``Text`` handlers map each character to its index in the space's charset, so a
    character outside it (``é``, ``✓``) kills the worker and an unwritten slot reads back as a string of
    the charset's first character; and the async env reads the buffer once, when it is built, so its
    observations must be a live view, as its numpy observations are. These handlers, registered on Gymnasium's ``singledispatch`` functions
    for this subclass only, store each string as its length followed by its UTF-32 code points instead.
    """
    import multiprocessing as mp

    import numpy as np
    from gymnasium.vector.utils import shared_memory as shm

    @shm.create_shared_memory.register(UnicodeText)
    def _create(space: UnicodeText, n: int = 1, ctx: Any = mp) -> Any:
        return ctx.Array(np.dtype(np.int32).char, n * (space.max_length + 1))

    @shm.read_from_shared_memory.register(UnicodeText)
    def _read(space: UnicodeText, shared_memory: Any, n: int = 1) -> SharedStrings:
        return SharedStrings(np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length + 1)))

    @shm.write_to_shared_memory.register(UnicodeText)
    def _write(space: UnicodeText, index: int, value: str, shared_memory: Any) -> None:
        size = space.max_length + 1
        codes = np.frombuffer(value.encode("utf-32-le", "surrogatepass"), dtype=np.int32)[: space.max_length]
        row = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)[index * size:(index + 1) * size]
        row[0] = len(codes)
        row[1:1 + len(codes)] = codes


_register_shared_memory()
