"""Extractors with a scripted LLM: one call per distinct text, gleaning, counts, the cache, the
estimate, the budget, errors; and the cooccurrence oracle on a hand-made document."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from chunkmark.chunkers import ChunkerContext
from chunkmark.costs.budget import BudgetReached
from chunkmark.costs.llm_prices import LLMPrices as PriceTable
from chunkmark.costs.meter import MESSAGE_TOKENS
from chunkmark.costs.prices import Price
from chunkmark.errors import LLMError, SpecError
from chunkmark.llm import FakeLLM
from chunkmark.relations.extract import (
    DEFAULT_ENTITY_TYPES,
    EXTRACTORS,
    Budget,
    CooccurrenceExtractor,
    LLMExtractor,
    names_in,
    prompt_text,
)
from chunkmark.relations.matching import EntityMatcher
from chunkmark.relations.model import (
    ChunkInput,
    Entity,
    ExtractedEntity,
    ExtractedRelation,
    Extractor,
    Relation,
)
from chunkmark.relations.records import COMPLETION_MARKER, format_answer, format_record
from chunkmark.spans import Span
from chunkmark.tokenizers import count_tokens


def rel(source: str, target: str, label: str = "country") -> str:
    return format_record("relationship", source, target, label, "d", 5)


def ent(name: str, type_: str = "PER") -> str:
    return format_record("entity", name, type_, "d")


def records_then_nothing(system: str, user: str) -> str:
    """Records in the first round, nothing more when gleaning."""
    if "Your records so far" in user:
        return COMPLETION_MARKER
    return format_answer([rel("A", "B")])


def chunks_of(*texts: str) -> list[ChunkInput]:
    return [ChunkInput(t, "doc", 0, len(t)) for t in texts]


# --- the LLM extractor with a scripted model ---------------------------------------------------


def test_one_call_per_distinct_text_and_costs_on_the_first() -> None:
    fake = FakeLLM(lambda system, user: format_answer([ent("A"), rel("A", "B")]))
    extractor = LLMExtractor(fake)
    found = extractor.extract(chunks_of("one", "two", "one", "one"))
    assert len(fake.prompts) == 2
    assert [e.calls for e in found] == [1, 1, 0, 0]
    assert (
        found[2].relations
        == found[0].relations
        == (ExtractedRelation("A", "B", "country", "d", 5.0),)
    )
    assert found[0].entities == (ExtractedEntity("A", "PER", "d"),)
    assert found[0].input_tokens > 0 and found[0].output_tokens > 0
    assert found[2].input_tokens == found[2].output_tokens == 0
    assert sum(e.input_tokens for e in found) == fake.stats().input_tokens
    assert extractor.counters()["chunks"] == 4
    assert extractor.counters()["texts"] == 2
    assert "one" in fake.prompts[0][1]
    assert fake.prompts[0][0] == extractor.system
    assert isinstance(extractor, Extractor)


def test_prompt_names_types_delimiters_and_the_chunk() -> None:
    extractor = LLMExtractor(FakeLLM(), entity_types=["PERSON", "PER"])
    assert "PERSON, PER (people)" in extractor.system
    assert "<|>" in extractor.system and "##" in extractor.system
    assert COMPLETION_MARKER in extractor.system
    assert "{" not in extractor.system
    ((system, user, max_tokens),) = extractor.requests(chunks_of("Some text.", "Some text."))
    assert "<passage>\nSome text.\n</passage>" in user
    assert (system, max_tokens) == (extractor.system, 2048)


def test_gleaning_adds_records_and_stops_when_a_round_adds_nothing() -> None:
    answers = {
        0: format_answer([ent("A"), rel("A", "B")]),
        1: format_answer([rel("A", "C"), rel("a", "b")]),  # one new, one repeated (case)
        2: format_answer([rel("A", "B")]),  # nothing new: stop
    }
    rounds: list[str] = []

    def respond(system: str, user: str) -> str:
        rounds.append(user)
        return answers[min(len(rounds) - 1, 2)]

    fake = FakeLLM(respond)
    (found,) = LLMExtractor(fake, gleanings=2).extract(chunks_of("text"))
    assert [(r.source, r.target) for r in found.relations] == [("A", "B"), ("A", "C")]
    assert found.calls == 3 and len(rounds) == 3
    # a gleaning round carries the first request and the earlier answers
    assert rounds[1].startswith(rounds[0])
    assert answers[0].strip() in rounds[1]
    assert answers[0].strip() in rounds[2] and answers[1].strip() in rounds[2]


def test_gleaning_stops_after_a_round_that_adds_nothing() -> None:
    fake = FakeLLM([format_answer([rel("A", "B")]), COMPLETION_MARKER])
    extractor = LLMExtractor(fake, gleanings=2)
    (found,) = extractor.extract(chunks_of("text"))
    assert len(fake.prompts) == 2 and found.calls == 2
    assert extractor.counters()["gleaning_rounds"] == 1


def test_no_gleaning_when_the_first_answer_holds_no_record() -> None:
    fake = FakeLLM([COMPLETION_MARKER])
    (found,) = LLMExtractor(fake, gleanings=2).extract(chunks_of("text"))
    assert len(fake.prompts) == 1
    assert (found.relations, found.complete) == ((), True)


def test_malformed_and_incomplete_are_summed_over_rounds() -> None:
    first = ent("A") + "##\n" + '("relationship"<|>A<|>B)##\n' + rel("A", "B")  # no marker
    second = format_answer([rel("A", "C"), '("entity"<|>X)'])
    fake = FakeLLM([first, second, COMPLETION_MARKER])
    extractor = LLMExtractor(fake, gleanings=2)
    (found,) = extractor.extract(chunks_of("text"))
    assert (found.malformed, found.complete) == (2, False)
    assert len(found.relations) == 2
    assert extractor.counters()["incomplete"] == 1


def test_an_empty_answer_gives_an_empty_incomplete_extraction() -> None:
    fake = FakeLLM(["   "])
    extractor = LLMExtractor(fake, gleanings=1)
    (found,) = extractor.extract(chunks_of("text"))
    assert (found.entities, found.relations, found.complete) == ((), (), False)
    assert extractor.counters()["empty_answers"] == 1


def test_cache_makes_a_rerun_free(tmp_path: Path) -> None:
    first = FakeLLM(records_then_nothing, cache_dir=tmp_path)
    found = LLMExtractor(first, gleanings=1).extract(chunks_of("x", "y"))
    assert len(first.prompts) == 4
    again = FakeLLM(records_then_nothing, cache_dir=tmp_path)
    rerun = LLMExtractor(again, gleanings=1).extract(chunks_of("x", "y"))
    assert again.prompts == []
    assert [e.relations for e in rerun] == [e.relations for e in found]
    assert [(e.calls, e.cache_hits, e.input_tokens) for e in rerun] == [(0, 2, 0), (0, 2, 0)]


def test_identity_has_prompt_version_gleanings_and_llm() -> None:
    identity = LLMExtractor(FakeLLM(seed=3), gleanings=1).identity()
    assert identity["prompt"] == "extract_v1"
    assert identity["gleanings"] == 1
    assert identity["llm"]["provider"] == "fake"
    assert identity["seed"] == 3
    assert identity["entity_types"] == list(DEFAULT_ENTITY_TYPES)


def test_llm_error_names_the_chunk_and_answers_stay_cached(tmp_path: Path) -> None:
    answer = [format_answer([rel("A", "B")])]
    failing = FakeLLM(answer, fail_after=1, cache_dir=tmp_path)
    chunks = [ChunkInput("first", "d1", 0, 5), ChunkInput("second", "d2", 10, 16)]
    with pytest.raises(LLMError) as caught:
        LLMExtractor(failing).extract(chunks)
    message = str(caught.value)
    assert "chunk 1" in message and "'d2'" in message and "[10, 16)" in message
    assert "cache" in message
    healthy = FakeLLM(answer, cache_dir=tmp_path)
    found = LLMExtractor(healthy).extract(chunks)
    assert len(healthy.prompts) == 1  # only the failed chunk is asked again
    assert [e.cache_hits for e in found] == [1, 0]


def test_llm_error_without_a_cache_says_so() -> None:
    with pytest.raises(LLMError, match="no answer cache"):
        LLMExtractor(FakeLLM(fail_after=0)).extract(chunks_of("x"))


# --- estimate and budget ------------------------------------------------------------------------


def test_estimate_counts_requests_and_tokens_without_asking(tmp_path: Path) -> None:
    fake = FakeLLM(records_then_nothing, cache_dir=tmp_path)
    extractor = LLMExtractor(fake, gleanings=2, max_tokens=100)
    chunks = chunks_of("alpha text", "beta text", "alpha text")
    found = extractor.estimate(chunks)
    assert fake.prompts == [] and fake.stats().calls == 0
    per_text = [
        sum(count_tokens([extractor.system, extractor.request(t)], "cl100k_base")) + MESSAGE_TOKENS
        for t in ("alpha text", "beta text")
    ]
    assert (found.texts, found.cached_calls, found.calls, found.calls_max) == (2, 0, 2, 6)
    assert found.input_tokens == sum(per_text)
    assert found.input_tokens_max > 3 * found.input_tokens
    assert (found.output_tokens, found.output_tokens_max) == (200, 600)
    assert (found.usd, found.usd_max) == (0.0, 0.0)  # the fake costs nothing
    extractor.extract(chunks)  # first round answers records, the second adds none: 4 calls
    replayed = extractor.estimate(chunks)
    assert (replayed.cached_calls, replayed.calls, replayed.calls_max) == (4, 0, 0)
    assert replayed.input_tokens == replayed.output_tokens == 0


def test_estimate_prices_a_priced_model() -> None:
    table = PriceTable({"fake": Price("fake", 1.0, 2.0)})
    extractor = LLMExtractor(PricedFake(["x"]), max_tokens=10)
    found = extractor.estimate(chunks_of("a"), prices=table)
    assert found.usd == pytest.approx((found.input_tokens * 1.0 + 10 * 2.0) / 1e6)
    assert LLMExtractor(PricedFake(["x"])).estimate(chunks_of("a"), PriceTable({})).usd is None


class PricedFake(FakeLLM):
    """A scripted model that is priced like a paid one."""

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "provider": "scripted"}


def test_max_calls_stops_before_the_next_request(tmp_path: Path) -> None:
    answers = [format_answer([rel("A", "B")])]
    fake = FakeLLM(answers, cache_dir=tmp_path)
    extractor = LLMExtractor(fake, budget=Budget(max_calls=2))
    with pytest.raises(BudgetReached) as caught:
        extractor.extract(chunks_of("a", "b", "a", "c", "d"))
    message = str(caught.value)
    assert "max_calls=2" in message and "chunk 3" in message
    assert "2 of 4 distinct chunk texts" in message and "cache" in message
    assert len(fake.prompts) == 2
    # cached answers do not count: a rerun with the same limit gets two further
    rerun = LLMExtractor(FakeLLM(answers, cache_dir=tmp_path), budget=Budget(max_calls=2))
    assert len(rerun.extract(chunks_of("a", "b", "c", "d"))) == 4


def test_max_cost_stops_before_crossing_it() -> None:
    # $1 per output token: a request is estimated at max_tokens = $10; each answer is 5 words.
    table = PriceTable({"fake": Price("fake", 0.0, 1_000_000.0)})
    answer = "not records at all here"  # 5 output tokens for the fake
    fake = PricedFake([answer])
    extractor = LLMExtractor(fake, max_tokens=10, budget=Budget(max_cost=12.0, prices=table))
    with pytest.raises(BudgetReached) as caught:
        extractor.extract(chunks_of("a", "b"))
    assert "--max-cost" in str(caught.value) and "1 of 2 distinct" in str(caught.value)
    assert len(fake.prompts) == 1


def test_max_cost_needs_a_price() -> None:
    with pytest.raises(Exception, match="No price is known"):
        LLMExtractor(PricedFake(), budget=Budget(max_cost=1.0, prices=PriceTable({})))


# --- specs ---------------------------------------------------------------------------------------


def test_llm_spec_builds_through_a_context(tmp_path: Path) -> None:
    context = ChunkerContext(cache_dir=tmp_path, seed=4)
    spec = "llm(llm=\"fake(answers=['<|COMPLETE|>'])\", gleanings=1, entity_types=['PER', ' ORG'])"
    extractor, canonical = EXTRACTORS.build(spec, context=context, budget=Budget(max_calls=5))
    assert isinstance(extractor, LLMExtractor)
    assert extractor.entity_types == ("PER", "ORG")
    assert extractor.budget == Budget(max_calls=5)
    assert extractor.llm.identity()["provider"] == "fake"
    assert getattr(extractor.llm, "seed", None) == 4
    assert canonical.kwargs["entity_types"] == ["PER", "ORG"]
    assert EXTRACTORS.traits(spec).calls_llm


@pytest.mark.parametrize(
    "spec",
    [
        "llm(gleanings=3)",
        "llm(llm='nope()')",
        "llm(entity_types=[])",
        "llm(entity_types=['A', 'A'])",
        "llm(entity_types=['A<|>B'])",
        "llm(max_tokens=0)",
        "llm(prompt='v9')",
    ],
)
def test_bad_llm_specs(spec: str) -> None:
    with pytest.raises(SpecError):
        EXTRACTORS.build(spec, context=ChunkerContext())


def test_cooccurrence_spec_needs_the_relations() -> None:
    with pytest.raises(SpecError, match="relations"):
        EXTRACTORS.build("cooccurrence")
    extractor, canonical = EXTRACTORS.build("cooccurrence", relations=RELATIONS)
    assert str(canonical) == "cooccurrence()"
    assert extractor.identity() == {"extractor": "cooccurrence", "version": 1}
    assert not EXTRACTORS.traits("cooccurrence").calls_llm


def test_prompts_ship_in_the_package() -> None:
    assert "{chunk}" in prompt_text("extract_v1")
    assert "{answers}" in prompt_text("glean_v1")


# --- the cooccurrence oracle on a hand-made document ---------------------------------------------

TEXT = (
    "Marie Curie was born in Warsaw. Curie moved to Paris in 1891. "
    "Pierre Curie met Marie in Paris. Curie died in 1906."
)
SENTENCES = [s + "." for s in TEXT.rstrip(".").split(". ")]


def at(text: str, start: int = 0) -> Span:
    begin = TEXT.index(text, start)
    return Span(begin, begin + len(text))


ENTITIES = (
    Entity(
        "e1",
        "doc",
        "PER",
        ("Marie Curie", "Curie", "Marie"),
        (at("Marie Curie"), at("Curie", 30), at("Marie", 40)),
    ),
    Entity("e2", "doc", "LOC", ("Warsaw",), (at("Warsaw"),)),
    Entity("e3", "doc", "LOC", ("Paris",), (at("Paris"), at("Paris", 60))),
    Entity("e4", "doc", "TIME", ("1891",), (at("1891"),)),
    # shares "Curie" with e1: the last sentence's "Curie" is Pierre
    Entity("e5", "doc", "PER", ("Pierre Curie", "Curie"), (at("Pierre Curie"), at("Curie", 90))),
    Entity("e7", "doc", "TIME", ("1906",), (at("1906"),)),
)


def relation(id_: str, head: str, tail: str, label: str) -> Relation:
    return Relation(id_, "doc", head, tail, "P0", label, (Span(0, 1),), "evidence", True)


RELATIONS = (
    relation("r1", "e1", "e2", "place of birth"),
    relation("r2", "e1", "e3", "residence"),
    relation("r3", "e5", "e3", "residence"),
    relation("r4", "e5", "e1", "spouse"),
    relation("r5", "e5", "e7", "date of death"),
    relation("r6", "e2", "e7", "never together"),
)


def sentence_chunks() -> list[ChunkInput]:
    out = []
    for sentence in SENTENCES:
        start = TEXT.index(sentence)
        out.append(ChunkInput(sentence, "doc", start, start + len(sentence), ENTITIES))
    return out


def test_sentences_are_what_the_test_thinks() -> None:
    assert SENTENCES == [
        "Marie Curie was born in Warsaw.",
        "Curie moved to Paris in 1891.",
        "Pierre Curie met Marie in Paris.",
        "Curie died in 1906.",
    ]
    for e in ENTITIES:
        assert all(TEXT[m.start : m.end] in e.aliases for m in e.mentions)


def test_cooccurrence_by_hand() -> None:
    found = CooccurrenceExtractor(RELATIONS).extract(sentence_chunks())
    records = [[(r.source, r.target, r.type) for r in e.relations] for e in found]
    assert records == [
        [("Marie Curie", "Warsaw", "place of birth")],
        [("Curie", "Paris", "residence")],
        [
            ("Curie", "Paris", "residence"),  # "Curie" of Pierre Curie names e1 (tie: e1 < e5)
            ("Pierre Curie", "Paris", "residence"),
            ("Pierre Curie", "Curie", "spouse"),
        ],
        # "Curie" is e5 here (its mention is in the chunk); e1 cannot be named
        [("Curie", "1906", "date of death")],
    ]
    names = [[(x.name, x.type) for x in e.entities] for e in found]
    assert names == [
        [("Marie Curie", "PER"), ("Warsaw", "LOC")],
        [("Curie", "PER"), ("Paris", "LOC"), ("1891", "TIME")],
        [("Pierre Curie", "PER"), ("Curie", "PER"), ("Paris", "LOC")],
        [("Curie", "PER"), ("1906", "TIME")],
    ]
    assert all(e.calls == 0 and e.complete and e.malformed == 0 for e in found)


def test_cooccurrence_records_match_back_to_exactly_the_gold_pairs() -> None:
    chunks = sentence_chunks()
    found = CooccurrenceExtractor(RELATIONS).extract(chunks)
    matcher = EntityMatcher(ENTITIES)
    pairs = [
        {
            frozenset(
                (matcher.match(r.source, c.start, c.end), matcher.match(r.target, c.start, c.end))
            )
            for r in e.relations
        }
        for c, e in zip(chunks, found, strict=True)
    ]
    assert pairs == [
        {frozenset({"e1", "e2"})},
        {frozenset({"e1", "e3"})},
        {frozenset({"e1", "e3"}), frozenset({"e5", "e3"}), frozenset({"e5", "e1"})},
        {frozenset({"e5", "e7"})},
    ]
    assert matcher.unmatched == 0


def test_whole_document_chunk_and_other_documents() -> None:
    whole = ChunkInput(TEXT, "doc", 0, len(TEXT), ENTITIES)
    other = ChunkInput("Warsaw and 1906.", "other", 0, 16, ())
    found = CooccurrenceExtractor(RELATIONS).extract([whole, other])
    # r6 (Warsaw, 1906) co-occurs in the whole text; every relation does
    assert {r.type for r in found[0].relations} == {r.label for r in RELATIONS}
    assert found[1].relations == () and found[1].entities == ()


@pytest.mark.parametrize(
    ("alias", "text", "expected"),
    [
        ("Paris", "Parisian art", []),
        ("Paris", "in Paris, France", [(3, "Paris")]),
        ("Paris", "in paris", []),  # case-sensitive
        ("U.S.", "the U.S. army", [(4, "U.S.")]),  # punctuation at the edge
        ("U.S.", "the U.S.A.", []),
        ("Curie", "Pierre Curie", [(7, "Curie")]),
        ("Zürich", "in Zürichsee", []),  # Unicode word characters
        ("Zürich", "(Zürich)", [(1, "Zürich")]),
    ],
)
def test_names_in_whole_words(alias: str, text: str, expected: list[tuple[int, str]]) -> None:
    assert names_in(Entity("e", "d", "LOC", (alias,)), text) == expected


def test_names_in_orders_by_position_then_length() -> None:
    entity = Entity("e", "d", "PER", ("Curie", "Marie Curie", "Marie"))
    assert names_in(entity, "Marie Curie and Curie") == [
        (0, "Marie Curie"),
        (0, "Marie"),
        (6, "Curie"),
    ]


# --- concurrent requests ------------------------------------------------------------------------


def slow_records(system: str, user: str) -> str:
    """Records after a random wait (so that answers finish in another order than asked); a
    chunk marked SLOW-FAIL fails late, one marked FAST-FAIL at once; a gleaning round adds
    one record to chunks about C."""
    if "FAST-FAIL" in user:
        raise LLMError("The endpoint failed fast.", "Check it.")
    time.sleep(random.random() * 0.01)
    if "SLOW-FAIL" in user:
        time.sleep(0.05)
        raise LLMError("The endpoint failed slowly.", "Check it.")
    if "Your records so far" in user:
        return format_answer([rel("C", "D")]) if " C " in user else COMPLETION_MARKER
    return format_answer([rel("A", "B"), ent("A")])


def test_concurrent_extraction_gives_the_sequential_extractions() -> None:
    texts = [f"Text {i} about {'A C D' if i % 3 else 'A B'}." for i in range(10)]
    chunks = chunks_of(*texts, texts[2], texts[5])  # repeated texts: extracted once
    found = {}
    for workers in (1, 4):
        llm = FakeLLM(slow_records, concurrency=workers)
        extractor = LLMExtractor(llm, gleanings=1)
        found[workers] = (extractor.extract(chunks), extractor.counters(), llm.stats())
    assert found[4] == found[1]
    extractions, counters, stats = found[1]
    assert counters["texts"] == 10 and counters["gleaning_rounds"] > 0
    assert sum(e.calls for e in extractions) == stats.requests


def test_concurrent_extraction_fails_where_a_sequential_one_fails() -> None:
    texts = [f"Text {i}." for i in range(12)]
    texts[3] += " SLOW-FAIL"
    texts[6] += " FAST-FAIL"  # fails first in time, but comes later
    messages = set()
    for workers in (1, 4):
        with pytest.raises(LLMError) as caught:
            LLMExtractor(FakeLLM(slow_records, concurrency=workers)).extract(chunks_of(*texts))
        messages.add(str(caught.value))
    assert len(messages) == 1
    assert "chunk 3" in messages.pop() and "failed slowly" in str(caught.value)


def test_a_budget_extracts_one_text_at_a_time() -> None:
    llm = FakeLLM(slow_records, concurrency=4)
    with pytest.raises(BudgetReached, match="number 4, past max_calls=3"):
        LLMExtractor(llm, budget=Budget(max_calls=3)).extract(chunks_of("a", "b", "c", "d", "e"))
    assert llm.stats().requests == 3  # not one more, though four could be in flight


def test_the_extractor_is_named_without_the_llms_transport_settings() -> None:
    plain = "llm(llm=\"openai(model='m')\", gleanings=1)"
    tuned = (
        "llm(llm=\"openai(model='m', timeout=600.0, max_retries=0, concurrency=8)\", gleanings=1)"
    )
    assert EXTRACTORS.identity(tuned) == EXTRACTORS.identity(plain)
    assert EXTRACTORS.resolve(tuned) != EXTRACTORS.resolve(plain)
