"""Reading fixed-width little- or big-endian numbers at arbitrary byte offsets of a binary file, vectorised."""

from __future__ import annotations

import numpy as np


def values_at(data: bytes | np.ndarray, offsets: np.ndarray, dtype: str) -> np.ndarray:
    """The `dtype` numbers that start at each byte offset of `data` (offsets need not be aligned).

    One unaligned view of the buffer with a one-byte stride makes every offset addressable, so this is a single
    gather with no per-byte index; an offset whose value would run past the end raises IndexError.
    """
    dt = np.dtype(dtype)
    size = memoryview(data).nbytes
    count = size - dt.itemsize + 1
    if count <= 0:
        if len(offsets):
            raise IndexError(f"offset {int(offsets[0])} is past the end of a {size}-byte buffer")
        return np.empty(0, dtype=dt)
    every_byte = np.ndarray(shape=(count,), dtype=dt, buffer=data, strides=(1,))
    return every_byte[offsets]
