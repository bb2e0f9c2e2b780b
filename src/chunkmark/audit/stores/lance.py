"""LanceDB (``lancedb``, the ``audit-lancedb`` extra): a table in a database folder.

The vector column is the table's one fixed-size list column (``vector=`` names another), the
text column the first of ``text``, ``page_content``, ``document``, ``content`` (``text=``
names another), the id column ``id`` when there is one (else the row's position). Metadata is
a ``metadata`` struct or JSON string column when there is one, plus every other scalar column.
A table without a vector index is searched exactly by LanceDB; one with an index through it, as
deployed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from chunkmark.audit.stores import base
from chunkmark.audit.stores.base import FloatArray, StoreAddress, StoredChunks

TEXT_COLUMNS = ("text", "page_content", "document", "content")
ROW_ID = "_rowid"


def _connect(address: StoreAddress, create: bool) -> Any:
    lancedb = base.require_store("lancedb")
    if not create and not Path(address.location).is_dir():
        raise base.folder_missing(address, "lancedb.connect(...)", "lancedb:./lancedb?table=NAME")
    return lancedb.connect(address.location)


def _table_names(db: Any) -> list[str]:
    listed = db.list_tables() if hasattr(db, "list_tables") else db.table_names()
    names = getattr(listed, "tables", listed)
    return sorted(str(n) for n in names)


class LanceStore:
    """A LanceDB table opened for reading."""

    def __init__(self, address: StoreAddress) -> None:
        self.address = address
        db = _connect(address, create=False)
        names = _table_names(db)
        if address.collection not in names:
            raise base.no_collection(address, names, "table")
        self._table = db.open_table(address.collection)
        schema: pa.Schema = self._table.schema
        columns = schema.names
        vectors = _vector_columns(schema)
        texts = [c for c in TEXT_COLUMNS if c in columns]
        self._vector = base.pick_column(address, columns, "vector", vectors)
        self._text = base.pick_column(address, columns, "text", texts[:1])
        self._id = address.options.get("id", "id" if "id" in schema.names else None)

    def read(self) -> StoredChunks:
        table: pa.Table = self._table.to_arrow()
        n = table.num_rows
        ids = (
            [str(v) for v in table.column(self._id).to_pylist()]
            if self._id
            else [str(i) for i in range(n)]
        )
        texts = table.column(self._text).to_pylist()
        skip = {self._vector, self._text}
        meta_rows: list[dict[str, Any]] = [{} for _ in range(n)]
        for name in table.column_names:
            if name in skip:
                continue
            values = table.column(name).to_pylist()
            for row, value in zip(meta_rows, values, strict=True):
                if name == "metadata" and isinstance(value, dict):
                    row.update(value)
                elif name == "metadata" and isinstance(value, str):
                    row.update(_json_object(value))
                elif not isinstance(value, (list, dict, bytes)):
                    row[name] = value
        metadata = [base.llama_index_fields(None, row) for row in meta_rows]
        vectors = table.column(self._vector).combine_chunks()
        dim = vectors.type.list_size
        flat = np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
        rows = flat.reshape(n, dim) if n else base.float_rows(None, dim)
        return StoredChunks(ids, texts, metadata, rows)

    def search(self, queries: FloatArray, k: int) -> tuple[list[list[str]], list[list[float]]]:
        ids: list[list[str]] = []
        scores: list[list[float]] = []
        id_column = self._id or ROW_ID
        for query in np.asarray(queries, dtype=np.float32):
            if k == 0:
                ids.append([])
                scores.append([])
                continue
            search = self._table.search(query, vector_column_name=self._vector).limit(k)
            search = search.select([self._id]) if self._id else search.select([]).with_row_id(True)
            found: pa.Table = search.to_arrow()
            ids.append([str(v) for v in found.column(id_column).to_pylist()])
            scores.append([-float(d) for d in found.column("_distance").to_pylist()])
        return ids, scores

    def describe(self) -> dict[str, Any]:
        indices = [str(getattr(i, "index_type", i)) for i in self._table.list_indices()]
        return {"index": ", ".join(indices) or "none (exact search)", "metric": "l2"}

    def close(self) -> None:
        self._table = None


def _vector_columns(schema: pa.Schema) -> list[str]:
    return [f.name for f in schema if pa.types.is_fixed_size_list(f.type)]


def _json_object(value: str) -> dict[str, Any]:
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


class LanceWriter:
    """A new LanceDB table for ``chunkmark export``: ``id``, ``text``, ``vector`` and
    chunkmark's offsets as columns (``chunkmark_doc_id``, ``chunkmark_start``,
    ``chunkmark_end``)."""

    def __init__(self, address: StoreAddress, dim: int) -> None:
        self.address = address
        self._db = _connect(address, create=True)
        if address.collection in _table_names(self._db):
            raise base.already_exists(address, "table")
        self._dim = dim
        self._table: Any = None

    def add(self, chunks: StoredChunks) -> None:
        metadata = chunks.metadata
        flat = pa.array(np.asarray(chunks.vectors, dtype=np.float32).ravel(), pa.float32())
        columns: dict[str, Any] = {
            "id": pa.array(chunks.ids, pa.string()),
            "text": pa.array(chunks.texts, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(flat, self._dim),
        }
        for key in sorted({k for m in metadata for k in m}):
            columns[key] = pa.array([m.get(key) for m in metadata])
        table = pa.table(columns)
        if self._table is None:
            self._table = self._db.create_table(self.address.collection, data=table, mode="create")
        else:
            self._table.add(table)

    def close(self) -> None:
        self._table = None


base.STORES.add(
    base.StoreKind(
        name="lancedb",
        title="LanceDB",
        schemes=("lancedb",),
        options=frozenset({"vector", "text", "id"}),
        forms=(("lancedb:FOLDER?table=NAME", ""),),
        client=("lancedb", "lancedb", "audit-lancedb"),
        opens=(LanceStore, LanceWriter),
        servers=False,
    )
)
