"""Vector files: rows written a slice at a time, read back memory-mapped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chunkmark.retrieval.vectors import VectorFile, open_vectors


def test_slices_written_in_order_read_back_mapped(tmp_path: Path) -> None:
    rows = np.arange(30, dtype=np.float32).reshape(10, 3)
    out = VectorFile(tmp_path / "v.npy", 10)
    for lo in range(0, 10, 4):
        out.write(rows[lo : lo + 4])
    mapped = out.finish()
    assert isinstance(mapped, np.memmap) and not mapped.flags.writeable
    assert mapped.dtype == np.float32 and np.array_equal(mapped, rows)
    assert np.array_equal(np.load(tmp_path / "v.npy"), rows)
    assert np.array_equal(open_vectors(tmp_path / "v.npy"), rows)


def test_float64_rows_are_stored_as_float32(tmp_path: Path) -> None:
    out = VectorFile(tmp_path / "v.npy", 2)
    out.write(np.array([[0.5, 1.0], [2.0, 4.0]]))
    assert out.finish().dtype == np.float32


def test_mistakes_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 1 row"):
        VectorFile(tmp_path / "a.npy", 0)
    out = VectorFile(tmp_path / "b.npy", 3)
    with pytest.raises(ValueError, match="2-D"):
        out.write(np.zeros(3, np.float32))
    out.write(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="dimension 5"):
        out.write(np.zeros((1, 5), np.float32))
    with pytest.raises(ValueError, match="4 rows written"):
        out.write(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="2 of 3 rows"):
        out.finish()


def test_open_vectors_refuses_other_arrays(tmp_path: Path) -> None:
    np.save(tmp_path / "ints.npy", np.zeros((2, 2), np.int64))
    with pytest.raises(ValueError, match="not float32 rows"):
        open_vectors(tmp_path / "ints.npy")
