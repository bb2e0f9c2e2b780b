"""The vs_peers job in chunkbench-rag (run by ``benchmarks/vs_peers.py`` with chunkbench-rag's
own virtual environment's Python; it imports nothing from chunkmark).

    python chunkbench_job.py JOB.json OUT.json CACHE_DIR

chunkbench-rag has no chunker (a chunk source is the caller's function) and records relevance
per (document, section), not per character span. So every setting's chunk source returns the
job's chunks for that setting (``job["chunks"]``, made by chunkmark), each chunk its own
section, and each setting gets a golden set whose relevant sections are the chunks that overlap
one of the question's excerpts: chunkbench's recall@k is then hit@k. One ``run_comparison``
per setting (its golden set differs), with the OpenAI embedder (``openai_embedder``) at
``job["url"]`` and chunkbench's disk cache in ``CACHE_DIR``, which makes the second run warm.
It writes every question's hit (``retrieval.recall_at_k``) and the seconds per setting.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(job_path: str, out_path: str, cache_dir: str) -> None:
    began = time.perf_counter()
    from chunkbench.chunking.models import Chunk
    from chunkbench.config.golden_set import GoldenQuestion, GoldenQuestionSet, RelevantSource
    from chunkbench.corpus.models import Document
    from chunkbench.embedding.providers.openai import openai_embedder
    from chunkbench.pipeline import run_comparison
    from openai import OpenAI

    job = json.loads(Path(job_path).read_text())
    documents = [Document(id=d["id"], source=d["id"], content=d["text"]) for d in job["documents"]]
    client = OpenAI(base_url=job["url"], api_key="unused", timeout=3600.0)
    embedder = openai_embedder(model=job["model"], client=client)
    results = {}
    for setting in job["settings"]:
        label = setting["label"]
        spans: dict[str, list[tuple[int, int]]] = {}
        for doc_id, start, end in job["chunks"][label]:
            spans.setdefault(doc_id, []).append((start, end))

        def chunk_source(
            doc: Document, spans: dict[str, list[tuple[int, int]]] = spans
        ) -> list[Chunk]:
            return [
                Chunk(
                    id=f"{doc.id}:{a}-{b}", doc_id=doc.id, section=f"{a}-{b}", text=doc.content[a:b]
                )
                for a, b in spans.get(doc.id, [])
            ]

        golden = GoldenQuestionSet(
            version=1,
            questions=[
                GoldenQuestion(
                    question=q["text"],
                    reference_answer="",
                    relevant_sources=[
                        RelevantSource(doc_id=q["doc_id"], section=f"{a}-{b}")
                        for a, b in spans.get(q["doc_id"], [])
                        if any(a < e and s < b for s, e in q["spans"])
                    ],
                )
                for q in job["questions"]
            ],
        )
        start = time.perf_counter()
        report = run_comparison(
            lambda: documents,
            embedder,
            golden,
            {label: chunk_source},
            k=job["k"],
            cache_dir=cache_dir,
        )
        (score,) = list(report)
        results[label] = {
            "hits": list(score.retrieval.recall_at_k),
            "seconds": time.perf_counter() - start,
        }
    Path(out_path).write_text(
        json.dumps({"results": results, "seconds": time.perf_counter() - began})
    )


if __name__ == "__main__":
    main(*sys.argv[1:4])
