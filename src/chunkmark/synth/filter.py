"""Filtering a question set the way Chroma's method does, keeping every score.

The method (Smith & Troynikov, 2024; ``SyntheticEvaluation.filter_poor_excerpts`` and
``filter_duplicates`` in the reference implementation) runs these steps, in this order:

1. ``excerpt``: drop a question when ANY of its excerpts has a cosine similarity with the
   question below ``excerpt_threshold`` (0.36): the question does not point at its answer.
2. ``exact_duplicate``: per document, drop a question whose text (stripped) equals an earlier
   surviving question's; the first one is kept.
3. ``near_duplicate``: per document, in file order, keep a question and drop every later one
   whose cosine with a kept question is above ``duplicate_threshold`` (0.78).

Two optional steps, off by default so that the default is the method's own filter, run after
step 2 and before step 3 (so that a question they drop never causes a near duplicate of it to
be dropped too): ``short`` (fewer than ``min_question_tokens`` cl100k tokens) and ``copied``
(the question repeats a run of ``copied_words`` consecutive words of one of its excerpts; words
are ``\\w+`` runs compared case-insensitively, so punctuation between them is ignored).

Embedding kinds: questions are embedded with ``kind="query"``. The reference embeds a question
and its excerpts with one embedding function and no query/document distinction, so excerpts are
embedded with ``kind="query"`` too unless ``excerpt_kind="document"`` is asked for. For symmetric
models (all-MiniLM-L6-v2, OpenAI's models) both kinds give the same vectors. The near-duplicate
step compares question vectors (``kind="query"``). Embedders return L2-normalised rows, so a
cosine is a dot product.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from chunkmark.datasets import Dataset, Question, load_dataset, write_chroma, write_jsonl
from chunkmark.datasets.demo import DEMO_NAME
from chunkmark.datasets.validate import (
    CHROMA_QUESTIONS,
    JSONL_QUESTIONS,
    Layout,
    detect_layout,
    raise_first,
)
from chunkmark.embedders.base import Embedder, FloatArray, Kind
from chunkmark.errors import ConfigError
from chunkmark.files import write_bytes_atomic

STEPS = ("excerpt", "exact_duplicate", "short", "copied", "near_duplicate")
Step = Literal["excerpt", "exact_duplicate", "short", "copied", "near_duplicate"]
MANIFEST = "manifest.json"
MANIFEST_SCHEMA = "chunkmark.synth.filter/1"
_OUTPUT_FILES = (CHROMA_QUESTIONS, JSONL_QUESTIONS, "documents.jsonl", MANIFEST)
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class FilterSettings:
    """What the filter compares against; the defaults are the method's own filter."""

    excerpt_threshold: float = 0.36
    duplicate_threshold: float = 0.78
    excerpt_kind: Kind = "query"
    min_question_tokens: int | None = None
    drop_copied: bool = False
    copied_words: int = 8
    encoding: str = "cl100k_base"

    def __post_init__(self) -> None:
        for name in ("excerpt_threshold", "duplicate_threshold"):
            value = getattr(self, name)
            if not -1.0 <= value <= 1.0:
                raise ConfigError(
                    f"{name} is {value}, but a cosine similarity lies in [-1, 1].",
                    "Pick a threshold between -1 and 1 (the method uses 0.36 and 0.78).",
                )
        if self.excerpt_kind not in ("query", "document"):
            raise ConfigError(
                f"excerpt_kind is {self.excerpt_kind!r}.", "Use 'query' or 'document'."
            )
        if self.min_question_tokens is not None and self.min_question_tokens < 1:
            raise ConfigError(
                f"min_question_tokens is {self.min_question_tokens}.",
                "Give a positive number of tokens, or leave it unset to keep short questions.",
            )
        if self.copied_words < 1:
            raise ConfigError(
                f"copied_words is {self.copied_words}.", "Give a positive number of words."
            )

    def steps(self) -> tuple[Step, ...]:
        """The steps these settings run, in the order they run."""
        steps: list[Step] = ["excerpt", "exact_duplicate"]
        if self.min_question_tokens is not None:
            steps.append("short")
        if self.drop_copied:
            steps.append("copied")
        steps.append("near_duplicate")
        return tuple(steps)


@dataclass(frozen=True)
class QuestionScores:
    """Everything the filter measured about one question, and which step dropped it.

    ``duplicate_similarity`` is the highest cosine between the question and a question kept
    before it in the same document (the value the near-duplicate step compared with its
    threshold), ``nearest_kept`` that question's id; both are None when the question did not
    reach that step or no question was kept before it. ``tokens`` is None unless the ``short``
    step ran. ``words_copied`` is the longest run of words the question shares with one of its
    excerpts.
    """

    id: str
    doc_id: str
    text: str
    excerpt_similarities: tuple[float, ...]
    words_copied: int
    tokens: int | None
    exact_duplicate_of: str | None
    duplicate_similarity: float | None
    nearest_kept: str | None
    dropped_by: Step | None

    @property
    def min_excerpt_similarity(self) -> float:
        return min(self.excerpt_similarities)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["excerpt_similarities"] = list(self.excerpt_similarities)
        out["min_excerpt_similarity"] = self.min_excerpt_similarity
        return out


@dataclass(frozen=True)
class FilterResult:
    """The kept questions (as a dataset with every document), every question's scores in file
    order, and the settings."""

    kept: Dataset
    questions: tuple[QuestionScores, ...]
    settings: FilterSettings

    def removed(self) -> dict[str, dict[str, int]]:
        """Per document id (dataset order): ``questions``, one count per step run, ``kept``."""
        steps = self.settings.steps()
        table = {
            d.id: {"questions": 0, **dict.fromkeys(steps, 0), "kept": 0}
            for d in self.kept.documents
        }
        for q in self.questions:
            row = table[q.doc_id]
            row["questions"] += 1
            row[q.dropped_by or "kept"] += 1
        return table

    def totals(self) -> dict[str, int]:
        """The column sums of :meth:`removed`."""
        total: dict[str, int] = {}
        for row in self.removed().values():
            for key, value in row.items():
                total[key] = total.get(key, 0) + value
        return total


def filter_questions(
    dataset: Dataset, embedder: Embedder, settings: FilterSettings | None = None
) -> FilterResult:
    """Run the filter on ``dataset``; see the module docstring for the steps."""
    settings = settings or FilterSettings()
    questions = dataset.questions
    vectors = embedder.embed([q.text for q in questions], kind="query")
    similarities = excerpt_similarities(dataset, embedder, vectors, settings.excerpt_kind)
    dropped: list[Step | None] = [
        "excerpt" if min(s) < settings.excerpt_threshold else None for s in similarities
    ]
    duplicate_of = exact_duplicates(questions, dropped)
    _drop(dropped, [d is not None for d in duplicate_of], "exact_duplicate")
    tokens = _question_tokens(questions, settings)
    if tokens is not None:
        _drop(dropped, [t < (settings.min_question_tokens or 0) for t in tokens], "short")
    copied = [copied_run(q, dataset) for q in questions]
    if settings.drop_copied:
        _drop(dropped, [c >= settings.copied_words for c in copied], "copied")
    nearest = near_duplicates(questions, vectors, dropped, settings.duplicate_threshold)
    scores = tuple(
        QuestionScores(
            id=q.id,
            doc_id=q.doc_id,
            text=q.text,
            excerpt_similarities=tuple(float(x) for x in similarities[i]),
            words_copied=copied[i],
            tokens=None if tokens is None else tokens[i],
            exact_duplicate_of=duplicate_of[i],
            duplicate_similarity=nearest[i][1],
            nearest_kept=nearest[i][0],
            dropped_by=dropped[i],
        )
        for i, q in enumerate(questions)
    )
    kept = dataset.subset(s.id for s in scores if s.dropped_by is None)
    return FilterResult(kept=kept, questions=scores, settings=settings)


def excerpt_similarities(
    dataset: Dataset, embedder: Embedder, question_vectors: FloatArray, kind: Kind = "query"
) -> list[npt.NDArray[np.float32]]:
    """Per question, the cosine of its vector with each of its excerpts' (in excerpt order)."""
    by_id = dataset.by_id
    texts = [by_id[q.doc_id].text[s.start : s.end] for q in dataset.questions for s in q.excerpts]
    counts = np.array([len(q.excerpts) for q in dataset.questions], dtype=np.intp)
    if not texts:
        return []
    excerpt_vectors = embedder.embed(texts, kind=kind)
    owner = np.repeat(np.arange(len(counts)), counts)
    cosines = np.einsum("ij,ij->i", excerpt_vectors, question_vectors[owner])
    return list(np.split(cosines, np.cumsum(counts)[:-1]))


def exact_duplicates(
    questions: Sequence[Question], dropped: Sequence[str | None]
) -> list[str | None]:
    """Per question, the id of an earlier surviving question of the same document with the same
    stripped text (None for the first of its text, and for questions already dropped)."""
    first: dict[tuple[str, str], str] = {}
    out: list[str | None] = []
    for q, gone in zip(questions, dropped, strict=True):
        if gone is not None:
            out.append(None)
            continue
        key = (q.doc_id, q.text.strip())
        out.append(first.get(key))
        first.setdefault(key, q.id)
    return out


def near_duplicates(
    questions: Sequence[Question],
    vectors: FloatArray,
    dropped: list[Step | None],
    threshold: float,
) -> list[tuple[str | None, float | None]]:
    """The near-duplicate step, per document in file order; updates ``dropped`` in place.

    Returns per question (the nearest question kept before it, that cosine), ``(None, None)``
    for questions that did not reach the step or had no kept question before them.
    """
    out: list[tuple[str | None, float | None]] = [(None, None)] * len(questions)
    groups: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        if dropped[i] is None:
            groups.setdefault(q.doc_id, []).append(i)
    for members in groups.values():
        index = np.array(members, dtype=np.intp)
        sims = vectors[index] @ vectors[index].T
        kept = np.zeros(len(index), dtype=bool)
        for j in range(len(index)):
            if kept[:j].any():
                row = np.where(kept[:j], sims[j, :j], -np.inf)
                best = int(np.argmax(row))
                out[index[j]] = (questions[index[best]].id, float(row[best]))
                if row[best] > threshold:
                    dropped[index[j]] = "near_duplicate"
                    continue
            kept[j] = True
    return out


def copied_run(question: Question, dataset: Dataset) -> int:
    """The longest run of consecutive words the question shares with one of its excerpts
    (``\\w+`` words, lower-cased)."""
    text = dataset.by_id[question.doc_id].text
    words = _WORD.findall(question.text.lower())
    return max(
        (
            _longest_common_run(words, _WORD.findall(text[s.start : s.end].lower()))
            for s in question.excerpts
        ),
        default=0,
    )


def _longest_common_run(a: list[str], b: list[str]) -> int:
    """The length of the longest common contiguous run of ``a`` and ``b`` (row-wise DP)."""
    if not a or not b:
        return 0
    vocab: dict[str, int] = {}
    ids_a = np.array([vocab.setdefault(w, len(vocab)) for w in a], dtype=np.int64)
    ids_b = np.array([vocab.setdefault(w, len(vocab)) for w in b], dtype=np.int64)
    run = np.zeros(len(ids_b) + 1, dtype=np.int64)
    best = 0
    for word in ids_a:
        run[1:] = np.where(ids_b == word, run[:-1] + 1, 0)
        best = max(best, int(run.max()))
    return best


def _question_tokens(questions: Sequence[Question], settings: FilterSettings) -> list[int] | None:
    """cl100k (or ``settings.encoding``) token counts, only when the ``short`` step runs."""
    if settings.min_question_tokens is None:
        return None
    from chunkmark.tokenizers import count_tokens

    return count_tokens([q.text for q in questions], settings.encoding)


def _drop(dropped: list[Step | None], which: Sequence[bool], step: Step) -> None:
    """Mark the questions ``which`` selects as dropped by ``step``, unless already dropped."""
    for i, hit in enumerate(which):
        if hit and dropped[i] is None:
            dropped[i] = step


# --- output --------------------------------------------------------------------------------


def dataset_layout(source: str | Path) -> tuple[Path | None, Layout]:
    """The folder a dataset source reads (None for the packaged demo) and its layout, resolved
    as :func:`~chunkmark.datasets.load_dataset` resolves it (a built-in name wins)."""
    if isinstance(source, str) and source == DEMO_NAME:
        return None, "jsonl"
    if isinstance(source, str) and source == "chroma-general":
        from chunkmark.datasets import download

        return download.dataset_dir(source), "chroma"
    folder = Path(source)
    layout = detect_layout(folder, raise_first(folder))
    return folder, layout or "jsonl"  # detect_layout raises through raise_first when it is None


def check_output(out: Path, source: Path | None) -> None:
    """Check that ``out`` may receive a filtered set, before any work is done.

    ``out`` must not be the input folder ``source``, and must be missing, empty, or a previous
    ``synth filter`` output (a folder whose ``manifest.json`` has this module's schema), whose
    files are replaced.
    """
    if source is not None and out.resolve() == source.resolve():
        raise ConfigError(
            f"--out {out} is the input dataset folder.",
            "Write the filtered set to a new folder, e.g. --out <dataset>-filtered.",
        )
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file.", "Name a folder.")
    if out.is_dir() and any(out.iterdir()) and not _is_filter_output(out):
        raise ConfigError(
            f"--out {out} is not empty and does not hold a previous 'synth filter' output.",
            "Name a new or empty folder.",
        )


def _clear_previous(out: Path) -> None:
    """Remove the files a previous filter wrote to ``out`` (nothing else)."""
    if not out.is_dir():
        return
    for name in _OUTPUT_FILES:
        (out / name).unlink(missing_ok=True)
    corpora = out / "corpora"
    if corpora.is_dir():
        for path in corpora.iterdir():
            if path.is_file() and path.suffix in (".md", ".txt"):
                path.unlink()


def _is_filter_output(folder: Path) -> bool:
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("schema") == MANIFEST_SCHEMA


def write_filtered(
    result: FilterResult,
    out: Path,
    layout: Layout,
    *,
    source: Path | None = None,
    about: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the kept set to ``out`` in ``layout`` plus ``out/manifest.json``; return the
    manifest.

    ``out`` is checked by :func:`check_output` against the input folder ``source``; a previous
    filter output there is replaced. The Chroma layout has no question ids: the kept questions
    get their row numbers ("0", "1", ...) as ids when the folder is read back, and each
    question's entry in the manifest gives its ``output_id`` (None when dropped). ``about``
    (input, embedder...) is merged into the manifest.
    """
    check_output(out, source)
    _clear_previous(out)
    out.mkdir(parents=True, exist_ok=True)
    if layout == "chroma":
        write_chroma(result.kept, out)
        output_ids = {q.id: str(row) for row, q in enumerate(result.kept.questions)}
    else:
        write_jsonl(result.kept, out)
        output_ids = {q.id: q.id for q in result.kept.questions}
    written = load_dataset(out)  # read back: checks the output and gives its fingerprint
    manifest = filter_manifest(result, layout, output_ids, about or {})
    manifest["output"]["fingerprint"] = written.fingerprint
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    write_bytes_atomic(out / MANIFEST, text.encode("utf-8"))
    return manifest


def filter_manifest(
    result: FilterResult, layout: Layout, output_ids: dict[str, str], about: dict[str, Any]
) -> dict[str, Any]:
    """The manifest: schema, settings, steps, counts per document and every question's scores."""
    from chunkmark.version import __version__

    questions = []
    for q in result.questions:
        entry = q.to_dict()
        entry["output_id"] = output_ids.get(q.id) if q.dropped_by is None else None
        questions.append(entry)
    return {
        "schema": MANIFEST_SCHEMA,
        "chunkmark_version": __version__,
        **about,
        "output": {
            "layout": layout,
            "questions": len(result.kept.questions),
            "question_ids": "renumbered by row" if layout == "chroma" else "unchanged",
        },
        "settings": asdict(result.settings),
        "steps": list(result.settings.steps()),
        "removed": result.removed(),
        "totals": result.totals(),
        "questions": questions,
    }
