"""results.parquet is read column by column (report/data.py): the groups, their order and every
per-question value equal a plain row-by-row reading of the same file."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from chunkmark.report.data import _read_results


def _rows(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for cell in range(7):
        chunker = f"fixed_tokens(size={100 + cell})"
        for retrieval in ("top_k(k=5)", "token_budget(tokens=512)", None):
            for scoring in (("position", "chars", "sum"), (None, None, None)):
                for q in rng.sample(range(40), 25):
                    rows.append(
                        {
                            "dataset": None if cell == 3 else "set",
                            "chunker": chunker,
                            "embedder": "bm25" if cell % 2 else "minilm",
                            "retrieval": retrieval,
                            "k": 5,
                            "excerpts": scoring[0],
                            "unit": scoring[1],
                            "denominator": scoring[2],
                            "question_id": f"q{q}",
                            "doc_id": f"d{q % 4}",
                            "k_used": rng.randint(0, 5),
                            "recall": rng.random(),
                            "iou": None if rng.random() < 0.1 else rng.random(),
                            "retrieved_tokens": rng.randint(0, 600),
                        }
                    )
    rng.shuffle(rows)
    return rows


def _reference(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """Rows grouped by (dataset, chunker, embedder, retrieval, scoring) in order of first
    appearance, by hand."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        key = (
            row["dataset"] or "",
            row["chunker"],
            row["embedder"],
            row["retrieval"] or f"top_k(k={row['k']})",
            row["excerpts"] or "position",
            row["unit"] or "chars",
            row["denominator"] or "sum",
        )
        groups.setdefault(key, []).append(row)
    return groups


def test_column_reading_equals_a_row_by_row_reading(tmp_path: Path) -> None:
    rows = _rows(0)
    table = pa.Table.from_pylist(rows)
    # dictionary-typed key columns and several row groups, as large files have
    table = table.set_column(
        table.column_names.index("chunker"),
        "chunker",
        table.column("chunker").dictionary_encode(),
    )
    pq.write_table(table, tmp_path / "results.parquet", row_group_size=97)
    got = _read_results(tmp_path)
    want = _reference(rows)
    # None and top_k(k=5) are one setting; the default scoring and its spelled-out form merge
    assert len(got) == len(want) == 7 * 2
    for (got_key, scores), (key, group) in zip(got.items(), want.items(), strict=True):
        dataset, chunker, embedder, retrieval = key[:4]
        assert got_key[:4] == (dataset, chunker, embedder, retrieval)
        assert scores.question_ids == tuple(r["question_id"] for r in group)
        assert scores.doc_ids == tuple(r["doc_id"] for r in group)
        assert scores.k_used.tolist() == [r["k_used"] for r in group]
        assert scores.values["recall"].tolist() == [r["recall"] for r in group]
        iou = [math.nan if r["iou"] is None else r["iou"] for r in group]
        assert np.array_equal(scores.values["iou"], np.asarray(iou), equal_nan=True)
        assert scores.retrieved_tokens is not None
        assert scores.retrieved_tokens.tolist() == [float(r["retrieved_tokens"]) for r in group]


def test_a_file_without_the_optional_columns(tmp_path: Path) -> None:
    rows = [
        {k: v for k, v in r.items() if k not in ("retrieval", "retrieved_tokens", "dataset")}
        for r in _rows(1)
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "results.parquet")
    got = _read_results(tmp_path)
    assert {key[3] for key in got} == {"top_k(k=5)"}
    assert all(s.retrieved_tokens is None for s in got.values())
    assert sum(len(s.question_ids) for s in got.values()) == len(rows)
