"""One cell over a synthetic corpus of about 1 GB: seconds per phase and the process's peak memory.

The corpus repeats the five corpora of Chroma's general benchmark, every copy perturbed: a
seeded 10% of its ASCII letters and digits are replaced by other letters of the same case or
other digits. That keeps every character offset (so excerpt spans stay valid) and the UTF-8
size, and makes equal chunks rare (the script counts them: 20 of 1,300,681 chunks at 1 GB,
chunks with few letters or digits). 1,000 questions are drawn from the benchmark's questions, each moved to a random copy of
its corpus with its excerpts' offsets unchanged. The corpus is written in Chroma's layout to a
temporary folder (or ``--workdir``), loaded with ``chunkmark.datasets.load_dataset`` and run as
one cell through ``Cell.run`` (the product's own path: chunk, count tokens, embed in slices into
a vector file, exact search, score, query check), without caches:
``fixed_tokens(size=256)`` x ``fake(dimension=64, max_words=32)``, ``top_k`` at k = 1, 5 and
10. (The fake embedder hashes words in Python; reading each chunk's first 32 words, as a model
reads its window, keeps it from dwarfing every other phase.)

It prints the corpus, seconds and peak resident memory per phase (sampled every 0.1 s), the
process's peak RSS (``ru_maxrss``), the number of chunks and of duplicate chunk texts, and the
mean recall and precision at each k (near zero by design: every answer has hundreds of
perturbed copies, and only the question's own copy counts).

    flock /tmp/cpu.lock .venv/bin/python benchmarks/scale.py [--size-mb 1024]
        [--data ../shared/datasets/chroma_general] [--workdir DIR] [--questions 1000]
        [--dimension 64] [--max-words 32] [--seed 0] [--cached-embedder]

``--cached-embedder`` wraps the embedder as ``chunkmark run --no-cache`` does
(``CachedEmbedder(inner, None)``), to measure what that wrapper holds on to.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PERTURB_RATE = 0.10
CHUNKER = "fixed_tokens(size=256)"
RETRIEVAL = ("top_k(k=1)", "top_k(k=5)", "top_k(k=10)")
GB = 1024**3


class MemorySampler:
    """Resident memory of this process, sampled on a thread, with the peak per phase."""

    def __init__(self, every: float = 0.1) -> None:
        self.every = every
        self.peak = 0
        self.peaks: dict[str, int] = {}
        self.phase: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._page = os.sysconf("SC_PAGE_SIZE")

    def rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self._page

    def sample(self) -> None:
        now = self.rss()
        self.peak = max(self.peak, now)
        if self.phase is not None:
            self.peaks[self.phase] = max(self.peaks.get(self.phase, 0), now)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    @contextmanager
    def during(self, phase: str) -> Iterator[None]:
        outer, self.phase = self.phase, phase
        self.sample()
        try:
            yield
        finally:
            self.sample()
            self.phase = outer


def make_timer(sampler: MemorySampler) -> Any:
    """A PhaseTimer that also records the peak memory of each phase."""
    from chunkmark.timing import PhaseTimer

    class TrackedTimer(PhaseTimer):
        @contextmanager
        def __call__(self, phase: str) -> Iterator[None]:
            with sampler.during(phase), super().__call__(phase):
                yield

    return TrackedTimer()


def perturb(text: str, rng: np.random.Generator) -> str:
    """``text`` with a share of its ASCII letters and digits replaced by other letters of the
    same case or other digits (same length in characters and in UTF-8 bytes)."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).copy()
    for first, count in ((ord("a"), 26), (ord("A"), 26), (ord("0"), 10)):
        found = np.flatnonzero((codes >= first) & (codes < first + count))
        chosen = found[rng.random(len(found)) < PERTURB_RATE]
        shift = rng.integers(1, count, size=len(chosen), dtype=np.uint32)
        codes[chosen] = (codes[chosen] - first + shift) % count + first
    return codes.tobytes().decode("utf-32-le")


@dataclass
class Plan:
    """Which copies of which base documents make the corpus, and where each question goes."""

    copies: list[tuple[int, int]]  # (round, base document index), in writing order
    questions: list[tuple[int, int]] = field(default_factory=list)  # (base question, copy)


def plan_corpus(base: Any, size_bytes: int, n_questions: int, seed: int) -> Plan:
    sizes = [len(d.text.encode("utf-8")) for d in base.documents]
    copies: list[tuple[int, int]] = []
    total = 0
    for r in range(max(1, math.ceil(size_bytes / sum(sizes))) + 1):
        for i, size in enumerate(sizes):
            if total >= size_bytes and copies:
                break
            copies.append((r, i))
            total += size
    plan = Plan(copies)
    rng = np.random.default_rng(seed)
    doc_index = {d.id: i for i, d in enumerate(base.documents)}
    copies_of: dict[int, list[int]] = {}
    for c, (_, i) in enumerate(copies):
        copies_of.setdefault(i, []).append(c)
    usable = [
        q for q, question in enumerate(base.questions) if doc_index[question.doc_id] in copies_of
    ]
    for q in rng.choice(usable, size=n_questions, replace=n_questions > len(usable)).tolist():
        options = copies_of[doc_index[base.questions[q].doc_id]]
        plan.questions.append((q, options[int(rng.integers(len(options)))]))
    return plan


def write_corpus(base: Any, plan: Plan, folder: Path, seed: int) -> int:
    """Write the copies and questions in Chroma's layout; the corpus's UTF-8 bytes."""
    corpora = folder / "corpora"
    corpora.mkdir(parents=True, exist_ok=True)
    asked: dict[int, list[int]] = {}
    for n, (_, copy) in enumerate(plan.questions):
        asked.setdefault(copy, []).append(n)
    rows: list[list[str] | None] = [None] * len(plan.questions)
    written = 0
    for copy, (r, i) in enumerate(plan.copies):
        doc = base.documents[i]
        name = f"{doc.id}-{r:05d}"
        text = perturb(doc.text, np.random.default_rng([seed, r, i]))
        data = text.encode("utf-8")
        (corpora / f"{name}.md").write_bytes(data)
        written += len(data)
        for n in asked.get(copy, []):
            question = base.questions[plan.questions[n][0]]
            refs = [
                {"content": text[s.start : s.end], "start_index": s.start, "end_index": s.end}
                for s in question.excerpts
            ]
            rows[n] = [question.text, json.dumps(refs), name]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["question", "references", "corpus_id"])
    writer.writerows(row for row in rows if row is not None)
    (folder / "questions_df.csv").write_text(buffer.getvalue(), encoding="utf-8")
    return written


def duplicate_texts(dataset: Any, chunks: list[Any]) -> int:
    """Chunks whose span text equals an earlier chunk's (by a 128-bit digest)."""
    import hashlib

    docs = dataset.by_id
    digests = {
        hashlib.blake2b(docs[c.doc_id].text[c.start : c.end].encode(), digest_size=16).digest()
        for c in chunks
    }
    return len(chunks) - len(digests)


def run_cell(dataset: Any, embedder_spec: str, cached: bool, timer: Any) -> Any:
    from chunkmark.chunkers import CHUNKERS
    from chunkmark.embedders import EMBEDDERS
    from chunkmark.embedders.cache import CachedEmbedder
    from chunkmark.experiments.cell import Cell, CellEnv
    from chunkmark.retrieval import RETRIEVAL as SETTINGS

    e_spec = EMBEDDERS.resolve(embedder_spec)
    inner, _ = EMBEDDERS.build(e_spec)
    embedder = CachedEmbedder(inner, None) if cached else inner

    def embed_queries() -> Any:
        with timer("embed_queries"):
            return embedder.embed([q.text for q in dataset.questions], kind="query")

    env = CellEnv(embedder=embedder, identity=inner.identity(), embed_queries=embed_queries)
    cell = Cell(
        dataset,
        CHUNKERS.resolve(CHUNKER),
        e_spec,
        tuple(SETTINGS.resolve(s) for s in RETRIEVAL),
    )
    return cell.run(env, timer)


def mean_scores(result: Any) -> dict[str, tuple[float, float]]:
    """Mean recall and precision per retrieval setting (default scoring)."""
    cols = result.columns
    settings = np.asarray(cols["retrieval"])
    out = {}
    for spec in dict.fromkeys(cols["retrieval"]):
        rows = settings == spec
        out[spec] = (
            float(np.asarray(cols["recall"])[rows].mean()),
            float(np.asarray(cols["precision"])[rows].mean()),
        )
    return out


def main(argv: list[str] | None = None) -> None:
    default_data = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=1024.0)
    parser.add_argument("--data", type=Path, default=default_data / "datasets/chroma_general")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--dimension", type=int, default=64)
    parser.add_argument("--max-words", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cached-embedder", action="store_true")
    args = parser.parse_args(argv)

    from chunkmark.datasets import load_dataset

    sampler = MemorySampler()
    sampler.start()
    timer = make_timer(sampler)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="chunkmark-scale-") as tmp:
        folder = (args.workdir or Path(tmp)) / "scale"
        if folder.exists() and any(folder.iterdir()):
            sys.exit(f"{folder} is not empty: pass another --workdir")
        with timer("generate"):
            base = load_dataset(args.data)
            plan = plan_corpus(base, int(args.size_mb * 2**20), args.questions, args.seed)
            written = write_corpus(base, plan, folder, args.seed)
            del base
        with timer("load_dataset"):
            dataset = load_dataset(folder)
        chars = sum(len(d.text) for d in dataset.documents)
        embedder = f"fake(dimension={args.dimension}, max_words={args.max_words})"
        print(f"scale: {CHUNKER} x {embedder}, {', '.join(RETRIEVAL)}")
        print(
            f"corpus: {len(dataset.documents)} documents, {written / 2**20:.1f} MB "
            f"({chars:,} characters), {len(dataset.questions)} questions"
        )
        print(f"embedding dimension: {args.dimension}")
        result = run_cell(dataset, embedder, args.cached_embedder, timer)
        total = time.perf_counter() - started
        sampler.stop()
        print(
            f"chunks: {result.n_chunks:,} ({duplicate_texts(dataset, result.chunks)} duplicate texts)"
        )
    for phase, seconds in timer.seconds.items():
        peak = sampler.peaks.get(phase, 0) / GB
        print(f"phase {phase}: {seconds:.1f} s (peak RSS {peak:.2f} GB)")
    print(f"total: {total:.1f} s")
    for spec, (recall, precision) in mean_scores(result).items():
        print(f"{spec}: recall {recall:.3f}, precision {precision:.4f}")
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GB
    print(f"peak RSS: {max_rss:.2f} GB (ru_maxrss), {sampler.peak / GB:.2f} GB (sampled)")


if __name__ == "__main__":
    main()
