"""What a question set looks like before anyone trusts a benchmark built on it.

:func:`inspect_dataset` measures: questions per document, excerpts per question, excerpt
lengths (characters: min, quartiles, max), how much of each document some excerpt covers, the
share of questions a plain keyword search already answers, and the nearest question pairs.

Keyword baseline: BM25 (the ``bm25s`` library, Lucene variant, k1=1.5, b=0.75; words of two or
more ``\\w`` characters, lower-cased, English stop words removed, no stemming) over every chunk
of every document, cut by a chunker (``fixed_tokens(size=200, overlap=0)`` by default). A
question counts as answered when its top chunk (ties broken by chunk order) scores above zero,
belongs to its document and overlaps one of its excerpts. A set that keyword search solves says
little about embeddings.

Quartiles interpolate linearly between order statistics (numpy's default percentile).

:meth:`Inspection.to_dict` is the ``--json`` output (schema ``chunkmark.synth.inspect/1``; keys
are only ever added under the same schema name)::

    {"schema": "chunkmark.synth.inspect/1", "dataset": str, "fingerprint": str,
     "documents": [{"id", "characters", "questions", "excerpts", "covered_characters",
                    "coverage"}],                       # dataset order; coverage in [0, 1]
     "totals": {"documents", "questions", "excerpts", "characters", "covered_characters",
                "coverage"},
     "questions_per_document": DIST,                    # over documents
     "excerpts_per_question": {"counts": {"1": int, "2": int, ...}, "mean": float},
     "excerpt_length": DIST,                            # characters, over all excerpts
     "bm25": {"chunker": canonical spec, "chunks", "questions", "answered", "share"},
     "embedder": str | null,                            # null with --no-embed
     "nearest_pairs": [{"first", "second", "cosine", "first_doc", "second_doc",
                        "first_text", "second_text"}] | null}

where DIST is ``{"count", "min", "q1", "median", "q3", "max"}`` (all 0 when empty).
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkmark.chunkers import CHUNKERS, Chunk, ChunkerContext, chunk_document
from chunkmark.datasets import Dataset
from chunkmark.embedders.base import Embedder
from chunkmark.errors import MissingDependencyError
from chunkmark.spans import as_array, total_length, union

SCHEMA = "chunkmark.synth.inspect/1"
DEFAULT_CHUNKER = "fixed_tokens(size=200, overlap=0)"
DEFAULT_EMBEDDER = 'sentence_transformers(model="all-MiniLM-L6-v2")'
DEFAULT_PAIRS = 10
_PAIR_BLOCK = 1024


@dataclass(frozen=True)
class Distribution:
    """Five numbers summarising some values (all 0 when there are none)."""

    count: int
    min: float
    q1: float
    median: float
    q3: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float] | npt.NDArray[Any]) -> Distribution:
        data = np.asarray(values, dtype=np.float64)
        if data.size == 0:
            return cls(0, 0.0, 0.0, 0.0, 0.0, 0.0)
        q1, median, q3 = (float(x) for x in np.percentile(data, [25, 50, 75]))
        return cls(int(data.size), float(data.min()), q1, median, q3, float(data.max()))


@dataclass(frozen=True)
class DocumentStats:
    """One document: its length, its questions and excerpts, and the characters they cover."""

    id: str
    characters: int
    questions: int
    excerpts: int
    covered_characters: int

    @property
    def coverage(self) -> float:
        return self.covered_characters / self.characters if self.characters else 0.0


@dataclass(frozen=True)
class KeywordBaseline:
    """How many questions BM25 answers with its top chunk."""

    chunker: str
    chunks: int
    questions: int
    answered: int

    @property
    def share(self) -> float:
        return self.answered / self.questions if self.questions else 0.0


@dataclass(frozen=True)
class QuestionPair:
    """Two questions and the cosine of their vectors (``first`` comes first in the file)."""

    first: str
    second: str
    cosine: float
    first_doc: str
    second_doc: str
    first_text: str
    second_text: str


@dataclass(frozen=True)
class Inspection:
    """Everything :func:`inspect_dataset` measured. ``embedder`` and ``nearest_pairs`` are None
    when no embedder was given."""

    dataset: str
    fingerprint: str
    documents: tuple[DocumentStats, ...]
    questions: int
    excerpts_per_question: dict[int, int]
    excerpt_length: Distribution
    keyword: KeywordBaseline
    embedder: str | None
    nearest_pairs: tuple[QuestionPair, ...] | None

    @property
    def coverage(self) -> float:
        """The share of all documents' characters covered by some excerpt."""
        chars = sum(d.characters for d in self.documents)
        return sum(d.covered_characters for d in self.documents) / chars if chars else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` form (schema ``SCHEMA``)."""
        counts = self.excerpts_per_question
        asked = sum(counts.values())
        return {
            "schema": SCHEMA,
            "dataset": self.dataset,
            "fingerprint": self.fingerprint,
            "documents": [{**asdict(d), "coverage": d.coverage} for d in self.documents],
            "totals": {
                "documents": len(self.documents),
                "questions": self.questions,
                "excerpts": sum(d.excerpts for d in self.documents),
                "characters": sum(d.characters for d in self.documents),
                "covered_characters": sum(d.covered_characters for d in self.documents),
                "coverage": self.coverage,
            },
            "questions_per_document": asdict(
                Distribution.of([d.questions for d in self.documents])
            ),
            "excerpts_per_question": {
                "counts": {str(k): v for k, v in sorted(self.excerpts_per_question.items())},
                "mean": sum(k * v for k, v in counts.items()) / asked if asked else 0.0,
            },
            "excerpt_length": asdict(self.excerpt_length),
            "bm25": {**asdict(self.keyword), "share": self.keyword.share},
            "embedder": self.embedder,
            "nearest_pairs": None
            if self.nearest_pairs is None
            else [asdict(p) for p in self.nearest_pairs],
        }


def inspect_dataset(
    dataset: Dataset,
    *,
    chunker: str = DEFAULT_CHUNKER,
    embedder: Embedder | None = None,
    pairs: int = DEFAULT_PAIRS,
    context: ChunkerContext | None = None,
) -> Inspection:
    """Measure ``dataset``; the nearest question pairs need ``embedder`` (skipped without one).

    ``context`` is handed to chunkers that need one (semantic chunkers embed with its
    embedder). Raises :class:`MissingDependencyError` when ``bm25s`` is not installed.
    """
    chunker_fn, spec = CHUNKERS.build(chunker, context=context or ChunkerContext())
    chunks = [c for d in dataset.documents for c in chunk_document(chunker_fn, d.id, d.text)]
    answered = keyword_answers(dataset, chunks)
    nearest = None if embedder is None else nearest_pairs(dataset, embedder, pairs)
    return Inspection(
        dataset=dataset.name,
        fingerprint=dataset.fingerprint,
        documents=document_stats(dataset),
        questions=len(dataset.questions),
        excerpts_per_question=dict(Counter(len(q.excerpts) for q in dataset.questions)),
        excerpt_length=Distribution.of([len(s) for q in dataset.questions for s in q.excerpts]),
        keyword=KeywordBaseline(str(spec), len(chunks), len(dataset.questions), sum(answered)),
        embedder=None if embedder is None else embedder.name,
        nearest_pairs=nearest,
    )


def document_stats(dataset: Dataset) -> tuple[DocumentStats, ...]:
    """Per document (dataset order): questions, excerpts and the characters excerpts cover."""
    spans: dict[str, list[tuple[int, int]]] = {d.id: [] for d in dataset.documents}
    questions: Counter[str] = Counter(q.doc_id for q in dataset.questions)
    for q in dataset.questions:
        spans[q.doc_id].extend((s.start, s.end) for s in q.excerpts)
    return tuple(
        DocumentStats(
            id=d.id,
            characters=len(d.text),
            questions=questions[d.id],
            excerpts=len(spans[d.id]),
            covered_characters=total_length(union(as_array(spans[d.id]))),
        )
        for d in dataset.documents
    )


def keyword_answers(dataset: Dataset, chunks: Sequence[Chunk]) -> list[bool]:
    """Per question, whether BM25's top chunk overlaps one of its excerpts (see the module
    docstring for the tokenisation and the tie rule)."""
    bm25s = _import_bm25s()
    if not chunks or not dataset.questions:
        return [False] * len(dataset.questions)
    by_id = dataset.by_id
    texts = [c.text(by_id[c.doc_id].text) for c in chunks]
    retriever = bm25s.BM25()
    retriever.index(_tokenize(bm25s, texts), show_progress=False)
    starts = np.array([c.start for c in chunks], dtype=np.int64)
    ends = np.array([c.end for c in chunks], dtype=np.int64)
    docs = [c.doc_id for c in chunks]
    queries = _tokenize(bm25s, [q.text for q in dataset.questions])
    out = []
    for q, tokens in zip(dataset.questions, queries, strict=True):
        scores = np.asarray(retriever.get_scores(tokens))
        top = int(np.argmax(scores))  # the first of equal scores: chunk order breaks ties
        hit = scores[top] > 0 and docs[top] == q.doc_id
        out.append(
            bool(hit and any(starts[top] < s.end and s.start < ends[top] for s in q.excerpts))
        )
    return out


def _tokenize(bm25s: Any, texts: list[str]) -> list[list[str]]:
    tokens: list[list[str]] = bm25s.tokenize(
        texts, stopwords="en", return_ids=False, show_progress=False
    )
    return tokens


def _import_bm25s() -> Any:
    """The ``bm25s`` module (an optional dependency: the ``synth`` extra)."""
    try:
        return importlib.import_module("bm25s")
    except ImportError:
        raise MissingDependencyError(
            "bm25s", "synth", "The keyword baseline of 'chunkmark synth inspect'"
        ) from None


def nearest_pairs(
    dataset: Dataset, embedder: Embedder, n: int = DEFAULT_PAIRS
) -> tuple[QuestionPair, ...]:
    """The ``n`` question pairs with the highest cosine (any documents), highest first; ties
    go to the pair that comes first in the file."""
    questions = dataset.questions
    if n < 1 or len(questions) < 2:
        return ()
    vectors = embedder.embed([q.text for q in questions], kind="query")
    firsts, seconds, cosines = _top_pairs(vectors, n)
    return tuple(
        QuestionPair(
            first=questions[i].id,
            second=questions[j].id,
            cosine=float(c),
            first_doc=questions[i].doc_id,
            second_doc=questions[j].doc_id,
            first_text=questions[i].text,
            second_text=questions[j].text,
        )
        for i, j, c in zip(firsts, seconds, cosines, strict=True)
    )


def _top_pairs(
    vectors: npt.NDArray[np.float32], n: int
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.float32]]:
    """The ``n`` pairs ``i < j`` with the largest dot products, highest first, ties to the
    earlier pair; computed in row blocks so memory stays at ``block x rows``."""
    rows = len(vectors)
    best_i = np.zeros(0, dtype=np.intp)
    best_j = np.zeros(0, dtype=np.intp)
    best_c = np.zeros(0, dtype=np.float32)
    for start in range(0, rows, _PAIR_BLOCK):
        block = vectors[start : start + _PAIR_BLOCK] @ vectors.T
        upper = np.arange(rows)[None, :] > np.arange(start, start + len(block))[:, None]
        i, j = _top_cells(np.where(upper, block, -np.inf), n)
        best_i = np.concatenate([best_i, i + start])
        best_j = np.concatenate([best_j, j])
        best_c = np.concatenate([best_c, block[i, j]])
        keep = np.lexsort((best_j, best_i, -best_c))[:n]
        best_i, best_j, best_c = best_i[keep], best_j[keep], best_c[keep]
    return best_i, best_j, best_c


def _top_cells(
    block: npt.NDArray[np.float32], n: int
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Row and column of every finite cell at least as large as the block's ``n``-th largest
    (ties at the boundary included, so the caller can break them by position)."""
    flat = block.ravel()
    finite = np.isfinite(flat)
    if np.count_nonzero(finite) > n:
        kth = np.partition(flat, flat.size - n)[flat.size - n]
        finite &= flat >= kth
    cells = np.nonzero(finite)[0]
    rows, cols = np.divmod(cells, block.shape[1])
    return rows.astype(np.intp), cols.astype(np.intp)
