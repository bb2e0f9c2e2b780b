"""llm_semantic: windows of numbered pieces, the LLM's cuts, corrections, fallbacks, caching."""

from __future__ import annotations

import re
import warnings
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.chunkers import CHUNKERS, ChunkerContext, chunk_document
from chunkmark.chunkers.llm_semantic import (
    LLMAnswerWarning,
    LLMSemanticChunker,
    LLMSplitter,
    parse_answer,
)
from chunkmark.errors import LLMError, SpecError
from chunkmark.llm import FakeLLM
from chunkmark.spans import Span
from llm_chunker_helpers import FakeContext, wire_server

# Ten pieces: with chunk_size=15 every paragraph (13 cl100k tokens) is one piece, and with
# window_tokens=30 a window holds three pieces (13 + 13 <= 30, the third crosses the limit).
PARAS = [f"Paragraph {i} talks about subject {i} in a few words." for i in range(1, 11)]
TEXT = "\n\n".join(PARAS)
STARTS = [TEXT.index(p) for p in PARAS]
ENDS = [s + len(p) for s, p in zip(STARTS, PARAS, strict=True)]


def piece_span(first: int, last: int) -> Span:
    """The span from piece ``first`` to piece ``last`` (1-based, inclusive)."""
    return Span(STARTS[first - 1], ENDS[last - 1])


def build(
    fake: FakeLLM, spec: str = "llm_semantic(llm='fake()', chunk_size=15, window_tokens=30)"
) -> LLMSemanticChunker:
    chunker, _ = CHUNKERS.build(spec, context=FakeContext(fake))
    assert isinstance(chunker, LLMSemanticChunker)
    return chunker


def shown(prompt: str) -> list[int]:
    return [int(n) for n in re.findall(r"<piece (\d+)>", prompt)]


def cut_every(k: int) -> Any:
    """A responder that cuts after every k-th piece shown, and after the last one."""

    def respond(system: str, user: str) -> str:
        numbers = shown(user)
        picked = [n for n in numbers if n % k == 0] + [numbers[-1]]
        return "split_after: " + ", ".join(str(n) for n in sorted(set(picked)))

    return respond


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("split_after: 3, 5", [3, 5]),
        ("Split after: [3,5]", [3, 5]),
        ("Here you go.\nsplit_after:\n3, 5", [3, 5]),
        ("split_after: 4\nsplit_after: 3, 6", [3, 6]),  # the last line wins
        ("3, 5", [3, 5]),
        ("`3 and 6`", [3, 6]),
        ("split_after: 3, 3, 5", [3, 5]),
    ],
)
def test_parse_valid_answers(answer: str, expected: list[int]) -> None:
    assert parse_answer(answer, 3, 6) == (expected, "")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("I would split after the third piece.", "no line starting with 'split_after:'"),
        ("split_after: none", "lists no piece number"),
        ("split_after: 2, 5", "2 is not a piece of this window (3 to 6)"),
        ("split_after: 4, 7", "7 is not a piece of this window"),
        ("split_after: 5, 4", "not in increasing order"),
        ("", "no line"),
    ],
)
def test_parse_invalid_answers(answer: str, reason: str) -> None:
    numbers, why = parse_answer(answer, 3, 6)
    assert numbers is None
    assert reason in why


def test_windows_and_cuts_by_hand() -> None:
    fake = FakeLLM(["split_after: 2", "split_after: 5", "split_after: 6, 8"])
    chunker = build(fake)
    spans = chunker(TEXT)
    # Window 1 = pieces 1-3, cut after 2; window 2 starts at piece 3 (3-5), cut after 5;
    # window 3 = 6-8, cuts after 6 and 8; then start 8 >= 10 - 4: pieces 9-10 join the last chunk.
    assert [shown(user) for _, user, _ in fake.prompts] == [[1, 2, 3], [3, 4, 5], [6, 7, 8]]
    assert spans == [
        piece_span(1, 2),
        piece_span(3, 5),
        piece_span(6, 6),
        piece_span(7, 8),
        piece_span(9, 10),
    ]
    assert TEXT[spans[1].start : spans[1].end] == "\n\n".join(PARAS[2:5])
    stats = chunker.stats()
    assert stats.counters["windows"] == 3 and stats.counters["pieces"] == 10
    assert stats.fallbacks == 0 and stats.counters["fallback_windows"] == 0
    assert stats.llm is not None and stats.llm.requests == 3
    assert all(max_tokens == 200 for _, _, max_tokens in fake.prompts)


def test_a_window_reaching_the_end_is_the_last() -> None:
    fake = FakeLLM(["split_after: 3"])
    spans = build(fake, "llm_semantic(llm='fake()', chunk_size=15)")(TEXT)
    assert [shown(user) for _, user, _ in fake.prompts] == [list(range(1, 11))]
    assert spans == [piece_span(1, 3), piece_span(4, 10)]


def test_short_texts_cost_no_call() -> None:
    fake = FakeLLM(["split_after: 1"])
    chunker = build(fake)
    four = "\n\n".join(PARAS[:4])
    assert chunker(four) == [Span(0, len(four))]
    assert fake.prompts == []
    five = "\n\n".join(PARAS[:5])
    assert chunker(five) == [Span(0, len(PARAS[0])), Span(len(PARAS[0]) + 2, len(five))]
    assert len(fake.prompts) == 1
    assert chunker("") == [] and chunker("  \n ") == []


def test_invalid_answer_is_corrected_once() -> None:
    fake = FakeLLM(["After piece two, I think.", "split_after: 2", "split_after: 10"])
    spans = build(fake, "llm_semantic(llm='fake()', chunk_size=15)")(TEXT)
    assert spans == [piece_span(1, 2), piece_span(3, 10)]
    first, second = fake.prompts[0][1], fake.prompts[1][1]
    assert second.startswith(first)
    assert "After piece two, I think." in second
    assert "no line starting with 'split_after:'" in second


def test_two_invalid_answers_leave_the_window_unsplit_and_warn_once() -> None:
    fake = FakeLLM(["split_after: 9", "split_after: 0", "split_after: 5", "split_after: 7"])
    chunker = build(fake)
    with pytest.warns(LLMAnswerWarning, match="pieces 1 to 3") as record:
        spans = chunker(TEXT)
    # Window 1-3 fails twice: no cut, next window 4-6 -> cut after 5; window 6-8 -> cut after 7.
    assert [shown(user) for _, user, _ in fake.prompts] == [
        [1, 2, 3],
        [1, 2, 3],
        [4, 5, 6],
        [6, 7, 8],
    ]
    assert spans == [piece_span(1, 5), piece_span(6, 7), piece_span(8, 10)]
    assert chunker.stats().fallbacks == 1 and chunker.stats().counters["corrections"] == 1
    assert len(record) == 1
    fake.answers = ["nonsense"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second fallback is counted, not warned about again
        chunker(TEXT)
    assert chunker.stats().fallbacks == 3


def test_empty_answer_counts_as_invalid() -> None:
    fake = FakeLLM(["", "split_after: 2, 10"])
    spans = build(fake, "llm_semantic(llm='fake()', chunk_size=15)")(TEXT)
    assert spans == [piece_span(1, 2), piece_span(3, 10)]
    assert "(nothing)" in fake.prompts[1][1] and "it is empty" in fake.prompts[1][1]


def test_llm_errors_are_raised() -> None:
    with pytest.raises(LLMError, match="scripted to fail"):
        build(FakeLLM(fail_after=0))(TEXT)


def test_answers_are_cached_across_runs(tmp_path: Path) -> None:
    spec = (
        "llm_semantic(llm=\"fake(answers=['split_after: 2', 'split_after: 5', "
        "'split_after: 8'])\", chunk_size=15, window_tokens=30)"
    )
    first, _ = CHUNKERS.build(spec, context=ChunkerContext(cache_dir=tmp_path, seed=1))
    spans = first(TEXT)
    llm = first.stats().llm
    assert llm is not None and (llm.calls, llm.requests, llm.cache_hits) == (3, 3, 0)
    rerun, _ = CHUNKERS.build(spec, context=ChunkerContext(cache_dir=tmp_path, seed=1))
    assert rerun(TEXT) == spans
    llm = rerun.stats().llm
    assert llm is not None and (llm.calls, llm.requests, llm.cache_hits) == (3, 0, 3)


def test_built_without_context() -> None:
    chunker, spec = CHUNKERS.build(
        "llm_semantic(llm=\"fake(answers=['split_after: 4'])\", chunk_size=15)"
    )
    assert chunker(TEXT) == [piece_span(1, 4), piece_span(5, 10)]
    assert str(spec).startswith("llm_semantic(llm=")


def test_spec_defaults_and_bad_values() -> None:
    assert str(CHUNKERS.resolve("llm_semantic")) == (
        "llm_semantic(llm=\"openai(model='gpt-4o-mini')\", chunk_size=50, window_tokens=800, "
        "encoding='cl100k_base')"
    )
    with pytest.raises(SpecError, match="chunk_size"):
        CHUNKERS.build("llm_semantic(llm='fake()', chunk_size=0)")
    with pytest.raises(SpecError, match="Unknown llm"):
        CHUNKERS.build("llm_semantic(llm='nope()')")


@settings(max_examples=25, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(["alpha", "beta.", "gamma\n", "delta\n\n", "épsilon", "zeta,", "eta"]),
        max_size=300,
    ),
    k=st.integers(min_value=1, max_value=4),
    size=st.integers(min_value=3, max_value=20),
)
def test_chunks_are_ordered_runs_of_whole_pieces(words: list[str], k: int, size: int) -> None:
    text = " ".join(words)
    fake = FakeLLM(cut_every(k))
    splitter = LLMSplitter(fake, chunk_size=size, window_tokens=40)
    groups = splitter.groups(text)
    pieces = [p for g in groups for p in g]
    assert pieces == [Span(p.start, p.end) for p in splitter._pieces(text)]
    chunks = chunk_document(LLMSemanticChunker(LLMSplitter(fake, size, 40)), "d", text)
    assert [(c.start, c.end) for c in chunks] == [(g[0].start, g[-1].end) for g in groups]
    assert all(a.end <= b.start for a, b in pairwise(chunks))
    for chunk in chunks:
        body = text[chunk.start : chunk.end]
        assert body == body.strip() and body


def test_end_to_end_with_openai_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    respond = cut_every(4)
    with wire_server().serve() as server:
        server.answer = lambda path, payload: respond("", payload["messages"][-1]["content"])
        spec = (
            f"llm_semantic(llm=\"openai(model='local-model', base_url='{server.openai_url}')\", "
            "chunk_size=15, window_tokens=30)"
        )
        context = ChunkerContext(cache_dir=tmp_path, seed=11)
        chunker, _ = CHUNKERS.build(spec, context=context)
        spans = chunker(TEXT)
        # Window 1-3: cut after 3; window 4-6: cuts after 4 and 6; start 6 >= 10 - 4: done.
        assert spans == [piece_span(1, 3), piece_span(4, 4), piece_span(5, 6), piece_span(7, 10)]
        assert len(server.requests) == 2
        assert {r["seed"] for r in server.requests} == {11}
        assert {r["model"] for r in server.requests} == {"local-model"}
        assert server.requests[0]["messages"][0]["role"] == "system"
        rerun, _ = CHUNKERS.build(spec, context=ChunkerContext(cache_dir=tmp_path, seed=11))
        assert rerun(TEXT) == spans
        assert len(server.requests) == 2  # every answer came from the cache
