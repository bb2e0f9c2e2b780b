"""documentation: sections, short ones whole, long ones split by the LLM or the fallback."""

from __future__ import annotations

import re
import socket
import warnings
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.chunkers import CHUNKERS, Chunk, ChunkerContext, chunk_document
from chunkmark.chunkers.documentation import (
    DocumentationChunker,
    LLMFallbackWarning,
    section_spans,
)
from chunkmark.errors import SpecError
from chunkmark.llm import FakeLLM
from chunkmark.spans import Span
from llm_chunker_helpers import FakeContext


def build(spec: str, fake: FakeLLM | None = None) -> DocumentationChunker:
    context = ChunkerContext() if fake is None else FakeContext(fake)
    chunker, _ = CHUNKERS.build(spec, context=context)
    assert isinstance(chunker, DocumentationChunker)
    return chunker


def texts(text: str, chunks: list[Any]) -> list[str]:
    return [text[c.start : c.end] for c in chunks]


def paragraph(topic: str, n: int) -> str:
    """A paragraph of about 45 cl100k tokens."""
    return (
        f"The {topic} note {n} explains one step of the {topic} procedure in plain words, "
        f"says why the step matters for the {topic} system, and what to check afterwards "
        "before anyone moves on to the next step of the work."
    )


LONG = "## Deploying\n\n" + "\n\n".join(paragraph("deploy", i) for i in range(1, 9))
DOC = (
    "# Service guide\n\nA short preamble.\n\n"
    "## Short section\n\nOnly a line.\n\n" + LONG + "\n\n### Tiny\n\nSmall.\n"
)


def test_sections_by_hand() -> None:
    text = (
        "# Title\nintro\n"  # 0: preamble (a level-1 heading is no boundary)
        "## A\nbody a\n"
        "#### deep\n"  # level 4: no boundary
        "##not-a-heading\n"
        "    ## indented code\n"
        "```md\n## inside backticks\n```\n"
        "   ### B\n"  # up to three spaces of indentation
        "~~~~\n## inside tildes\n~~~\nstill code\n~~~~\n"
        "## C\n"
        "```\n## unclosed fence\n"
    )
    parts = texts(text, section_spans(text))
    assert parts == [
        "# Title\nintro",
        "## A\nbody a\n#### deep\n##not-a-heading\n    ## indented code\n"
        "```md\n## inside backticks\n```",
        "### B\n~~~~\n## inside tildes\n~~~\nstill code\n~~~~",
        "## C\n```\n## unclosed fence",
    ]


def test_sections_trim_and_drop_empty() -> None:
    text = "\n\n## A\n\n\n##\n## B  \r\n"
    assert texts(text, section_spans(text)) == ["## A", "##", "## B"]
    assert section_spans("") == [] and section_spans(" \n ") == []


def test_short_sections_are_one_chunk_each() -> None:
    chunker = build("documentation(short_section=200, fallback='none', max_length=2000)")
    out = chunker(DOC)
    assert texts(DOC, out) == [
        "# Service guide\n\nA short preamble.",
        "## Short section\n\nOnly a line.",
        LONG,
        "### Tiny\n\nSmall.",
    ]
    stats = chunker.stats()
    assert stats.counters["sections"] == 4 and stats.counters["short_sections"] == 3
    assert stats.counters["whole_sections"] == 1 and stats.counters["capped_chunks"] == 0


def test_without_llm_long_sections_go_to_paragraphs() -> None:
    out = build("documentation(max_length=1000)")(DOC)
    offset = DOC.index(LONG)
    expected, _ = CHUNKERS.build("paragraphs(min_tokens=50, max_tokens=200)")
    pieces = list(expected(LONG))
    assert len(pieces) > 1
    assert [(c.start, c.end) for c in out[2:-1]] == [
        (offset + p.start, offset + p.end) for p in pieces
    ]
    with_context = [c for c in out if isinstance(c, Chunk)]
    assert with_context, "paragraphs adds the section heading as embedding context"
    for chunk in with_context:
        assert chunk.embed_text is not None and chunk.embed_text.startswith("## Deploying")
        assert chunk.embed_text.endswith(DOC[chunk.start : chunk.end])


def test_fallback_none_still_cuts_at_max_length() -> None:
    chunker = build("documentation(max_length=600, fallback='none')")
    out = chunker(DOC)
    long_parts = [c for c in out if DOC.index(LONG) <= c.start < DOC.index(LONG) + len(LONG)]
    assert len(long_parts) > 1
    assert all(c.end - c.start <= 600 for c in out)
    assert long_parts[0].start == DOC.index(LONG)
    assert long_parts[-1].end == DOC.index(LONG) + len(LONG)
    assert chunker.stats().counters["capped_chunks"] == 1


def test_llm_splits_long_sections_at_piece_boundaries() -> None:
    pieces, _ = CHUNKERS.build("recursive(size=50, overlap=0)")
    long_pieces = pieces(LONG)
    n = len(long_pieces)
    assert n > 5
    fake = FakeLLM([f"split_after: 2, 5, {n}"])
    chunker = build("documentation(llm='fake()', max_length=2000)", fake)
    out = chunker(DOC)
    offset = DOC.index(LONG)
    p = [Span(offset + s.start, offset + s.end) for s in long_pieces]
    assert out[2:-1] == [
        Span(p[0].start, p[1].end),
        Span(p[2].start, p[4].end),
        Span(p[5].start, p[-1].end),
    ]
    assert len(fake.prompts) == 1  # short sections never reach the LLM
    assert f"<piece {n}>" in fake.prompts[0][1]
    stats = chunker.stats()
    assert stats.counters["llm_sections"] == 1 and stats.counters["paragraph_sections"] == 0
    assert stats.llm is not None and stats.llm.requests == 1


def test_llm_chunks_are_packed_within_max_length() -> None:
    pieces, _ = CHUNKERS.build("recursive(size=50, overlap=0)")
    long_pieces = pieces(LONG)
    ends = {s.end for s in long_pieces}
    starts = {s.start for s in long_pieces}
    fake = FakeLLM([f"split_after: {len(long_pieces)}"])  # one topic: a single group
    out = build("documentation(llm='fake()', max_length=700)", fake)(LONG)
    assert len(out) > 1
    assert all(c.end - c.start <= 700 for c in out)
    assert all(c.start in starts and c.end in ends for c in out)
    assert (out[0].start, out[-1].end) == (0, len(LONG))


def test_llm_failure_falls_back_to_paragraphs_and_stops_asking() -> None:
    doc = DOC + "\n\n" + LONG.replace("Deploying", "Rolling back").replace("deploy", "rollback")
    fake = FakeLLM(fail_after=0)
    chunker = build("documentation(llm='fake()')", fake)
    with pytest.warns(LLMFallbackWarning, match="scripted to fail") as record:
        out = chunker(doc)
    assert len(record) == 1
    assert fake.stats().requests == 1  # the second long section did not ask again
    assert out == build("documentation()")(doc)
    stats = chunker.stats()
    assert (
        stats.counters["llm_fallback_sections"] == 2 and stats.counters["paragraph_sections"] == 2
    )
    assert stats.counters["llm_sections"] == 0
    assert stats.error is not None and "scripted to fail" in stats.error


def test_llm_failure_with_fallback_none_keeps_the_section_whole() -> None:
    chunker = build(
        "documentation(llm='fake()', fallback='none', max_length=2000)", FakeLLM(fail_after=0)
    )
    with pytest.warns(LLMFallbackWarning, match="kept whole"):
        out = chunker(DOC)
    assert texts(DOC, out)[2] == LONG
    assert chunker.stats().counters["whole_sections"] == 1


def test_unreachable_endpoint_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = (
        f"documentation(llm=\"openai(base_url='http://127.0.0.1:{port}/v1', max_retries=0, "
        'timeout=2.0)")'
    )
    chunker, _ = CHUNKERS.build(spec, context=ChunkerContext())
    with pytest.warns(LLMFallbackWarning, match="Nothing is listening at http://127.0.0.1"):
        out = chunker(DOC)
    assert out == build("documentation()")(DOC)


def test_missing_key_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    chunker, _ = CHUNKERS.build("documentation(llm='openai()')", context=ChunkerContext())
    with pytest.warns(LLMFallbackWarning, match="OPENAI_API_KEY is not set"):
        chunker(DOC)
    assert chunker.stats().counters["llm_fallback_sections"] == 1


def test_invalid_answers_are_not_llm_failures() -> None:
    fake = FakeLLM(["no idea"])
    chunker = build("documentation(llm='fake()', max_length=2000)", fake)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = chunker(DOC)
    assert [type(w.message).__name__ for w in record] == ["LLMAnswerWarning"]
    assert texts(DOC, out)[2] == LONG  # the window was left unsplit
    stats = chunker.stats()
    assert stats.counters["llm_sections"] == 1 and stats.counters["llm_fallback_sections"] == 0
    assert stats.counters["llm_semantic.fallback_windows"] == 1


def test_bad_parameters() -> None:
    with pytest.raises(SpecError, match="short_section"):
        CHUNKERS.build("documentation(max_length=100, short_section=200)")
    with pytest.raises(SpecError, match="fallback"):
        CHUNKERS.build("documentation(fallback='sentences')")
    with pytest.raises(SpecError, match="max_length"):
        CHUNKERS.build("documentation(max_length=0, short_section=0)")
    assert str(CHUNKERS.resolve("documentation")) == (
        "documentation(max_length=1000, short_section=200, llm=None, fallback='paragraphs')"
    )


LINES = st.sampled_from(
    [
        "## Setup",
        "### Details",
        "# Title",
        "```",
        "~~~",
        "",
        "",
        "Some words about the thing.",
        "A longer sentence that keeps going for a while, with commas, and more words after it.",
        "- a list item",
        "| a | b |",
    ]
)


@settings(max_examples=40, deadline=None)
@given(
    lines=st.lists(LINES, max_size=80),
    max_length=st.integers(min_value=40, max_value=400),
    fallback=st.sampled_from(["paragraphs", "none"]),
    use_llm=st.booleans(),
)
def test_chunks_stay_in_their_section_and_within_max_length(
    lines: list[str], max_length: int, fallback: str, use_llm: bool
) -> None:
    text = "\n".join(lines)
    short = max_length // 2
    llm = "llm='fake()', " if use_llm else ""
    spec = (
        f"documentation({llm}max_length={max_length}, short_section={short}, fallback={fallback!r})"
    )

    def respond(system: str, user: str) -> str:
        numbers = [int(n) for n in re.findall(r"<piece (\d+)>", user)]
        return "split_after: " + ", ".join(str(n) for n in numbers[1::2] or numbers[-1:])

    chunker = build(spec, FakeLLM(respond))
    chunks = chunk_document(chunker, "doc", text)
    sections = section_spans(text)
    for chunk in chunks:
        assert chunk.end - chunk.start <= max_length
        assert any(s.start <= chunk.start and chunk.end <= s.end for s in sections)
    assert all(a.start <= b.start for a, b in pairwise(chunks))
