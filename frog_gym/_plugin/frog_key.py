"""Grading's FIFO, the one channel into a graded test process: the selection, then the report's key.

Part of the report plugin (``frog_report``, which loads it from this folder, never through ``sys.path``, and
keeps it out of ``sys.modules``). It holds two functions that run only while ``frog_report`` is imported, before
any code under test: nothing of it is looked up after that. It relies on the standard library alone (``json``).
The key is read into a bytearray, never a ``bytes`` or ``str`` object, so that the vault can wipe it.
"""

import json


def read_exactly(f, n):
    """``n`` bytes from the raw file ``f`` into a new bytearray (shorter at end of file)."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = f.readinto(view[got:])
        if not k:
            break
        got += k
    view.release()
    del buf[got:]
    return buf


def open_fifo(path):
    """Grading's FIFO at ``path``: it holds the selection (8 hex digits of length, then its JSON), then the
    64-byte key. Returns the selection and the FIFO, left open for the vault (``frog_vault.open_vault``) to read the key from last."""
    f = open(path, "rb", buffering=0)
    size = bytes(read_exactly(f, 8))
    try:
        chosen = json.loads(bytes(read_exactly(f, int(size, 16))))
    except ValueError:
        chosen = None
    return chosen, f
