"""The vs_peers job in chunktuner (run by ``benchmarks/vs_peers.py`` with chunktuner's own
virtual environment's Python; it imports nothing from chunkmark).

    python chunktuner_job.py JOB.json OUT.json CACHE_DIR

For every corpus of the job it first chunks with chunktuner's ``FixedTokenStrategy`` at every
setting and records the chunks (or the error the strategy raised). Then, for every setting, one
``Evaluator.evaluate`` over the corpora listed in ``job["chunktuner_corpora"]`` and their
questions, embedding through LiteLLM (``openai/<model>`` at ``job["url"]``) wrapped in
chunktuner's SQLite embedding cache (``CachedEmbeddingFunction``) in ``CACHE_DIR``: the cache
makes the second run warm. It writes hit@5 (``recall_at_k[5]``) and the seconds of each
evaluation.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def main(job_path: str, out_path: str, cache_dir: str) -> None:
    began = time.perf_counter()
    from chunktuner.cache.embedding_cache import EmbeddingCache
    from chunktuner.cache.wrapped_embeddings import CachedEmbeddingFunction
    from chunktuner.chunking.fixed_tokens import FixedTokenStrategy
    from chunktuner.eval.embeddings import LiteLLMEmbeddingFunction
    from chunktuner.eval.evaluator import Evaluator
    from chunktuner.models import ChunkConfig, Document, EvalDataset, EvalQuery

    job = json.loads(Path(job_path).read_text())
    docs = {
        d["id"]: Document(id=d["id"], content=d["text"], content_type="text")
        for d in job["documents"]
    }
    strategy = FixedTokenStrategy("cl100k_base")
    configs = {
        s["label"]: ChunkConfig(
            name="fixed_tokens", params={"max_tokens": s["size"], "overlap_tokens": s["overlap"]}
        )
        for s in job["settings"]
    }
    chunks: dict[str, dict[str, Any]] = {}
    for label, config in configs.items():
        chunks[label] = {}
        for doc_id, doc in docs.items():
            try:
                made = strategy.chunk(doc, config)
            except Exception as exc:  # recorded: the benchmark says why this corpus is left out
                chunks[label][doc_id] = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            chunks[label][doc_id] = {"spans": [[c.start_offset, c.end_offset] for c in made]}
    chunked = time.perf_counter()

    corpora = list(job["chunktuner_corpora"])
    dataset = EvalDataset(
        name=job["name"],
        source="user_provided",
        queries=[
            EvalQuery(
                id=q["id"],
                question=q["text"],
                document_id=q["doc_id"],
                answer_spans=[(a, b) for a, b in q["spans"]],
            )
            for q in job["questions"]
            if q["doc_id"] in corpora
        ],
    )
    inner = LiteLLMEmbeddingFunction(
        f"openai/{job['model']}", api_base=job["url"], api_key="unused"
    )
    cache = EmbeddingCache(Path(cache_dir) / "chunktuner_cache.sqlite", job["model"])
    evaluator = Evaluator(CachedEmbeddingFunction(inner, cache), top_k=job["k"])
    results = {}
    for label, config in configs.items():
        start = time.perf_counter()
        result = evaluator.evaluate(strategy, config, [docs[c] for c in corpora], dataset)
        results[label] = {
            "hit": result.metrics.recall_at_k[job["k"]],
            "questions": len(dataset.queries),
            "seconds": time.perf_counter() - start,
        }
    cache.close()
    Path(out_path).write_text(
        json.dumps(
            {
                "chunks": chunks,
                "results": results,
                "chunk_check_seconds": chunked - began,
                "seconds": time.perf_counter() - began,
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:4])
