"""What a question set looks like before anyone trusts a benchmark built on it, alone or beside a
reference set (human questions about the same documents, say).

:func:`inspect_dataset` measures: questions per document, excerpts per question, excerpt
lengths (characters, and ``cl100k_base`` tokens), where excerpts start in their documents, how
much of each document some excerpt covers, how many of a question's words its excerpts hold, the
share of questions a plain keyword search already answers, and the nearest question pairs. Given
a ``reference`` set, it measures that set the same way (without the nearest pairs), so that the
two can be read side by side.

Keyword baseline: BM25 (the ``bm25s`` library, Lucene variant, k1=1.5, b=0.75; words of two or
more ``\\w`` characters, lower-cased, bm25s's 33 English stop words removed, no stemming) over
the chunks a chunker (``fixed_tokens(size=200, overlap=0)`` by default) cuts. A question counts
as answered when its top chunk (ties broken by chunk order) scores above zero, belongs to its
document and overlaps one of its excerpts. In the ``corpus`` scope one index holds every
chunk of every document; in the ``document`` scope each document's chunks are indexed on their
own (their own IDF, as the ``in_document`` ranker does) and its questions search only them.
The default scope is ``document`` when every question (of the reference set, when there is
one) is marked ``metadata.scope == "document"``, as the suite's sets are, else ``corpus``; both
sets are measured in the same scope. A set that keyword search solves says little about
embeddings.

Excerpt position: an excerpt's start offset over its document's length (0 is the first
character; a value near 1 is the end). Lexical overlap: per question, the share of its distinct
words (tokenised as for BM25 above) that occur among the words of its excerpts; a question with
no such words is left out.

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
     "excerpt_tokens": DIST,                            # cl100k_base tokens, over all excerpts
     "excerpt_position": DIST,                          # start / document length, in [0, 1)
     "lexical_overlap": DIST,                           # over questions with a word, in [0, 1]
     "bm25": {"chunker": canonical spec, "scope": "corpus" | "document", "chunks",
              "questions", "answered", "share"},
     "embedder": str | null,                            # null with --no-embed
     "nearest_pairs": [{"first", "second", "cosine", "first_doc", "second_doc",
                        "first_text", "second_text"}] | null,
     "reference": {the same keys but "reference", "embedder" null, "nearest_pairs" null}
                  | null}                               # null without a reference set

where DIST is ``{"count", "min", "q1", "median", "q3", "max"}`` (all 0 when empty).
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from chunkmark.chunkers import CHUNKERS, Chunk, ChunkerContext, chunk_document
from chunkmark.datasets import Dataset
from chunkmark.embedders.base import Embedder
from chunkmark.errors import MissingDependencyError
from chunkmark.retrieval.bm25 import tokenize
from chunkmark.spans import as_array, total_length, union
from chunkmark.tokenizers import count_tokens

SCHEMA = "chunkmark.synth.inspect/1"
DEFAULT_CHUNKER = "fixed_tokens(size=200, overlap=0)"
DEFAULT_EMBEDDER = 'sentence_transformers(model="all-MiniLM-L6-v2")'
DEFAULT_PAIRS = 10
ENCODING = "cl100k_base"
DOCUMENT_SCOPE = "document"  # metadata.scope of a question asked of its own document

Scope = Literal["corpus", "document"]
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
    scope: Scope = "corpus"

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
    when no embedder was given; ``reference`` is the reference set measured the same way (None
    without one)."""

    dataset: str
    fingerprint: str
    documents: tuple[DocumentStats, ...]
    questions: int
    excerpts_per_question: dict[int, int]
    excerpt_length: Distribution
    excerpt_tokens: Distribution
    excerpt_position: Distribution
    lexical_overlap: Distribution
    keyword: KeywordBaseline
    embedder: str | None
    nearest_pairs: tuple[QuestionPair, ...] | None
    reference: Inspection | None = None

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
            "excerpt_tokens": asdict(self.excerpt_tokens),
            "excerpt_position": asdict(self.excerpt_position),
            "lexical_overlap": asdict(self.lexical_overlap),
            "bm25": {**asdict(self.keyword), "share": self.keyword.share},
            "embedder": self.embedder,
            "nearest_pairs": None
            if self.nearest_pairs is None
            else [asdict(p) for p in self.nearest_pairs],
            "reference": None if self.reference is None else self.reference.to_dict(),
        }


def inspect_dataset(
    dataset: Dataset,
    *,
    chunker: str = DEFAULT_CHUNKER,
    embedder: Embedder | None = None,
    pairs: int = DEFAULT_PAIRS,
    context: ChunkerContext | None = None,
    reference: Dataset | None = None,
    scope: Scope | None = None,
) -> Inspection:
    """Measure ``dataset`` (and ``reference`` the same way, when given); the nearest question
    pairs need ``embedder`` (skipped without one; never computed for the reference).

    ``scope`` is the keyword baseline's (None: :func:`default_scope` of the reference, else of
    ``dataset``). ``context`` is handed to chunkers that need one (semantic chunkers embed with
    its embedder). Raises :class:`MissingDependencyError` when ``bm25s`` is not installed.
    """
    chosen: Scope = scope or default_scope(reference if reference is not None else dataset)
    chunker_fn, spec = CHUNKERS.build(chunker, context=context or ChunkerContext())
    other = None
    if reference is not None:
        other = _measure(reference, chunker_fn, str(spec), chosen, None, pairs)
    return _measure(dataset, chunker_fn, str(spec), chosen, embedder, pairs, other)


def _measure(
    dataset: Dataset,
    chunker_fn: Any,
    spec: str,
    scope: Scope,
    embedder: Embedder | None,
    pairs: int,
    reference: Inspection | None = None,
) -> Inspection:
    chunks = [c for d in dataset.documents for c in chunk_document(chunker_fn, d.id, d.text)]
    answered = (
        keyword_answers_in_documents(dataset, chunks)
        if scope == "document"
        else keyword_answers(dataset, chunks)
    )
    excerpts = [
        dataset.by_id[q.doc_id].text[s.start : s.end] for q in dataset.questions for s in q.excerpts
    ]
    nearest = None if embedder is None else nearest_pairs(dataset, embedder, pairs)
    return Inspection(
        dataset=dataset.name,
        fingerprint=dataset.fingerprint,
        documents=document_stats(dataset),
        questions=len(dataset.questions),
        excerpts_per_question=dict(Counter(len(q.excerpts) for q in dataset.questions)),
        excerpt_length=Distribution.of([len(s) for q in dataset.questions for s in q.excerpts]),
        excerpt_tokens=Distribution.of(count_tokens(excerpts, ENCODING)),
        excerpt_position=Distribution.of(excerpt_positions(dataset)),
        lexical_overlap=Distribution.of([v for v in lexical_overlaps(dataset) if v is not None]),
        keyword=KeywordBaseline(spec, len(chunks), len(dataset.questions), sum(answered), scope),
        embedder=None if embedder is None else embedder.name,
        nearest_pairs=nearest,
        reference=reference,
    )


def default_scope(dataset: Dataset) -> Scope:
    """``document`` when every question of ``dataset`` is marked ``metadata.scope ==
    "document"`` (asked of its own document), else ``corpus``."""
    questions = dataset.questions
    if questions and all(q.metadata.get("scope") == DOCUMENT_SCOPE for q in questions):
        return "document"
    return "corpus"


def excerpt_positions(dataset: Dataset) -> list[float]:
    """Per excerpt (question order, then excerpt order): its start over its document's
    length."""
    by_id = dataset.by_id
    return [
        s.start / len(by_id[q.doc_id].text)
        for q in dataset.questions
        for s in q.excerpts
        if by_id[q.doc_id].text
    ]


def lexical_overlaps(dataset: Dataset) -> list[float | None]:
    """Per question: the share of its distinct words (BM25's tokenisation) found among its
    excerpts' words; None for a question with no words."""
    _import_bm25s()  # the one clear line when bm25s is missing
    if not dataset.questions:
        return []
    by_id = dataset.by_id
    excerpts = [
        " ".join(by_id[q.doc_id].text[s.start : s.end] for s in q.excerpts)
        for q in dataset.questions
    ]
    asked = _words([q.text for q in dataset.questions])
    found = _words(excerpts)
    out: list[float | None] = []
    for words, answer in zip(asked, found, strict=True):
        distinct = set(words)
        out.append(len(distinct & set(answer)) / len(distinct) if distinct else None)
    return out


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
    retriever.index(_words(texts), show_progress=False)
    starts = np.array([c.start for c in chunks], dtype=np.int64)
    ends = np.array([c.end for c in chunks], dtype=np.int64)
    docs = [c.doc_id for c in chunks]
    queries = _words([q.text for q in dataset.questions])
    out = []
    for q, tokens in zip(dataset.questions, queries, strict=True):
        if not tokens:  # no word to search for: nothing is found
            out.append(False)
            continue
        scores = np.asarray(retriever.get_scores(tokens))
        top = int(np.argmax(scores))  # the first of equal scores: chunk order breaks ties
        hit = scores[top] > 0 and docs[top] == q.doc_id
        out.append(
            bool(hit and any(starts[top] < s.end and s.start < ends[top] for s in q.excerpts))
        )
    return out


def keyword_answers_in_documents(dataset: Dataset, chunks: Sequence[Chunk]) -> list[bool]:
    """As :func:`keyword_answers`, with each document's chunks indexed on their own and its
    questions searching only them."""
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    positions: dict[str, list[int]] = {}
    for i, q in enumerate(dataset.questions):
        positions.setdefault(q.doc_id, []).append(i)
    out = [False] * len(dataset.questions)
    for doc_id, members in positions.items():
        own = Dataset(
            dataset.name,
            (dataset.by_id[doc_id],),
            tuple(dataset.questions[i] for i in members),
        )
        for i, hit in zip(members, keyword_answers(own, by_doc.get(doc_id, [])), strict=True):
            out[i] = hit
    return out


def _words(texts: list[str]) -> list[list[str]]:
    """bm25s's tokenisation without English stop words."""
    return tokenize(texts, stopwords="en")


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
