"""Stitched corpora: seeded, excerpts carried over exactly, boundaries at segment starts."""

from __future__ import annotations

import json
import random
from itertools import pairwise
from pathlib import Path

import pytest

from chunkmark.datasets import Dataset, Document, Question, find_problems, load_dataset
from chunkmark.datasets.stitch import (
    BOUNDARIES_FILE,
    SEPARATOR,
    Stitched,
    cut_segments,
    read_boundaries,
    stitch,
    write_stitched,
)
from chunkmark.errors import DatasetError
from chunkmark.spans import Span


def source(name: str, word: str, lines: int = 60) -> Dataset:
    """One document of numbered sentences, a blank line every third line, and a question on
    every fifth line (the last one with two excerpts)."""
    parts = []
    for i in range(lines):
        parts.append(f"{word.title()} line {i} says something about {word} number {i * 7}.")
        parts.append("\n\n" if i % 3 == 2 else "\n")
    text = "".join(parts)
    questions = []
    for i in range(0, lines, 5):
        needle = f"line {i} says"
        start = text.index(needle)
        spans = [Span(start, start + len(needle))]
        if i + 1 < lines:
            other = text.index(f"line {i + 1} says")
            spans.append(Span(other, other + 6))
        questions.append(Question(f"{word}-{i}", f"What does line {i} say?", "doc", tuple(spans)))
    return Dataset(name, (Document("doc", text),), tuple(questions))


SOURCES = [source("alpha", "apple"), source("beta", "bridge"), source("gamma", "cloud")]


def build(seed: int = 0, **kwargs: object) -> Stitched:
    settings: dict[str, object] = {"docs_per_file": 4, "files": 5, "segment_chars": (150, 400)}
    settings.update(kwargs)
    return stitch(SOURCES, seed=seed, **settings)  # type: ignore[arg-type]


def test_same_seed_same_corpus_other_seed_another() -> None:
    first, again, other = build(3), build(3), build(4)
    assert first.to_json() == again.to_json()
    assert first.dataset.fingerprint == again.dataset.fingerprint
    assert first.dataset.fingerprint != other.dataset.fingerprint


def test_segments_are_source_text_joined_at_the_boundaries() -> None:
    stitched = build()
    texts = {f"{d.name}/doc": d.documents[0].text for d in SOURCES}
    assert len(stitched.segments) == 5
    for doc in stitched.dataset.documents:
        segments = stitched.segments[doc.id]
        assert len(segments) == 4
        assert segments[0].start == 0 and segments[-1].end == len(doc.text)
        for seg in segments:
            piece = doc.text[seg.start : seg.end]
            assert piece == texts[seg.source][seg.source_start : seg.source_end]
            assert piece == piece.strip() and 0 < len(piece) <= 400
        for left, right in pairwise(segments):
            assert left.source != right.source  # every boundary changes the topic
            assert doc.text[left.end : right.start] == SEPARATOR
        assert stitched.boundaries()[doc.id] == [s.start for s in segments[1:]]


def test_every_carried_excerpt_is_its_source_text() -> None:
    stitched = build()
    by_name = {d.name: d for d in SOURCES}
    assert stitched.dataset.questions  # some questions come along
    for q, origin in zip(stitched.dataset.questions, stitched.question_sources, strict=True):
        name, qid = origin.split("/")
        src = next(x for x in by_name[name].questions if x.id == qid)
        text = stitched.dataset.by_id[q.doc_id].text
        src_text = by_name[name].documents[0].text
        assert q.text == src.text
        assert [text[s.start : s.end] for s in q.excerpts] == [
            src_text[s.start : s.end] for s in src.excerpts
        ]
    assert [q.id for q in stitched.dataset.questions] == [
        str(i) for i in range(len(stitched.dataset.questions))
    ]


@pytest.mark.parametrize("layout", ["chroma", "jsonl"])
def test_written_corpus_validates_and_reads_back(tmp_path: Path, layout: str) -> None:
    stitched = build()
    path = write_stitched(stitched, tmp_path / "out", layout=layout)  # type: ignore[arg-type]
    assert path.name == BOUNDARIES_FILE
    assert find_problems(tmp_path / "out") == []
    loaded = load_dataset(tmp_path / "out")
    assert loaded.fingerprint == stitched.dataset.fingerprint
    assert read_boundaries(tmp_path / "out", loaded) == stitched.boundaries()
    recorded = json.loads(path.read_text(encoding="utf-8"))
    assert recorded["seed"] == 0 and recorded["sources"] == [f"{d.name}/doc" for d in SOURCES]


def test_read_boundaries_names_the_file_and_fix(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"no boundaries file.*chunkmark datasets stitch"):
        read_boundaries(tmp_path)
    stitched = build()
    write_stitched(stitched, tmp_path)
    shorter = Dataset(
        "x", tuple(Document(d.id, d.text[:-1]) for d in stitched.dataset.documents), ()
    )
    with pytest.raises(DatasetError, match="characters, but the boundaries file records"):
        read_boundaries(tmp_path, shorter)
    (tmp_path / BOUNDARIES_FILE).write_text("{}", encoding="utf-8")
    with pytest.raises(DatasetError, match="not a chunkmark-stitched boundaries file"):
        read_boundaries(tmp_path)


def test_cut_segments_prefers_blank_lines() -> None:
    block = "aaaa bbbb.\ncccc dddd.\n\neeee ffff. gggg hhhh.\n\n"  # blank lines at 21 and 46
    text = block * 4
    segments = cut_segments(text, 15, 30, random.Random(0))
    assert [text[s:e] for s, e in segments] == [
        "aaaa bbbb.\ncccc dddd.",
        "eeee ffff. gggg hhhh.",
    ] * 4
    # Without blank or line breaks in reach, a sentence end; without those, a space.
    assert cut_segments("One two. Three four five six.", 5, 12, random.Random(0))[0] == (0, 8)
    assert cut_segments("abc defgh ijklmnop", 3, 6, random.Random(0))[0] == (0, 3)


def test_bad_settings_and_too_few_sources() -> None:
    with pytest.raises(DatasetError, match="at least two segments"):
        build(docs_per_file=1)
    with pytest.raises(DatasetError, match="MIN <= MAX"):
        build(segment_chars=(400, 100))
    with pytest.raises(DatasetError, match="at least two source documents"):
        stitch(SOURCES[:1])
    with pytest.raises(DatasetError, match="no file of two segments"):
        build(segment_chars=(100_000, 200_000))
    with pytest.raises(DatasetError, match="given twice"):
        stitch([SOURCES[0], SOURCES[0]])


def test_sources_running_out_make_fewer_files() -> None:
    stitched = build(files=1000)
    assert 1 < len(stitched.segments) < 1000
    assert all(len(segs) >= 2 for segs in stitched.segments.values())


def test_chroma_general_stitches_into_a_valid_dataset(
    chroma_general_dir: Path, tmp_path: Path
) -> None:
    data = load_dataset(chroma_general_dir)
    stitched = stitch([data], docs_per_file=5, files=4, segment_chars=(500, 2000), seed=1)
    write_stitched(stitched, tmp_path)
    assert find_problems(tmp_path) == []
    assert len({s.source for segs in stitched.segments.values() for s in segs}) == 5
    assert load_dataset(tmp_path).fingerprint == stitched.dataset.fingerprint
