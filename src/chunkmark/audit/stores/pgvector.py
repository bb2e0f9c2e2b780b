"""PostgreSQL with pgvector (``psycopg`` and ``pgvector``, the ``audit-pgvector`` extra).

The table's columns are found by type and name: the ``vector`` column (``vector=`` names
another), the text (``text=``; else ``document``, ``text``, ``content``, ``page_content``), the
JSON metadata (``metadata=``; else ``cmetadata``, ``metadata_``, ``metadata``) and the id
(``id=``; else ``id``, ``node_id``). LangChain's ``langchain_pg_embedding`` table holds every
collection: ``collection=NAME`` reads one. The store's search orders by the operator of the
table's vector index (``vector_cosine_ops``: ``<=>``, ``vector_l2_ops``: ``<->``,
``vector_ip_ops``: ``<#>``), so an HNSW or IVFFlat index answers as deployed; a table without
one is searched exactly, by ``metric=`` (default cosine).

The audit's connection is read-only (``SET TRANSACTION READ ONLY`` on every transaction): it
cannot write into the table.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import numpy as np

from chunkmark.audit.stores import base
from chunkmark.audit.stores.base import FloatArray, StoreAddress, StoredChunks, StoreError

TEXT_COLUMNS = ("document", "text", "content", "page_content")
METADATA_COLUMNS = ("cmetadata", "metadata_", "metadata")
ID_COLUMNS = ("id", "node_id")
OPERATORS = {"vector_cosine_ops": "<=>", "vector_l2_ops": "<->", "vector_ip_ops": "<#>"}
METRICS = {"cosine": "<=>", "l2": "<->", "ip": "<#>"}
LANGCHAIN_COLLECTIONS = "langchain_pg_collection"


OPTIONS = frozenset({"vector", "text", "metadata", "id", "metric", "collection"})


def _parse(uri: str) -> StoreAddress:
    """A ``postgresql://`` URI: its ``table=`` and chunkmark's options taken out, the rest of it
    (libpq's own parameters) kept as the connection string."""
    parts = urlsplit(uri)
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    table = params.pop("table", None)
    if not table:
        raise base.bad_uri(uri, "it names no table: add ?table=NAME")
    ours = {k: params.pop(k) for k in list(params) if k in OPTIONS}
    query = "&".join(f"{k}={v}" for k, v in params.items())
    location = urlunsplit(("postgresql", parts.netloc, parts.path, query, ""))
    return StoreAddress("pgvector", location, table, True, ours)


def _connect(address: StoreAddress, read_only: bool) -> Any:
    psycopg = base.require_store("pgvector")
    register = base.require_store("pgvector", "pgvector.psycopg").register_vector
    fix = (
        "Start the server or fix USER@HOST:PORT/DB in the address (a password goes in $PGPASSWORD)."
    )
    with base.reaching(address, fix, psycopg.OperationalError):
        conn = psycopg.connect(address.location, connect_timeout=10, autocommit=not read_only)
    if read_only:
        conn.read_only = True
    try:
        register(conn)
    except psycopg.ProgrammingError:
        conn.close()
        raise StoreError(
            f"The database of {address.label()} has no pgvector extension.",
            "Run CREATE EXTENSION vector in that database, or address the one holding the table.",
        ) from None
    return conn


def _table(name: str) -> Any:
    sql = base.require_store("pgvector", "psycopg.sql")
    return sql.Identifier(*name.split(".", 1))


class PgvectorStore:
    """A pgvector table (or one LangChain collection of it) opened read-only."""

    def __init__(self, address: StoreAddress) -> None:
        self.address = address
        self._sql = base.require_store("pgvector", "psycopg.sql")
        self._conn = _connect(address, read_only=True)
        try:
            self._setup()
        except BaseException:
            self._conn.close()
            raise

    def _setup(self) -> None:
        address = self.address
        oid = self._conn.execute("SELECT to_regclass(%s)::oid", (address.collection,)).fetchone()
        if oid is None or oid[0] is None:
            raise StoreError(
                f"There is no {address.label()} (tables with a vector column there: "
                f"{', '.join(self._vector_tables()) or 'none'}).",
                "Name an existing table with ?table=NAME (schema.table for another schema).",
            )
        self._oid = int(oid[0])
        columns = self._conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod), attnum FROM pg_attribute "
            "WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            (self._oid,),
        ).fetchall()
        types = {name: kind for name, kind, _ in columns}
        vectors = [n for n, kind in types.items() if kind.startswith("vector")]
        texts = [n for n in TEXT_COLUMNS if n in types]
        metas = [n for n in METADATA_COLUMNS if types.get(n) in ("json", "jsonb")]
        ids = [n for n in ID_COLUMNS if n in types]
        names = list(types)
        self._vector = base.pick_column(address, names, "vector", vectors)
        self._text = base.pick_column(address, names, "text", texts[:1])
        wanted = "metadata" in address.options or metas  # else there is none
        self._metadata = base.pick_column(address, names, "metadata", metas[:1]) if wanted else None
        self._id = base.pick_column(address, names, "id", ids[:1])
        self._attnum = {name: num for name, _, num in columns}
        self._where, self._params = self._filter()
        self._operator, self._index = self._search_operator()

    def _vector_tables(self) -> list[str]:
        rows = self._conn.execute(
            "SELECT DISTINCT c.relname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "WHERE format_type(a.atttypid, a.atttypmod) LIKE 'vector%%' AND c.relkind = 'r' "
            "ORDER BY 1"
        ).fetchall()
        return [r[0] for r in rows]

    def _filter(self) -> tuple[Any, tuple[Any, ...]]:
        """The WHERE clause picking LangChain's collection ``collection=`` names (or none)."""
        sql = self._sql
        name = self.address.options.get("collection")
        if name is None:
            return sql.SQL(""), ()
        found = self._conn.execute(
            sql.SQL("SELECT uuid FROM {} WHERE name = %s").format(
                sql.Identifier(LANGCHAIN_COLLECTIONS)
            ),
            (name,),
        ).fetchone()
        if found is None:
            raise StoreError(
                f"LangChain's {LANGCHAIN_COLLECTIONS} has no collection {name!r} for the "
                f"{self.address.label()}.",
                "Name an existing collection with &collection=NAME.",
            )
        return sql.SQL(" WHERE collection_id = %s"), (found[0],)

    def _search_operator(self) -> tuple[str, str]:
        """The distance operator of the vector column's index and the index's kind (no index:
        ``metric=``, default cosine, and exact search)."""
        rows = self._conn.execute(
            "SELECT am.amname, opc.opcname FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam "
            "JOIN pg_opclass opc ON opc.oid = i.indclass[0] "
            "WHERE i.indrelid = %s AND i.indkey[0] = %s",
            (self._oid, self._attnum[str(self._vector)]),
        ).fetchall()
        for method, opclass in rows:
            if opclass in OPERATORS:
                return OPERATORS[opclass], f"{method} ({opclass})"
        metric = self.address.options.get("metric", "cosine")
        if metric not in METRICS:
            raise StoreError(
                f"metric={metric!r} for the {self.address.label()} is not one of "
                f"{', '.join(METRICS)}.",
                "Write &metric=cosine, l2 or ip.",
            )
        return METRICS[metric], "none (exact search)"

    def read(self) -> StoredChunks:
        sql = self._sql
        meta = sql.Identifier(self._metadata) if self._metadata else sql.SQL("NULL")
        query = sql.SQL("SELECT {}::text, {}, {}, {} FROM {}{}").format(
            sql.Identifier(self._id),
            sql.Identifier(self._text),
            meta,
            sql.Identifier(self._vector),
            _table(self.address.collection),
            self._where,
        )
        ids: list[str] = []
        texts: list[str | None] = []
        metadata: list[dict[str, Any]] = []
        rows: list[Any] = []
        for chunk_id, text, stored_meta, vector in self._conn.execute(query, self._params):
            ids.append(chunk_id)
            texts.append(text)
            metadata.append(base.llama_index_fields(None, dict(stored_meta or {})))
            rows.append(vector)
        self._conn.rollback()  # end the read-only transaction
        return StoredChunks(ids, texts, metadata, base.float_rows(rows))

    def search(self, queries: FloatArray, k: int) -> tuple[list[list[str]], list[list[float]]]:
        sql = self._sql
        query = sql.SQL(
            "SELECT {id}::text, {vec} {op} %s FROM {table}{where} ORDER BY {vec} {op} %s LIMIT %s"
        ).format(
            id=sql.Identifier(self._id),
            vec=sql.Identifier(self._vector),
            op=sql.SQL(self._operator),
            table=_table(self.address.collection),
            where=self._where,
        )
        ids: list[list[str]] = []
        scores: list[list[float]] = []
        for vector in np.asarray(queries, dtype=np.float32):
            found = self._conn.execute(query, (vector, *self._params, vector, k)).fetchall()
            ids.append([r[0] for r in found])
            scores.append([-float(r[1]) for r in found])
        self._conn.rollback()
        return ids, scores

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self._index, "operator": self._operator}
        for setting in ("hnsw.ef_search", "ivfflat.probes"):
            try:
                value = self._conn.execute(
                    self._sql.SQL("SHOW {}").format(self._sql.SQL(setting))
                ).fetchone()
            except Exception:  # the setting exists only once pgvector is loaded
                self._conn.rollback()
                continue
            out[setting] = value[0] if value else None
        self._conn.rollback()
        metric = {v: k for k, v in METRICS.items()}[self._operator]
        out["metric"] = metric
        return out

    def close(self) -> None:
        self._conn.close()


class PgvectorWriter:
    """A new pgvector table for ``chunkmark export``: ``id``, ``document``, ``cmetadata``
    (jsonb) and ``embedding vector(dim)`` with an HNSW cosine index."""

    def __init__(self, address: StoreAddress, dim: int) -> None:
        self.address = address
        self._sql = base.require_store("pgvector", "psycopg.sql")
        self._json = base.require_store("pgvector", "psycopg.types.json")
        self._conn = _connect(address, read_only=False)
        exists = self._conn.execute("SELECT to_regclass(%s)", (address.collection,)).fetchone()
        if exists is not None and exists[0] is not None:
            self._conn.close()
            raise base.already_exists(address, "table")
        sql = self._sql
        self._conn.execute(
            sql.SQL(
                "CREATE TABLE {} (id text PRIMARY KEY, document text NOT NULL, "
                "cmetadata jsonb, embedding vector({}) NOT NULL)"
            ).format(_table(address.collection), sql.Literal(dim))
        )

    def add(self, chunks: StoredChunks) -> None:
        sql = self._sql
        query = sql.SQL(
            "INSERT INTO {} (id, document, cmetadata, embedding) VALUES (%s, %s, %s, %s)"
        ).format(_table(self.address.collection))
        rows = [
            (chunk_id, text, self._json.Jsonb(meta), np.asarray(vector, dtype=np.float32))
            for chunk_id, text, meta, vector in zip(
                chunks.ids, chunks.texts, chunks.metadata, chunks.vectors, strict=True
            )
        ]
        with self._conn.cursor() as cursor:
            cursor.executemany(query, rows)

    def close(self) -> None:
        sql = self._sql
        self._conn.execute(
            sql.SQL("CREATE INDEX ON {} USING hnsw (embedding vector_cosine_ops)").format(
                _table(self.address.collection)
            )
        )
        self._conn.close()


base.STORES.add(
    base.StoreKind(
        name="pgvector",
        title="PostgreSQL",
        schemes=("postgresql", "postgres", "pgvector"),
        options=OPTIONS,
        forms=(
            (
                "postgresql://USER@HOST:PORT/DB?table=NAME",
                "pgvector; &collection=NAME for LangChain's langchain_pg_embedding; password in "
                "$PGPASSWORD",
            ),
        ),
        client=("psycopg", "psycopg", "audit-pgvector"),
        opens=(PgvectorStore, PgvectorWriter),
        parse=_parse,
    )
)
