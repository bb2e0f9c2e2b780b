"""Vector files: float32 rows written into a ``.npy`` file a slice at a time, read back
memory-mapped.

A cell with more chunks than fit comfortably in memory embeds them a slice at a time and writes
each slice's rows here (:class:`VectorFile`); the finished file opens as a read-only memory map
(:func:`open_vectors`) that exact search reads block by block. The file is a plain NumPy
``.npy`` file, so ``np.load(path, mmap_mode="r")`` reads it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]


class VectorFile:
    """A ``.npy`` file of ``rows`` float32 rows, filled in order by :meth:`write`.

    The file is created by the first :meth:`write`, whose rows fix the dimension (so callers
    need not know it before the first slice is embedded). :meth:`finish` checks every row was
    written and returns the file opened read-only and memory-mapped.
    """

    def __init__(self, path: str | Path, rows: int) -> None:
        if rows < 1:
            raise ValueError(f"a vector file holds at least 1 row, got rows={rows}")
        self.path = Path(path)
        self.rows = rows
        self.written = 0
        self._array: np.memmap[Any, np.dtype[np.float32]] | None = None

    def write(self, vectors: npt.ArrayLike) -> None:
        """Append a slice of rows (``(n, dimension)``, converted to float32)."""
        part = np.asarray(vectors, dtype=np.float32)
        if part.ndim != 2:
            raise ValueError(f"vectors must be a 2-D array, got shape {part.shape}")
        if self.written + len(part) > self.rows:
            raise ValueError(
                f"{self.written + len(part)} rows written to a vector file of {self.rows}"
            )
        if self._array is None:
            self._array = np.lib.format.open_memmap(
                self.path, mode="w+", dtype=np.float32, shape=(self.rows, part.shape[1])
            )
        elif part.shape[1] != self._array.shape[1]:
            raise ValueError(
                f"vectors have dimension {part.shape[1]}, the file has {self._array.shape[1]}"
            )
        self._array[self.written : self.written + len(part)] = part
        self.written += len(part)

    def finish(self) -> FloatArray:
        """Flush the file and return it memory-mapped read-only, ``(rows, dimension)``."""
        if self._array is None or self.written != self.rows:
            raise ValueError(f"{self.written} of {self.rows} rows were written to {self.path}")
        self._array.flush()
        self._array = None
        return open_vectors(self.path)


def open_vectors(path: str | Path) -> FloatArray:
    """A ``.npy`` file of float32 rows, memory-mapped read-only (nothing is read up front)."""
    array: FloatArray = np.load(Path(path), mmap_mode="r")
    if array.dtype != np.float32 or array.ndim != 2:
        raise ValueError(
            f"{path} holds a {array.dtype} array of shape {array.shape}, not float32 rows"
        )
    return array
