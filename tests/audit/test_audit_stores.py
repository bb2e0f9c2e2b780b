"""``chunkmark audit`` and ``chunkmark export`` on real stores (Chroma, Qdrant local mode,
LanceDB, PostgreSQL + pgvector), with collections filled the way LangChain's and LlamaIndex's
vector stores fill them: a real LangChain splitter and a real LlamaIndex node parser over the
demo documents, MiniLM vectors.

The reference is ``chunkmark run`` with the matching ``langchain(...)``/``llama_index(...)``
chunker: the audit's per-question metrics by exact search over the stored vectors must equal
the run's to 1e-9, with no chunk embedded; a cell exported from the run and audited gives the
run's numbers back; the audit leaves the collection as it found it.
"""

from __future__ import annotations

import csv
import json
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import chunkmark
from chunkmark.audit.collection import AuditResults, audit
from chunkmark.audit.export import export
from chunkmark.audit.stores import StoreError, open_store
from chunkmark.datasets import load_dataset
from chunkmark.datasets.model import Dataset
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache
from chunkmark.errors import ChunkmarkError, ConfigError, DatasetError
from chunkmark.metrics import METRICS
from chunkmark.tokenizers import encoder

pytestmark = pytest.mark.integration

EMBEDDER = "sentence_transformers()"
LANGCHAIN = "langchain(splitter='RecursiveCharacterTextSplitter', chunk_size=400, chunk_overlap=0)"
LLAMA_INDEX = "llama_index(parser='SentenceSplitter', chunk_size=96, chunk_overlap=0)"
STORES = ("chroma", "qdrant", "lancedb", "pgvector")
KEYS = ["retrieval", "excerpts", "unit", "denominator", "k", "question_id"]
VALUES = ["k_used", "retrieved_tokens", "n_touching", *METRICS.names()]


@dataclass(frozen=True)
class Record:
    """One stored chunk: id, text, metadata as the library keeps it, vector."""

    id: str
    text: str
    metadata: dict[str, Any]
    vector: np.ndarray[Any, Any]


@dataclass(frozen=True)
class Reference:
    dataset: Dataset
    run: Path
    cache: Path
    records: dict[str, list[Record]]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    pytest.importorskip("langchain_text_splitters")
    pytest.importorskip("llama_index.core")
    root = tmp_path_factory.mktemp("audit-reference")
    cache = root / "cache"
    chunkmark.evaluate(
        datasets=["demo"],
        chunkers=[LANGCHAIN, LLAMA_INDEX],
        embedders=[EMBEDDER],
        out=root / "run",
        cache_dir=cache,
        report=False,
    )
    dataset = load_dataset("demo")
    inner, _ = EMBEDDERS.build(EMBEDDER)
    embedder = CachedEmbedder(inner, EmbeddingCache(cache))
    records = {
        "langchain": langchain_records(dataset, embedder),
        "llama_index": llama_index_records(dataset, embedder),
    }
    return Reference(dataset, root / "run", cache, records)


def langchain_records(dataset: Dataset, embedder: CachedEmbedder) -> list[Record]:
    """A LangChain ingestion: RecursiveCharacterTextSplitter over loaded documents whose
    metadata holds their path, ``add_start_index=True``, MiniLM vectors."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=0, add_start_index=True)
    docs = splitter.create_documents(
        [d.text for d in dataset.documents],
        metadatas=[{"source": f"docs/{d.id}.md"} for d in dataset.documents],
    )
    vectors = embedder.embed([d.page_content for d in docs], kind="document")
    return [
        Record(str(uuid.uuid5(uuid.NAMESPACE_URL, f"lc-{i}")), d.page_content, dict(d.metadata), v)
        for i, (d, v) in enumerate(zip(docs, vectors, strict=True))
    ]


def llama_index_records(dataset: Dataset, embedder: CachedEmbedder) -> list[Record]:
    """A LlamaIndex ingestion: SentenceSplitter nodes of Documents (id = the file's name),
    stored as LlamaIndex's vector stores store them (``node_to_metadata_dict``)."""
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.vector_stores.utils import node_to_metadata_dict

    parser = SentenceSplitter(chunk_size=96, chunk_overlap=0, tokenizer=encoder("cl100k_base"))
    nodes = parser.get_nodes_from_documents(
        [Document(text=d.text, id_=d.id) for d in dataset.documents]
    )
    vectors = embedder.embed([n.get_content() for n in nodes], kind="document")
    return [
        Record(n.node_id, n.get_content(), node_to_metadata_dict(n, remove_text=True), v)
        for n, v in zip(nodes, vectors, strict=True)
    ]


# --- filling each store as its LangChain / LlamaIndex integration does --------------------------


def fill(
    kind: str, where: Path | str, name: str, records: list[Record], *, vectors: bool = True
) -> str:
    """Write ``records`` into a new collection; the store URI of it."""
    return FILLERS[kind](where, name, records, vectors)


def fill_chroma(where: Path | str, name: str, records: list[Record], vectors: bool) -> str:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(where), settings=Settings(anonymized_telemetry=False)
    )
    collection = client.create_collection(name, embedding_function=None)
    flat = [{k: v for k, v in r.metadata.items() if v is not None} for r in records]
    collection.add(
        ids=[r.id for r in records],
        documents=[r.text for r in records] if vectors else None,
        metadatas=flat,
        embeddings=np.stack([r.vector for r in records]),
    )
    return f"chroma:{where}?collection={name}"


def fill_qdrant(where: Path | str, name: str, records: list[Record], vectors: bool) -> str:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(where))
    try:
        dim = len(records[0].vector)
        client.create_collection(
            name, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
        )
        points = []
        for r in records:
            if "_node_content" in r.metadata:  # LlamaIndex: the node as JSON, text inside it
                node = json.loads(r.metadata["_node_content"])
                node["text"] = r.text
                payload = {**r.metadata, "_node_content": json.dumps(node)}
            else:  # LangChain: page_content and metadata
                payload = {"page_content": r.text, "metadata": r.metadata}
            points.append(models.PointStruct(id=r.id, vector=r.vector.tolist(), payload=payload))
        client.upsert(name, points=points)
    finally:
        client.close()
    return f"qdrant:{where}?collection={name}"


def fill_lancedb(where: Path | str, name: str, records: list[Record], vectors: bool) -> str:
    import lancedb

    db = lancedb.connect(str(where))
    dim = len(records[0].vector)
    flat = pa.array(np.stack([r.vector for r in records]).astype(np.float32).ravel())
    keys = sorted({k for r in records for k, v in r.metadata.items() if v is not None})
    metadata = [{k: r.metadata.get(k) for k in keys} for r in records]
    db.create_table(
        name,
        data=pa.table(
            {
                "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
                "id": [r.id for r in records],
                "text": [r.text for r in records],
                "metadata": metadata,
            }
        ),
    )
    return f"lancedb:{where}?table={name}"


def fill_pgvector(where: Path | str, name: str, records: list[Record], vectors: bool) -> str:
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg.types.json import Jsonb

    dim = len(records[0].vector)
    with psycopg.connect(str(where), autocommit=True) as conn:
        register_vector(conn)
        if "_node_content" in records[0].metadata:  # LlamaIndex's PGVectorStore: data_<name>
            table = f"data_{name}"
            conn.execute(
                f"CREATE TABLE {table} (id bigserial PRIMARY KEY, text varchar NOT NULL, "
                f"metadata_ json, node_id varchar, embedding vector({dim}))"
            )
            for r in records:
                conn.execute(
                    f"INSERT INTO {table} (text, metadata_, node_id, embedding) VALUES (%s, %s, %s, %s)",
                    (r.text, Jsonb(r.metadata), r.id, r.vector),
                )
            conn.execute(f"CREATE INDEX ON {table} USING hnsw (embedding vector_cosine_ops)")
            return f"{where}?table={table}"
        # LangChain's PGVector: every collection in langchain_pg_embedding
        conn.execute(
            "CREATE TABLE IF NOT EXISTS langchain_pg_collection (uuid uuid PRIMARY KEY, "
            "name varchar NOT NULL UNIQUE, cmetadata json)"
        )
        conn.execute(
            "CREATE TABLE IF NOT EXISTS langchain_pg_embedding (id varchar PRIMARY KEY, "
            "collection_id uuid REFERENCES langchain_pg_collection(uuid), embedding vector, "
            "document varchar, cmetadata jsonb)"
        )
        collection = uuid.uuid4()
        conn.execute(
            "INSERT INTO langchain_pg_collection VALUES (%s, %s, NULL)", (collection, name)
        )
        for r in records:
            conn.execute(
                "INSERT INTO langchain_pg_embedding VALUES (%s, %s, %s, %s, %s)",
                (r.id, collection, r.vector, r.text, Jsonb(r.metadata)),
            )
    return f"{where}?table=langchain_pg_embedding&collection={name}"


FILLERS: dict[str, Callable[[Path | str, str, list[Record], bool], str]] = {
    "chroma": fill_chroma,
    "qdrant": fill_qdrant,
    "lancedb": fill_lancedb,
    "pgvector": fill_pgvector,
}


@pytest.fixture
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], Path | str]:
    def where(kind: str) -> Path | str:
        if kind == "pgvector":
            return str(request.getfixturevalue("postgres_url"))
        return tmp_path / kind

    return where


def snapshot(uri: str) -> tuple[Any, ...]:
    store = open_store(uri)
    try:
        got = store.read()
    finally:
        store.close()
    order = np.argsort(got.ids)
    return (
        [got.ids[i] for i in order],
        [got.texts[i] for i in order],
        json.dumps([got.metadata[i] for i in order], sort_keys=True, default=str),
        got.vectors[order].tobytes(),
    )


def run_rows(run: Path, chunker: str) -> Any:
    table = pq.read_table(run / "results.parquet").to_pandas()
    return table[table.chunker == chunker]


def assert_same(audited: AuditResults, run: Any) -> None:
    """The audit's exact-search rows equal the run's, question by question, to 1e-9."""
    table = pq.read_table(audited.results.out / "results.parquet").to_pandas()
    exact = table[table.retrieval.str.startswith("top_k")]
    assert len(exact) == len(run) > 0
    merged = exact.merge(run, on=KEYS, suffixes=("_audit", "_run"))
    assert len(merged) == len(run)
    for column in VALUES:
        a = merged[f"{column}_audit"].to_numpy(dtype=float)
        b = merged[f"{column}_run"].to_numpy(dtype=float)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9, err_msg=column)


def run_facts(run: Path, chunker: str) -> dict[str, Any]:
    manifest = json.loads((run / "manifest.json").read_text())
    return next(c for c in manifest["cells"] if c["chunker"] == str(chunker))


# --- the audit's approximate-search figures, recomputed here ------------------------------------


def native_top_k(
    kind: str, where: Path | str, name: str, queries: np.ndarray, k: int
) -> list[list[str]]:
    """Each question's top ``k`` record ids as the store's own client returns them (the store's
    index and metric as filled; not chunkmark's store reader)."""
    if kind == "chroma":
        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(
            path=str(where), settings=Settings(anonymized_telemetry=False)
        )
        found = client.get_collection(name).query(query_embeddings=queries, n_results=k, include=[])
        return [list(row) for row in found["ids"]]
    if kind == "qdrant":
        from qdrant_client import QdrantClient

        qdrant = QdrantClient(path=str(where))
        try:
            return [
                [str(p.id) for p in qdrant.query_points(name, query=q.tolist(), limit=k).points]
                for q in queries
            ]
        finally:
            qdrant.close()
    if kind == "lancedb":
        import lancedb

        table = lancedb.connect(str(where)).open_table(name)
        return [
            table.search(q).limit(k).select(["id"]).to_arrow().column("id").to_pylist()
            for q in queries
        ]
    import psycopg
    from pgvector.psycopg import register_vector

    with psycopg.connect(str(where)) as conn:
        register_vector(conn)
        if conn.execute("SELECT to_regclass(%s)", (f"data_{name}",)).fetchone()[0]:
            query = f"SELECT node_id FROM data_{name} ORDER BY embedding <=> %s LIMIT %s"
            params: tuple[Any, ...] = ()
        else:
            query = (
                "SELECT e.id FROM langchain_pg_embedding e JOIN langchain_pg_collection c "
                "ON e.collection_id = c.uuid WHERE c.name = %s ORDER BY e.embedding <=> %s LIMIT %s"
            )
            params = (name,)
        return [[r[0] for r in conn.execute(query, (*params, q, k)).fetchall()] for q in queries]


def record_spans(dataset: Dataset, records: list[Record]) -> dict[str, tuple[str, int, int]]:
    """Each record's (document, start, end): the one place its text occurs in the dataset."""
    spans = {}
    for r in records:
        places = [
            (d.id, at, at + len(r.text))
            for d in dataset.documents
            for at in range(len(d.text))
            if d.text.startswith(r.text, at)
        ]
        assert len(places) == 1, (r.id, len(places))  # the test's data: one place per chunk
        spans[r.id] = places[0]
    return spans


def span_recall(excerpts: list[tuple[str, int, int]], chunks: list[tuple[str, int, int]]) -> float:
    """The run's default recall (excerpts by position, characters, sum of excerpt lengths):
    the excerpts' characters inside some chunk over the excerpts' total length."""
    covered = 0
    for doc, start, end in excerpts:
        inside = np.zeros(end - start, dtype=bool)
        for c_doc, c_start, c_end in chunks:
            if c_doc == doc and c_start < end and c_end > start:
                inside[max(c_start, start) - start : min(c_end, end) - start] = True
        covered += int(inside.sum())
    return covered / sum(end - start for _, start, end in excerpts)


def assert_ann_figures(
    done: AuditResults,
    kind: str,
    where: Path | str,
    name: str,
    records: list[Record],
    reference: Reference,
) -> dict[int, int]:
    """``audit.csv`` and the manifest's ``ann`` section against figures computed here: the exact
    top k by numpy over the stored vectors, the store's top k from its own client, their overlap,
    and each side's recall from the chunks' and excerpts' character spans. Returns, per k, how
    many questions the store answered with fewer than k chunks."""
    dataset = reference.dataset
    inner, _ = EMBEDDERS.build(EMBEDDER)
    queries = CachedEmbedder(inner, EmbeddingCache(reference.cache)).embed(
        [q.text for q in dataset.questions], kind="query"
    )
    vectors = np.stack([r.vector for r in records]).astype(np.float64)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)  # searched as stored
    sims = queries.astype(np.float64) @ vectors.T
    order = np.argsort(-sims, axis=1, kind="stable")
    ranked = np.take_along_axis(sims, order, axis=1)
    spans = record_spans(dataset, records)
    ids = [r.id for r in records]
    # A store that answers fewer than k chunks is scored on what it returned, nothing more.
    rows: dict[tuple[str, int], dict[str, float]] = {}
    short = dict.fromkeys((1, 3, 5, 10), 0)
    for k in (1, 3, 5, 10):
        width = min(k, len(records))
        # No score at the cut within float32 rounding of the next: the exact top k is one set.
        if width < len(records):
            assert (ranked[:, width - 1] - ranked[:, width] > 1e-5).all(), k
        store = native_top_k(kind, where, name, queries.astype(np.float32), k)
        for q, question in enumerate(dataset.questions):
            truth = {ids[i] for i in order[q, :width]}
            assert len(set(store[q])) == len(store[q]) <= width  # an IVF list may hold fewer
            short[k] += len(store[q]) < width
            got = set(store[q])
            excerpts = [(question.doc_id, e.start, e.end) for e in question.excerpts]
            exact = span_recall(excerpts, [spans[i] for i in truth])
            found = span_recall(excerpts, [spans[i] for i in got])
            rows[(question.id, k)] = {
                "chunks_recall_vs_exact": len(truth & got) / width,
                "recall_exact": exact,
                "recall_store": found,
                "recall_lost": exact - found,
            }
    with (done.results.out / "audit.csv").open(newline="") as handle:
        written = list(csv.DictReader(handle))
    assert len(written) == len(rows)
    for row in written:
        want = rows[(row["question_id"], int(row["k"]))]
        for field, value in want.items():
            assert float(row[field]) == pytest.approx(value, abs=1e-9), (row, field)
    assert [s["k"] for s in done.section["ann"]] == [1, 3, 5, 10]
    for summary in done.section["ann"]:
        mine = [v for (_, k), v in rows.items() if k == summary["k"]]
        assert summary["questions"] == len(mine) == len(dataset.questions)
        for field in ("chunks_recall_vs_exact", "recall_exact", "recall_store", "recall_lost"):
            assert summary[field] == pytest.approx(np.mean([m[field] for m in mine]), abs=1e-9)
        assert summary["questions_losing"] == sum(m["recall_lost"] > 0 for m in mine)
    return short


# --- the figures -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize("pipeline", ["langchain", "llama_index"])
def test_audit_equals_the_run_of_the_matching_chunker(
    kind: str,
    pipeline: str,
    reference: Reference,
    location: Callable[[str], Path | str],
    tmp_path: Path,
) -> None:
    from chunkmark.chunkers import CHUNKERS

    records = reference.records[pipeline]
    where, name = location(kind), f"demo_{pipeline}_{kind}"
    uri = fill(kind, where, name, records)
    before = snapshot(uri)
    # LangChain chunks name their file under `source`; LlamaIndex nodes their document under
    # `ref_doc_id`; LanceDB's are found by content.
    doc_key = None if kind == "lancedb" else ("source" if pipeline == "langchain" else "ref_doc_id")
    done = audit(
        uri,
        "demo",
        EMBEDDER,
        out=tmp_path / "audit",
        cache_dir=reference.cache,
        doc_key=doc_key,
        report=False,
    )
    chunker = str(CHUNKERS.resolve(LANGCHAIN if pipeline == "langchain" else LLAMA_INDEX))
    assert_same(done, run_rows(reference.run, chunker))
    placed = done.section["placement"]
    assert placed["unplaced"] == placed["fuzzy"] == placed["normalised"] == 0
    expected = "exact" if kind == "lancedb" else "offsets"
    assert placed[expected] == len(records) == run_facts(reference.run, chunker)["n_chunks"]
    assert done.section["chunk_embeddings"] == {"requested": 0, "computed": 0}
    assert_ann_figures(done, kind, where, name, records, reference)
    assert snapshot(uri) == before  # nothing written into the collection


def test_an_approximate_index_loses_what_the_audit_reports(
    reference: Reference, location: Callable[[str], Path | str], tmp_path: Path
) -> None:
    """An IVF index probing one list of 16 misses neighbours: the store's search is really
    approximate here, and every figure the audit reports for it is recomputed independently."""
    import psycopg

    records = reference.records["llama_index"]
    where, name = location("pgvector"), "demo_ivf"
    uri = fill("pgvector", where, name, records)
    with psycopg.connect(str(where), autocommit=True) as conn:
        for (index,) in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef LIKE '%%hnsw%%'",
            (f"data_{name}",),
        ).fetchall():
            conn.execute(f"DROP INDEX {index}")
        conn.execute(
            f"CREATE INDEX ON data_{name} USING ivfflat (embedding vector_cosine_ops) "
            "WITH (lists = 16)"
        )
    done = audit(
        uri,
        "demo",
        EMBEDDER,
        out=tmp_path / "audit",
        cache_dir=reference.cache,
        doc_key="ref_doc_id",
        report=False,
    )
    assert "ivfflat" in str(done.section["search"]["index"])
    ann = {s["k"]: s for s in done.section["ann"]}
    assert ann[10]["chunks_recall_vs_exact"] < 0.95 and ann[10]["questions_losing"] > 0
    short = assert_ann_figures(done, "pgvector", where, name, records, reference)
    assert short[10] > 0  # some probed list held fewer than 10 chunks: only what it returned counts


@pytest.mark.parametrize("kind", STORES)
def test_an_exported_cell_audits_to_the_runs_numbers(
    kind: str, reference: Reference, location: Callable[[str], Path | str], tmp_path: Path
) -> None:
    from chunkmark.chunkers import CHUNKERS

    chunker = str(CHUNKERS.resolve(LLAMA_INDEX))
    where = location(kind)
    name = f"exported-{kind}"
    uri = {
        "chroma": f"chroma:{where}?collection={name}",
        "qdrant": f"qdrant:{where}?collection={name}",
        "lancedb": f"lancedb:{where}?table={name}",
        "pgvector": f"{where}?table={name.replace('-', '_')}",
    }[kind]
    done = export(reference.run, chunker, uri, reference.cache)
    assert done.chunks == run_facts(reference.run, chunker)["n_chunks"]
    with pytest.raises(StoreError, match="already exists"):
        export(reference.run, chunker, uri, reference.cache)
    audited = audit(
        uri, "demo", EMBEDDER, out=tmp_path / "audit", cache_dir=reference.cache, report=False
    )
    assert_same(audited, run_rows(reference.run, chunker))
    assert audited.section["placement"]["offsets"] == done.chunks


# --- bad input: one line naming the collection and the fix ---------------------------------------


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and "Fix:" in text, text
    return text


def test_a_missing_collection_is_named_with_the_ones_there(
    reference: Reference, tmp_path: Path
) -> None:
    uri = fill("chroma", tmp_path / "c", "present", reference.records["langchain"][:3])
    with pytest.raises(StoreError) as err:
        audit(uri.replace("present", "absent"), "demo", EMBEDDER, out=tmp_path / "o", report=False)
    line = one_line(err.value)
    assert "'absent'" in line and "present" in line
    assert not (tmp_path / "o").exists()
    for missing in (
        f"qdrant:{tmp_path / 'nope'}?collection=x",
        f"lancedb:{tmp_path / 'c'}?table=absent",
    ):
        with pytest.raises(StoreError) as err:
            audit(missing, "demo", EMBEDDER, out=tmp_path / "o", report=False)
        one_line(err.value)


def test_an_unreachable_server_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for uri in (
        f"chroma+http://127.0.0.1:{port}?collection=docs",
        f"qdrant+http://127.0.0.1:{port}?collection=docs",
        f"postgresql://postgres:secret@127.0.0.1:{port}/postgres?table=docs",
    ):
        with pytest.raises(StoreError) as err:
            audit(uri, "demo", EMBEDDER, out=tmp_path / "o", report=False)
        line = one_line(err.value)
        assert "'docs'" in line and "Cannot reach" in line and "secret" not in line


def test_a_dimension_mismatch_names_the_collection(reference: Reference, tmp_path: Path) -> None:
    uri = fill("chroma", tmp_path / "c", "minilm", reference.records["langchain"])
    with pytest.raises(ConfigError) as err:
        audit(uri, "demo", "fake(dimension=16)", out=tmp_path / "o", doc_key="source", report=False)
    line = one_line(err.value)
    assert "'minilm'" in line and "384" in line and "16" in line


def test_chunks_without_text_are_refused(reference: Reference, tmp_path: Path) -> None:
    uri = fill(
        "chroma", tmp_path / "c", "no-text", reference.records["langchain"][:5], vectors=False
    )
    with pytest.raises(StoreError) as err:
        audit(uri, "demo", EMBEDDER, out=tmp_path / "o", report=False)
    line = one_line(err.value)
    assert "'no-text'" in line and "5 of 5 chunks" in line


def test_documents_missing_from_the_dataset_are_named(reference: Reference, tmp_path: Path) -> None:
    records = [
        Record(r.id, r.text, {**r.metadata, "source": "docs/other-manual.md"}, r.vector)
        for r in reference.records["langchain"][:4]
    ]
    uri = fill("chroma", tmp_path / "c", "elsewhere", records)
    with pytest.raises(DatasetError) as err:
        audit(
            uri,
            "demo",
            EMBEDDER,
            out=tmp_path / "o",
            doc_key="source",
            cache_dir=reference.cache,
            report=False,
        )
    line = one_line(err.value)
    assert "'elsewhere'" in line and "other-manual.md" in line and "--doc-key" in line


def test_the_cli_prints_the_audit_and_one_line_errors(reference: Reference, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from chunkmark.cli.app import _one_line, _register_commands, app

    def invoke(*args: str) -> Any:
        _register_commands()
        return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})

    uri = fill("chroma", tmp_path / "c", "cli-demo", reference.records["langchain"])
    result = invoke(
        "audit",
        uri,
        "-d",
        "demo",
        "-e",
        EMBEDDER,
        "--doc-key",
        "source",
        "--k",
        "1,5",
        "--out",
        str(tmp_path / "o"),
        "--cache-dir",
        str(reference.cache),
        "--no-report",
    )
    assert result.exit_code == 0, result.output
    n = len(reference.records["langchain"])
    assert f"{n} chunks placed by offsets {n}, exactly 0" in " ".join(result.stdout.split())
    assert "Chunk embeddings computed: 0" in result.stdout
    assert "k=5: the store's top 5 holds" in result.stdout
    bad = invoke("audit", "redis://x", "-d", "demo", "-e", EMBEDDER)
    assert isinstance(bad.exception, ChunkmarkError)
    line = _one_line(str(bad.exception))
    assert line.startswith("Cannot read the store address 'redis://x'") and "Fix:" in line


@pytest.fixture(autouse=True)
def _no_stray_output(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)  # a default results folder would land here, not in the repo
    # tests/datasets is importable as a namespace package named `datasets`; LanceDB takes any
    # module of that name for Hugging Face's and fails importing its Dataset from it.
    found = sys.modules.get("datasets")
    if found is not None and not hasattr(found, "Dataset"):
        monkeypatch.delitem(sys.modules, "datasets")
    yield
