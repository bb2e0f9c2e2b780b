"""Relation extraction through the real OpenAI and Anthropic SDK clients, against a local server
speaking their wire formats, with a scripted extractor behind it.

The server reads the passage out of each request and answers relationship records for the gold
relations whose head and tail are both named in it, plus scripted faults: a malformed record, a
missing completion marker, a pair given only in the gleaning round, a name that is no entity
and a name in capitals. The matched pairs must be exactly the gold pairs that co-occur in some
chunk, computed here from the gold data alone; a second run must ask the server nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from chunkmark.chunkers import ChunkerContext
from chunkmark.errors import LLMError
from chunkmark.relations.extract import (
    EXTRACTORS,
    CooccurrenceExtractor,
    LLMExtractor,
    prompt_text,
)
from chunkmark.relations.matching import EntityMatcher
from chunkmark.relations.model import ChunkInput, Entity, Extraction, Relation
from chunkmark.relations.records import format_answer, format_record
from chunkmark.spans import Span
from llm_chunker_helpers import wire_server

DOCS = {
    "d1": "Ada Lovelace was born in London. Lovelace worked with Charles Babbage in London. "
    "Babbage designed the Analytical Engine in 1837.",
    "d2": "Alan Turing studied at King's College. Turing later worked at Bletchley Park, near "
    "Milton Keynes. Bletchley Park is in England.",
}
NAMES = {  # id: (document, type, aliases)
    "a1": ("d1", "PER", ("Ada Lovelace", "Lovelace")),
    "a2": ("d1", "LOC", ("London",)),
    "a3": ("d1", "PER", ("Charles Babbage", "Babbage")),
    "a4": ("d1", "MISC", ("Analytical Engine",)),
    "a5": ("d1", "TIME", ("1837",)),
    "b1": ("d2", "PER", ("Alan Turing", "Turing")),
    "b2": ("d2", "ORG", ("King's College",)),
    "b3": ("d2", "LOC", ("Bletchley Park",)),
    "b4": ("d2", "LOC", ("Milton Keynes",)),
    "b5": ("d2", "LOC", ("England",)),
}
GOLD = [  # (head, tail, label)
    ("a1", "a2", "place of birth"),
    ("a1", "a3", "collaborator"),
    ("a3", "a2", "residence"),
    ("a3", "a4", "notable work"),
    ("a4", "a5", "inception"),
    ("a1", "a5", "never named together"),
    ("b1", "b2", "educated at"),
    ("b1", "b3", "employer"),
    ("b3", "b4", "located in the administrative territorial entity"),
    ("b3", "b5", "country"),
    ("b1", "b5", "never named together"),
]
GLEANED = ("b3", "b4")  # given only when gleaning
GLEAN_MARK = "Your records so far"


def occurs(alias: str, text: str) -> Iterator[re.Match[str]]:
    return re.finditer(r"(?<!\w)" + re.escape(alias) + r"(?!\w)", text)


def entities() -> dict[str, Entity]:
    out = {}
    for id_, (doc, type_, aliases) in NAMES.items():
        mentions = sorted(
            Span(m.start(), m.end()) for alias in aliases for m in occurs(alias, DOCS[doc])
        )
        out[id_] = Entity(id_, doc, type_, aliases, tuple(mentions))
    return out


ENTITIES = entities()
RELATIONS = tuple(
    Relation(f"r{i}", NAMES[h][0], h, t, f"P{i}", label, (Span(0, 1),), "evidence", False)
    for i, (h, t, label) in enumerate(GOLD)
)


def sentence_chunks() -> list[ChunkInput]:
    """Each document cut into sentences, and the last sentence of d2 once more."""
    out = []
    for doc, text in DOCS.items():
        by_doc = tuple(e for e in ENTITIES.values() if e.doc_id == doc)
        for m in re.finditer(r"[^.]+\.", text):
            start = m.start() + len(m.group()) - len(m.group().lstrip())
            out.append(ChunkInput(text[start : m.end()], doc, start, m.end(), by_doc))
    return [*out, out[-1]]


def first_name(entity_id: str, text: str) -> str | None:
    """The first alias of an entity (in alias order) named in ``text``, if any."""
    for alias in NAMES[entity_id][2]:
        if next(occurs(alias, text), None) is not None:
            return alias
    return None


def cooccurring(text: str) -> list[tuple[str, str, str, str, str]]:
    """Gold relations both of whose ends are named in ``text``: (head, tail, label, names)."""
    out = []
    for head, tail, label in GOLD:
        h, t = first_name(head, text), first_name(tail, text)
        if h is not None and t is not None:
            out.append((head, tail, label, h, t))
    return out


def expected_pairs(chunks: list[ChunkInput]) -> set[frozenset[str]]:
    return {frozenset((h, t)) for c in chunks for h, t, *_ in cooccurring(c.text)}


def rel(source: str, target: str, label: str) -> str:
    return format_record("relationship", source, target, label, "stated", 8)


@dataclass
class Script:
    """The scripted extractor behind the server; keeps every answer it gave."""

    served: list[str] = field(default_factory=list)

    def __call__(self, path: str, payload: dict[str, Any]) -> str:
        user = payload["messages"][-1]["content"]
        found = re.search(r"<passage>\n(.*?)\n</passage>", user, re.DOTALL)
        assert found is not None
        passage = found.group(1)
        if GLEAN_MARK in user:
            records = [
                rel(h, t, label)
                for hd, tl, label, h, t in cooccurring(passage)
                if (hd, tl) == GLEANED
            ]
            text = format_answer(records)
        else:
            text = self.first_answer(passage)
        self.served.append(text)
        return text

    def first_answer(self, passage: str) -> str:
        records: list[str] = []
        for head, tail, label, h, t in cooccurring(passage):
            if (head, tail) == GLEANED:
                continue
            records.append(format_record("entity", h, NAMES[head][1], "named"))
            records.append(rel(h.replace("Charles Babbage", "CHARLES BABBAGE"), t, label))
        if "Analytical Engine" in passage:
            records.append('("relationship"<|>Babbage<|>Analytical Engine)')  # malformed
        if "Ada Lovelace" in passage:
            records.append(rel("Ada Lovelace", "Royal Society", "member of"))  # no such entity
        return format_answer(records, complete="King's College" not in passage)


def llm_spec(provider: str, server: Any) -> str:
    if provider == "openai":
        return f"openai(model='gpt-4o-mini', base_url='{server.openai_url}')"
    return f"anthropic(model='claude-haiku-4-5', base_url='{server.url}')"


def build(provider: str, server: Any, cache: Path, gleanings: int = 1) -> LLMExtractor:
    spec = f'llm(llm="{llm_spec(provider, server)}", gleanings={gleanings}, max_tokens=500)'
    extractor, _ = EXTRACTORS.build(spec, context=ChunkerContext(cache_dir=cache, seed=1))
    assert isinstance(extractor, LLMExtractor)
    return extractor


def matched(
    chunks: list[ChunkInput], found: list[Extraction]
) -> tuple[set[frozenset[str]], dict[str, EntityMatcher]]:
    matchers = {
        doc: EntityMatcher([e for e in ENTITIES.values() if e.doc_id == doc]) for doc in DOCS
    }
    pairs: set[frozenset[str]] = set()
    for chunk, extraction in zip(chunks, found, strict=True):
        matcher = matchers[chunk.doc_id]
        for r in extraction.relations:
            source = matcher.match(r.source, chunk.start, chunk.end)
            target = matcher.match(r.target, chunk.start, chunk.end)
            if source is not None and target is not None and source != target:
                pairs.add(frozenset((source, target)))
    return pairs, matchers


def prompt_tokens(provider: str, payload: dict[str, Any]) -> int:
    """What the local server reports as prompt tokens (words, see tests/wire_formats.py)."""
    words = sum(len(str(m["content"]).split()) for m in payload["messages"])
    return words + (len(str(payload.get("system", "")).split()) if provider == "anthropic" else 0)


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")


def test_the_data_is_what_the_test_thinks() -> None:
    chunks = sentence_chunks()
    assert [c.text for c in chunks][:3] == [
        "Ada Lovelace was born in London.",
        "Lovelace worked with Charles Babbage in London.",
        "Babbage designed the Analytical Engine in 1837.",
    ]
    for c in chunks:
        assert DOCS[c.doc_id][c.start : c.end] == c.text
    for e in ENTITIES.values():
        assert e.mentions and all(DOCS[e.doc_id][m.start : m.end] in e.aliases for m in e.mentions)
    assert GLEAN_MARK in prompt_text("glean_v1")
    pairs = expected_pairs(chunks)
    assert len(pairs) == 9 and frozenset(("a1", "a5")) not in pairs  # not every gold pair


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_extraction_through_the_sdk_matches_the_cooccurring_gold_pairs(
    provider: str, tmp_path: Path, keys: None
) -> None:
    pytest.importorskip(provider)
    chunks = sentence_chunks()
    script = Script()
    with wire_server().serve() as server:
        server.answer = script
        extractor = build(provider, server, tmp_path)

        planned = extractor.estimate(chunks)  # a dry run asks nothing
        assert server.requests == []
        assert (planned.texts, planned.cached_calls, planned.calls, planned.calls_max) == (
            6,
            0,
            6,
            12,
        )
        assert planned.usd is not None and 0 < planned.usd < planned.usd_max

        found = extractor.extract(chunks)

        # one request per distinct text and round: 6 texts, each with one gleaning round
        assert len(server.requests) == 12
        assert (
            server.paths
            == ["/v1/chat/completions" if provider == "openai" else "/v1/messages"] * 12
        )
        pairs, matchers = matched(chunks, found)
        assert pairs == expected_pairs(chunks)
        assert pairs == matched(chunks, CooccurrenceExtractor(RELATIONS).extract(chunks))[0]

        # scripted faults, counted
        assert sum(e.malformed for e in found) == 1
        assert [c.text for c, e in zip(chunks, found, strict=True) if not e.complete] == [
            "Alan Turing studied at King's College."
        ]
        assert sum(m.unmatched for m in matchers.values()) == 1
        assert matchers["d1"].unmatched_names == {"Royal Society": 1}
        names = {r.source for e in found for r in e.relations}
        assert "CHARLES BABBAGE" in names and "Charles Babbage" not in names
        milton = next(e for c, e in zip(chunks, found, strict=True) if "Milton" in c.text)
        assert ("Bletchley Park", "Milton Keynes") in [
            (r.source, r.target) for r in milton.relations
        ]
        glean = [r for r in server.requests if GLEAN_MARK in r["messages"][-1]["content"]]
        assert len(glean) == 6
        assert any(script.served[0].strip() in r["messages"][-1]["content"] for r in glean)

        # what each extraction cost, as the endpoint reported it
        assert [e.calls for e in found] == [2] * 6 + [0]
        assert sum(e.input_tokens for e in found) == sum(
            prompt_tokens(provider, p) for p in server.requests
        )
        assert sum(e.output_tokens for e in found) == sum(len(a.split()) for a in script.served)
        system = server.requests[0].get("system") or server.requests[0]["messages"][0]["content"]
        assert "<|COMPLETE|>" in system and "PER (people)" in system

        # a second run, new client objects, same cache folder: nothing asked
        rerun = build(provider, server, tmp_path)
        again = rerun.extract(chunks)
        assert len(server.requests) == 12
        assert [(e.relations, e.malformed, e.complete) for e in again] == [
            (e.relations, e.malformed, e.complete) for e in found
        ]
        assert sum(e.cache_hits for e in again) == 12 and sum(e.calls for e in again) == 0
        replayed = rerun.estimate(chunks)
        assert (replayed.cached_calls, replayed.calls, replayed.usd) == (12, 0, 0.0)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_api_error_names_the_chunk_and_keeps_what_was_answered(
    provider: str, tmp_path: Path, keys: None
) -> None:
    pytest.importorskip(provider)
    chunks = sentence_chunks()[:3]
    script = Script()

    def answer_then_refuse(path: str, payload: dict[str, Any]) -> str:
        if not script.served:
            server.fail(401)  # the next request is refused (never retried)
        return script(path, payload)

    with wire_server().serve() as server:
        server.answer = answer_then_refuse
        with pytest.raises(LLMError) as caught:
            build(provider, server, tmp_path, gleanings=0).extract(chunks)
        message = str(caught.value)
        assert "chunk 1" in message and "'d1'" in message
        assert f"[{chunks[1].start}, {chunks[1].end})" in message
        assert "cache" in message
        assert len(server.requests) == 2
        found = build(provider, server, tmp_path, gleanings=0).extract(chunks)
        assert len(server.requests) == 4  # the first chunk came from the cache
        assert [e.cache_hits for e in found] == [1, 0, 0]
