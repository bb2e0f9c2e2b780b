"""propositions: answers read, propositions aligned to their source by the documented rule,
dropped below the threshold, the answer cache, the wire format, and the missing extra."""

from __future__ import annotations

import json
import random
import re
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.chunkers import CHUNKERS, ChunkerContext, chunk_document, chunk_documents
from chunkmark.chunkers.contextual import AnswerFallbackWarning
from chunkmark.chunkers.propositions import (
    SCHEMA,
    PropositionsChunker,
    align,
    parse_propositions,
    rapidfuzz_fuzz,
)
from chunkmark.errors import MissingDependencyError, SpecError
from chunkmark.llm import FakeLLM
from llm_chunker_helpers import FakeContext, wire_server

TEXT = "The cat sat on the mat. Later, the cat sat on the mat again. Dogs bark at night."


def build(
    fake: FakeLLM, spec: str = "propositions(llm='fake()', chunker='recursive(size=200)')"
) -> PropositionsChunker:
    chunker, _ = CHUNKERS.build(spec, context=FakeContext(fake))
    assert isinstance(chunker, PropositionsChunker)
    return chunker


def answer(*props: str) -> str:
    return json.dumps({"propositions": list(props)})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"propositions": ["A is B.", "C  is\\nD."]}', ["A is B.", "C is D."]),
        ('["A is B."]', ["A is B."]),
        ('```json\n{"propositions": ["A."]}\n```', ["A."]),
        ('Here they are: {"propositions": ["A.", " "]} Done.', ["A."]),
        ('{"propositions": []}', []),
        ('{"propositions": ["A.", "B.", "A.", "A. "]}', ["A.", "B."]),  # repeats kept once
    ],
)
def test_parse_valid(text: str, expected: list[str]) -> None:
    assert parse_propositions(text) == (expected, "")


def test_an_answer_cut_off_while_repeating_itself_gives_its_whole_propositions() -> None:
    # what SmolLM2-135M-Instruct answered through llama-server for a 60-token chunk: the third
    # proposition again and again until max_tokens, the JSON never closed
    repeated = '    "The pump must be primed before its first start.",\n'
    cut = (
        '{\n  "propositions": [\n    "The Tidewell pump moves water to the roof tank.",\n'
        + repeated * 20
        + '    "The pump must be pri'
    )
    assert parse_propositions(cut) == (
        [
            "The Tidewell pump moves water to the roof tank.",
            "The pump must be primed before its first start.",
        ],
        "",
    )
    assert parse_propositions('{"propositions": ["A is') == (None, "it is not JSON")
    assert parse_propositions('{"propositions": ["A.", 3, "B') == (None, "it is not JSON")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("A is B.", "not JSON"),
        ('{"facts": ["A."]}', "no 'propositions' key"),
        ('{"propositions": "A."}', "not a list"),
        ('{"propositions": ["A.", 3]}', "not every proposition is a string"),
    ],
)
def test_parse_invalid(text: str, reason: str) -> None:
    found, why = parse_propositions(text)
    assert found is None and reason in why


def test_alignment_rule() -> None:
    fuzz = rapidfuzz_fuzz()
    exact = align("Dogs bark at night.", TEXT, fuzz)
    assert exact.score == 100 and TEXT[exact.start : exact.end] == "Dogs bark at night."
    assert not exact.ambiguous
    # Two places score the same (case is ignored): the earliest wins, and it is recorded.
    twice = align("the cat sat on the mat", TEXT, fuzz)
    assert (twice.score, twice.start, twice.ambiguous) == (100, 0, True)
    assert TEXT[twice.start : twice.end] == "The cat sat on the mat"
    # A window that cuts words is widened to whole words.
    part = align("at on the ma", TEXT, fuzz)
    assert TEXT[part.start : part.end] == "sat on the mat"
    assert align("Quantum chromodynamics explains quarks.", TEXT, fuzz).score < 60


def test_propositions_by_hand() -> None:
    fake = FakeLLM(
        [answer("Dogs bark at night.", "the cat sat on the mat", "Zebras quote Kierkegaard.")]
    )
    chunker = build(fake)
    chunks = chunk_document(chunker, "d", TEXT)
    assert [(TEXT[c.start : c.end], c.embed_text) for c in chunks] == [
        ("Dogs bark at night.", "Dogs bark at night."),
        ("The cat sat on the mat", "the cat sat on the mat"),  # the earlier of two places
    ]
    assert fake.schemas == [SCHEMA]
    stats = chunker.stats()
    c = stats.counters
    assert (c["chunks"], c["llm_calls"], c["propositions"]) == (1, 1, 3)
    assert (c["aligned"], c["dropped"], c["ambiguous"]) == (2, 1, 1)
    assert c["score_90_100"] == 2 and sum(v for k, v in c.items() if k.startswith("score_")) == 3
    assert stats.llm is not None and stats.llm.calls == 1 and stats.fallbacks == 0
    dropped = [p for p in chunker.placements if not p.kept]
    assert [p.proposition for p in dropped] == ["Zebras quote Kierkegaard."]
    assert dropped[0].score < 60


def test_threshold_is_a_parameter() -> None:
    fake = FakeLLM([answer("Zebras quote Kierkegaard.")])
    spec = "propositions(llm='fake()', chunker='recursive(size=200)', min_score=0)"
    chunks = chunk_document(build(fake, spec), "d", TEXT)
    assert len(chunks) == 1  # with no threshold even a poor match is placed
    with pytest.raises(SpecError, match="min_score"):
        build(fake, "propositions(llm='fake()', min_score=101)")


def test_unusable_answer_is_corrected_once_then_the_chunk_is_kept() -> None:
    fake = FakeLLM(["no json here", answer("Dogs bark at night.")])
    chunks = chunk_document(build(fake), "d", TEXT)
    assert [TEXT[c.start : c.end] for c in chunks] == ["Dogs bark at night."]
    assert "It cannot be used: it is not JSON" in fake.prompts[1][1]
    fake = FakeLLM(["no json here", "still none"])
    chunker = build(fake)
    with pytest.warns(AnswerFallbackWarning, match="kept whole"):
        chunks = chunk_document(chunker, "d", TEXT)
    assert [(c.start, c.end, c.embed_text) for c in chunks] == [(0, len(TEXT), None)]
    stats = chunker.stats()
    assert stats.fallbacks == 1 and stats.counters["corrections"] == 1
    assert stats.counters["llm_calls"] == 2 and stats.error is not None


def test_spec_canonical_form_and_traits() -> None:
    assert str(CHUNKERS.resolve("propositions(llm='fake()', chunker='fixed_tokens')")) == (
        "propositions(llm='fake()', chunker='fixed_tokens(size=400)', min_score=60.0, "
        "max_answer_tokens=1024, prompt='v1')"
    )
    with pytest.raises(SpecError, match="wrapped chunker"):
        CHUNKERS.resolve("propositions(chunker='fixed_tokens(size=-1')")
    traits = CHUNKERS.entry("propositions").traits
    assert traits.calls_llm and traits.needs == ("context",)


def test_missing_rapidfuzz_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rapidfuzz", None)
    hint = re.escape("pip install 'chunkmark[propositions]'")
    with pytest.raises(MissingDependencyError, match=hint):
        CHUNKERS.build("propositions(llm='fake()')")


@settings(max_examples=30, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(["alpha", "Beta.", "gamma\n", "delta\n\n", "épsilon!", "zeta,", "Eta"]),
        min_size=1,
        max_size=150,
    ),
    cut=st.integers(min_value=1, max_value=6),
    noise=st.sampled_from(["", "x", " qq"]),
)
def test_every_span_lies_in_its_source(words: list[str], cut: int, noise: str) -> None:
    text = " ".join(words)

    def respond(system: str, user: str) -> str:
        source = re.search(r"<text>\n(.*)\n</text>", user, re.DOTALL)
        assert source is not None
        pieces = source.group(1).split()
        props = [" ".join(pieces[i : i + cut]) + noise for i in range(0, len(pieces), cut)]
        return answer(*props, "unrelated words entirely")

    spec = "propositions(llm='fake()', chunker='fixed_tokens(size=25)', min_score=50)"
    chunker = build(FakeLLM(respond), spec)
    inner, _ = CHUNKERS.build("fixed_tokens(size=25)")
    sources = chunk_document(inner, "d", text)
    chunks = chunk_document(chunker, "d", text)
    for chunk in chunks:
        assert any(s.start <= chunk.start < chunk.end <= s.end for s in sources)
        body = text[chunk.start : chunk.end]
        assert body == body.strip() and body
    kept = [p for p in chunker.placements if p.kept]
    assert len(kept) == len(chunks)
    assert all(p.score >= 50 for p in kept)
    c = chunker.stats().counters
    assert c["aligned"] + c["dropped"] == c["propositions"]


def test_openai_wire_format_and_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with wire_server().serve() as server:
        server.answer = lambda path, payload: answer("Dogs bark at night.", "Nothing like it.")
        spec = (
            f"propositions(llm=\"openai(model='local', base_url='{server.openai_url}')\", "
            "chunker='recursive(size=200)')"
        )
        chunker, _ = CHUNKERS.build(spec, context=ChunkerContext(cache_dir=tmp_path, seed=2))
        chunks = chunk_document(chunker, "d", TEXT)
        assert [TEXT[c.start : c.end] for c in chunks] == ["Dogs bark at night."]
        assert len(server.requests) == 1
        request = server.requests[0]
        assert request["response_format"]["type"] == "json_schema"
        assert request["response_format"]["json_schema"]["schema"] == SCHEMA
        assert TEXT in request["messages"][-1]["content"]
        rerun, _ = CHUNKERS.build(spec, context=ChunkerContext(cache_dir=tmp_path, seed=2))
        assert isinstance(rerun, PropositionsChunker)
        assert chunk_document(rerun, "d", TEXT) == chunks
        assert len(server.requests) == 1  # a second run asks nothing: the LLM cache
        stats = rerun.stats()
        assert stats.llm is not None and (stats.llm.cache_hits, stats.llm.requests) == (1, 0)
        assert stats.counters["dropped"] == 1


def slow_propositions(system: str, user: str) -> str:
    """The chunk's sentences after a random wait; for a chunk about dogs, an unreadable first
    answer (so a correction follows)."""
    time.sleep(random.random() * 0.01)
    chunk = user.split("<text>\n", 1)[1].split("\n</text>", 1)[0]
    if "Dogs" in chunk and "previous answer" not in user:
        return "not JSON"
    return answer(*[s.strip() + "." for s in chunk.split(".") if s.strip()])


def test_concurrent_requests_give_the_chunks_and_counts_of_one_at_a_time(
    tmp_path: Path,
) -> None:
    docs = [
        ("a", "Cats purr. Dogs bark.\n\nCats purr. Dogs bark.\n\nBirds sing at dawn."),
        ("b", "Cows moo loudly.\n\nCats purr. Dogs bark.\n\nFish swim in rivers."),
    ]
    spec = "propositions(llm='fake()', chunker='recursive(size=6)')"
    found = {}
    for workers in (1, 4):
        fake = FakeLLM(slow_propositions, concurrency=workers, cache_dir=tmp_path / f"c{workers}")
        chunker = build(fake, spec)
        chunks = chunk_documents(chunker, docs)
        found[workers] = (chunks, chunker.placements, chunker.stats(), fake.stats())
    assert found[4] == found[1]
    _, placements, stats, llm = found[1]
    assert stats.counters["corrections"] > 0 and stats.fallbacks == 0
    assert llm.cache_hits > 0  # the repeated chunk text was asked once
    assert [p.proposition for p in placements][:2] == ["Cats purr.", "Dogs bark."]
