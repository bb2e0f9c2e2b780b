"""Silver relation sets (``chunkmark relations prepare --silver``) on a tiny handmade dataset: a
scripted LLM answers records for each excerpt; entities, mentions, relations, supports and
counts are checked against numbers worked out by hand, then the written folder, the cache, the
dry run, the command line and ``relations run`` on the result."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

from chunkmark.cli.relations import register
from chunkmark.cli.relations_run import add_commands
from chunkmark.costs.budget import BudgetReached, CostLimitError
from chunkmark.datasets.jsonl import write_jsonl
from chunkmark.datasets.model import Dataset, Document, Question
from chunkmark.errors import ConfigError, DatasetError
from chunkmark.llm import FakeLLM
from chunkmark.relations.extract import Budget, LLMExtractor
from chunkmark.relations.model import Entity, Relation, load_relation_set
from chunkmark.relations.records import format_answer, format_record
from chunkmark.relations.silver import (
    build_silver,
    estimate_silver,
    excerpt_inputs,
    occurrences,
    prepare_silver,
    unite,
)
from chunkmark.spans import Span
from llm_chunker_helpers import wire_server

A = (
    "Ada Lovelace was born in London. Lovelace worked with Charles Babbage. "
    "Babbage built the Analytical Engine."
)
B = "Alan Turing studied at King's College. Turing worked at Bletchley Park."
C = "Turing worked at Bletchley Park."
D = "Nothing happens here."
A1, A2, A3 = Span(0, 32), Span(33, 70), Span(71, 107)  # the sentences of A
B1, B2 = Span(0, 38), Span(39, 71)  # the sentences of B
C1 = Span(0, 32)  # C is B's second sentence


def ent(name: str, kind: str) -> str:
    return format_record("entity", name, kind, "named")


def rel(source: str, target: str, kind: str) -> str:
    return format_record("relationship", source, target, kind, "stated", 8)


SCRIPT = {  # excerpt text -> the records the LLM answers
    A[A1.start : A1.end]: [
        ent("Ada Lovelace", "PER"),
        ent("London", "LOC"),
        ent("Royal Society", "ORG"),  # not in the text: dropped
        rel("Ada Lovelace", "London", "Place of Birth"),
        rel("Ada Lovelace", "Royal Society", "member of"),  # an end dropped
    ],
    A[A2.start : A2.end]: [
        ent("Charles Babbage", "PER"),
        rel("Lovelace", "the Charles Babbage", "collaborator"),  # "the ..." is normalised away
        rel("Charles Babbage", "Analytical engine", "notable work"),  # named outside the excerpt
    ],
    A[A3.start : A3.end]: [
        rel("Babbage", "Analytical Engine", "notable work"),
        rel("Charles Babbage", "Analytical Engine", "Notable Work!"),  # a duplicate of A2's
        rel("Charles Babbage", "Analytical Engine", "notable work"),  # and another
    ],
    B[B1.start : B1.end]: [
        ent("Alan Turing", "PER"),
        ent("Kings College", "ORG"),
        rel("Alan Turing", "King's College", "educated at"),
    ],
    C: [  # B's second sentence and all of C: one text, one call
        rel("Turing", "Bletchley Park", "employer"),
        rel("Turing", "Enigma", "worked on"),  # Enigma is in neither text
        rel("Alan Turing", "Bletchley Park", "employer"),  # Alan Turing is in B, not in C
    ],
}


def passage(user: str) -> str:
    found = re.search(r"<passage>\n(.*?)\n</passage>", user, re.DOTALL)
    assert found is not None
    return found.group(1)


def respond(system: str, user: str) -> str:
    return format_answer(SCRIPT.get(passage(user), []))


def tiny() -> Dataset:
    questions = (
        Question("q1", "Where was Ada Lovelace born?", "a", (A1,)),
        Question("q2", "What did Babbage build?", "a", (A2, A3)),
        Question("q3", "Which city?", "a", (A1,)),  # the same excerpt again: read once
        Question("q4", "Where did Turing study?", "b", (B1,)),
        Question("q5", "Where did Turing work?", "b", (B2,)),
        Question("q6", "Where?", "c", (C1,)),
    )
    documents = (Document("a", A), Document("b", B), Document("c", C), Document("d", D))
    return Dataset("tiny", documents, questions)


def extractor(cache: Path | None, **budget: Any) -> LLMExtractor:
    llm = FakeLLM(respond, cache_dir=cache)
    return LLMExtractor(llm, budget=Budget(**budget) if budget else None)


def spans(*pairs: tuple[int, int]) -> tuple[Span, ...]:
    return tuple(Span(s, e) for s, e in pairs)


ENTITIES = (
    Entity("d000e0", "a", "PER", ("Ada Lovelace",), spans((0, 12))),
    Entity("d000e1", "a", "", ("Lovelace",), spans((4, 12), (33, 41))),
    Entity("d000e2", "a", "LOC", ("London",), spans((25, 31))),
    Entity("d000e3", "a", "PER", ("Charles Babbage", "the Charles Babbage"), spans((54, 69))),
    Entity("d000e4", "a", "", ("Babbage",), spans((62, 69), (71, 78))),
    Entity("d000e5", "a", "", ("Analytical Engine", "Analytical engine"), spans((89, 106))),
    Entity("d001e0", "b", "PER", ("Alan Turing",), spans((0, 11))),
    Entity("d001e1", "b", "", ("Turing",), spans((5, 11), (39, 45))),
    Entity("d001e2", "b", "ORG", ("King's College", "Kings College"), spans((23, 37))),
    Entity("d001e3", "b", "", ("Bletchley Park",), spans((56, 70))),
    Entity("d002e0", "c", "", ("Turing",), spans((0, 6))),
    Entity("d002e1", "c", "", ("Bletchley Park",), spans((17, 31))),
)
RELATIONS = (
    Relation("d000r0", "a", "d000e0", "d000e2", "place of birth", "place of birth", (A1,), "silver", True),
    Relation("d000r1", "a", "d000e1", "d000e3", "collaborator", "collaborator", (A2,), "silver", True),
    Relation("d000r2", "a", "d000e3", "d000e5", "notable work", "notable work", (A2, A3), "silver", False),
    Relation("d000r3", "a", "d000e4", "d000e5", "notable work", "notable work", (A3,), "silver", True),
    Relation("d001r0", "b", "d001e0", "d001e2", "educated at", "educated at", (B1,), "silver", True),
    Relation("d001r1", "b", "d001e0", "d001e3", "employer", "employer", (B2,), "silver", False),
    Relation("d001r2", "b", "d001e1", "d001e3", "employer", "employer", (B2,), "silver", True),
    Relation("d002r0", "c", "d002e0", "d002e1", "employer", "employer", (C1,), "silver", True),
)  # fmt: skip


HEADS = ("Ada Lovelace", "Lovelace", "Charles Babbage", "Babbage")
HEADS += ("Alan Turing", "Alan Turing", "Turing", "Turing")


def test_the_data_is_what_the_test_thinks() -> None:
    assert [A[s.start : s.end] for s in (A1, A2, A3)] == [
        "Ada Lovelace was born in London.",
        "Lovelace worked with Charles Babbage.",
        "Babbage built the Analytical Engine.",
    ]
    assert B[B2.start : B2.end] == C == C[C1.start : C1.end]
    texts = {"a": A, "b": B, "c": C}
    for e in ENTITIES:
        assert all(texts[e.doc_id][m.start : m.end] in e.aliases for m in e.mentions)
    assert len(excerpt_inputs(tiny())) == 6  # q3 repeats q1's excerpt


def test_entities_relations_supports_and_counts_by_hand(tmp_path: Path) -> None:
    found = extractor(tmp_path)
    silver = build_silver(tiny(), found, name="silver-tiny")
    assert silver.entities == ENTITIES
    assert silver.relations == RELATIONS
    assert [(q.id, q.text, q.doc_id, q.excerpts) for q in silver.dataset.questions] == [
        (r.id, f"What is the {r.label} of {head}?", r.doc_id, r.support)
        for r, head in zip(
            RELATIONS,
            HEADS,
            strict=True,
        )
    ]
    assert silver.dataset.documents == tiny().documents  # unchanged, d included
    assert silver.dataset.name == "silver-tiny"
    stats = silver.stats
    assert (stats.documents, stats.questions, stats.excerpts) == (4, 6, 7)
    assert (stats.distinct_excerpts, stats.texts, stats.calls, stats.cache_hits) == (6, 5, 5, 0)
    assert len(found.llm.prompts) == 5  # type: ignore[attr-defined]
    # names: a has 7 (Royal Society dropped), b 5 (Enigma dropped), c 4 (Alan Turing, Enigma)
    assert (stats.names, stats.entities, stats.names_dropped) == (16, 12, 4)
    assert stats.mentions == sum(len(e.mentions) for e in ENTITIES) == 15
    # records: a 2+2+3, b 1+3, c 3; dropped a 1, b 1, c 2; merged the two repeats in a
    assert (stats.relation_records, stats.records_dropped) == (14, 4)
    assert (stats.duplicates_merged, stats.relations, stats.same_sentence) == (2, 8, 6)
    assert stats.input_tokens > 0 and stats.output_tokens > 0
    assert (stats.malformed, stats.incomplete) == (0, 0)


def test_written_set_loads_as_silver_and_a_rerun_asks_nothing(tmp_path: Path) -> None:
    source = tmp_path / "tiny"
    write_jsonl(tiny(), source)
    out = tmp_path / "silver"
    first = extractor(tmp_path / "cache")
    loaded, stats = prepare_silver(source, out, first)
    assert loaded.silver is True
    again = load_relation_set(out)
    assert again.silver is True and again.relations == RELATIONS
    assert tuple(again.entities.values()) == ENTITIES
    assert again.dataset.name == "silver" and len(again.dataset.questions) == 8
    assert stats.calls == 5
    files = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(files) == {"documents.jsonl", "questions.jsonl", "entities.jsonl", "relations.jsonl"}

    second = extractor(tmp_path / "cache")  # a new client, the same cache folder
    _, stats = prepare_silver(source, out, second)
    assert second.llm.prompts == []  # type: ignore[attr-defined]
    assert (stats.calls, stats.cache_hits) == (0, 5)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files


def test_the_dry_run_asks_nothing(tmp_path: Path) -> None:
    found = extractor(tmp_path)
    planned = estimate_silver(tiny(), found)
    assert found.llm.prompts == []  # type: ignore[attr-defined]
    assert (planned.texts, planned.cached_calls, planned.calls, planned.calls_max) == (5, 0, 5, 5)
    assert planned.usd == 0.0  # the fake's price
    build_silver(tiny(), found)
    replayed = estimate_silver(tiny(), extractor(tmp_path))
    assert (replayed.cached_calls, replayed.calls, replayed.usd) == (5, 0, 0.0)


def test_gleaning_adds_records_from_a_second_round(tmp_path: Path) -> None:
    def answer(system: str, user: str) -> str:
        if "Your records so far" not in user:
            return respond(system, user)
        if passage(user) == A[A1.start : A1.end]:
            return format_answer([rel("London", "Ada Lovelace", "birthplace of")])
        return format_answer([])

    found = LLMExtractor(FakeLLM(answer, cache_dir=tmp_path), gleanings=1)
    silver = build_silver(tiny(), found)
    assert silver.stats.calls == 10  # every text had records, so every text was gleaned once
    assert ("d000e2", "d000e0", "birthplace of", (A1,)) in [
        (r.head, r.tail, r.property_id, r.support) for r in silver.relations
    ]


def test_the_budget_stops_before_a_request_and_a_rerun_asks_the_rest(tmp_path: Path) -> None:
    limited = extractor(tmp_path, max_calls=2)
    with pytest.raises(BudgetReached) as caught:
        build_silver(tiny(), limited)
    assert "max_calls=2" in str(caught.value)
    assert len(limited.llm.prompts) == 2  # type: ignore[attr-defined]
    rest = extractor(tmp_path)
    assert build_silver(tiny(), rest).relations == RELATIONS
    assert len(rest.llm.prompts) == 3  # type: ignore[attr-defined]


def test_nothing_surviving_is_an_error(tmp_path: Path) -> None:
    found = LLMExtractor(FakeLLM(lambda s, u: format_answer([rel("Nobody", "Nowhere", "x")])))
    with pytest.raises(DatasetError, match="No relation"):
        build_silver(tiny(), found)
    with pytest.raises(DatasetError, match="no question"):
        build_silver(Dataset("empty", (Document("a", A),), ()), found)


def test_untyped_records_and_overlapping_supports() -> None:
    text = "Ann met Ben. Ann met Ben again."
    data = Dataset(
        "o", (Document("x", text),), (Question("q", "?", "x", (Span(0, 12), Span(4, 31))),)
    )
    found = LLMExtractor(FakeLLM(lambda s, u: format_answer([rel("Ann", "Ben", "")])))
    (relation,) = build_silver(data, found).relations
    assert (relation.property_id, relation.label) == ("relation", "relation")
    assert relation.support == (Span(0, 31),)  # two overlapping excerpts, one span


def test_occurrences_and_unite() -> None:
    assert occurrences("U.S.", "The U.S. and U.S.A. and U.S.") == [Span(4, 8), Span(24, 28)]
    assert occurrences("Turing", "Turingery by Turing") == [Span(13, 19)]
    assert occurrences("", "x") == []
    assert unite([Span(5, 9), Span(0, 3), Span(3, 4), Span(2, 6), Span(5, 9)]) == (Span(0, 9),)
    assert unite([Span(0, 3), Span(3, 5)]) == (Span(0, 3), Span(3, 5))  # touching: kept apart


# --- the command line ---------------------------------------------------------------------------


def run(*args: str) -> Result:
    app = typer.Typer()
    add_commands(register(app))
    return CliRunner().invoke(app, ["relations", *args], env={"COLUMNS": "200"})


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


def wire_answer(path: str, payload: dict[str, Any]) -> str:
    return respond("", str(payload["messages"][-1]["content"]))


def test_cli_silver_through_the_sdk_rerun_and_dry_run(tmp_path: Path, keys: None) -> None:
    pytest.importorskip("openai")
    source = tmp_path / "tiny"
    write_jsonl(tiny(), source)
    out, cache = tmp_path / "silver", tmp_path / "cache"
    with wire_server().serve() as server:
        server.answer = wire_answer
        spec = f"openai(model='gpt-4o-mini', base_url='{server.openai_url}')"
        common = ["--silver", str(source), "--llm", spec, "--cache-dir", str(cache)]

        dry = run("prepare", *common, "--out", str(out), "--dry-run")
        assert dry.exit_code == 0, dry.output
        assert server.requests == [] and not out.exists()
        assert "distinct excerpt texts" in dry.output and "5-5" in dry.output
        assert "Dry run: no request was made" in dry.output

        refused = run("prepare", *common, "--out", str(out), "--max-cost", "0.000001")
        assert isinstance(refused.exception, CostLimitError), refused.output
        assert "above --max-cost" in str(refused.exception)
        assert server.requests == [] and not out.exists()
        unpriced = "openai(model='no-such-model', base_url='https://api.acme.example/v1')"
        common[3] = unpriced  # an API that is not this machine: no price, no estimate
        refused = run("prepare", *common, "--out", str(out), "--max-cost", "1")
        common[3] = spec
        assert isinstance(refused.exception, CostLimitError), refused.output
        assert "No price is known for 'no-such-model'" in str(refused.exception)
        assert "--prices FILE" in str(refused.exception)
        dear = tmp_path / "prices.yaml"  # --prices replaces the list price
        dear.write_text("models: {gpt-4o-mini: {input: 100000, output: 100000}}\n")
        refused = run(
            "prepare", *common, "--out", str(out), "--max-cost", "1", "--prices", str(dear)
        )
        assert isinstance(refused.exception, CostLimitError), refused.output
        assert "above --max-cost $1.00" in str(refused.exception)
        assert server.requests == []

        first = run("prepare", *common, "--out", str(out), "--max-cost", "1")
        assert first.exit_code == 0, first.output
        assert len(server.requests) == 5
        for label, value in [
            ("questions read", 6),
            ("excerpts", 7),
            ("calls", 5),
            ("cache hits", 0),
            ("entities (name in the text)", 12),
            ("names dropped (not in the text)", 4),
            ("duplicates merged", 2),
            ("relations", 8),
        ]:
            assert re.search(rf"{re.escape(label)}\s*│\s*{value}\s", first.output), label
        assert "loads as silver relation set silver with 8 questions" in first.output
        loaded = load_relation_set(out)
        assert loaded.silver and loaded.relations == RELATIONS

        again = run("prepare", *common, "--out", str(out), "--force")
        assert again.exit_code == 0, again.output
        assert len(server.requests) == 5  # every answer from the cache
        assert re.search(r"cache hits\s*│\s*5\s", again.output)

        dry = run("prepare", *common, "--out", str(out), "--dry-run")
        assert dry.exit_code == 0 and len(server.requests) == 5
        assert "0.0000-0.0000" in dry.output  # everything cached: nothing to pay


def test_cli_built_in_name_dry_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("prepare", "--silver", "demo", "--llm", "fake()", "--out", str(out), "--dry-run")
    assert result.exit_code == 0, result.output
    assert "distinct excerpt texts" in result.output and not out.exists()


def test_cli_refuses_non_empty_out(tmp_path: Path) -> None:
    source = tmp_path / "tiny"
    write_jsonl(tiny(), source)
    result = run("prepare", "--silver", str(source), "--llm", "fake()", "--out", str(source))
    assert isinstance(result.exception, DatasetError) and "--force" in str(result.exception)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--silver", "demo", "--redocred", "x.json"], "--silver and --redocred"),
        (["--silver", "demo", "--docs", "3", "--llm", "fake()"], "--silver and --docs"),
        (["--silver", "demo"], "--llm SPEC"),
        (["--llm", "fake()"], "--llm only apply to a silver set"),
        (["--redocred", "x.json", "--dry-run", "--gleanings", "1"], "--gleanings, --dry-run"),
    ],
)
def test_cli_sources_and_options_do_not_mix(tmp_path: Path, args: list[str], message: str) -> None:
    result = run("prepare", *args, "--out", str(tmp_path / "out"))
    assert isinstance(result.exception, ConfigError), result.output
    assert message in str(result.exception)


def test_relations_run_accepts_the_silver_set(tmp_path: Path) -> None:
    out = tmp_path / "silver"
    prepare_silver(write_source(tmp_path), out, extractor(tmp_path / "cache"))
    result = run(
        "run",
        "--dataset",
        str(out),
        "-c",
        "sentences(n=1)",
        "-e",
        "fake()",
        "--k",
        "1",
        "--extractor",
        "cooccurrence",
        "--out",
        str(tmp_path / "results"),
        "--no-cache",
        "--no-report",
    )
    assert result.exit_code == 0, result.output
    with (tmp_path / "results" / "relations.csv").open(encoding="utf-8") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["support"] == "silver" and row["n_relations"] == "8"
    # each silver support is the sentence it was extracted from, or two of them (d000r2)
    assert float(row["support_containment_mean"]) == pytest.approx(7 / 8)


def write_source(tmp_path: Path) -> Path:
    source = tmp_path / "tiny"
    write_jsonl(tiny(), source)
    return source
