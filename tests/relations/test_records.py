"""The tolerant parser of delimited entity and relationship records, on hand-written answers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.relations.model import ExtractedEntity, ExtractedRelation
from chunkmark.relations.records import (
    COMPLETION_MARKER,
    RECORD_DELIMITER,
    TUPLE_DELIMITER,
    format_answer,
    format_record,
    parse_records,
)

WELL_FORMED = """("entity"<|>Marie Curie<|>PER<|>A physicist.)##
("entity"<|>Warsaw<|>LOC<|>A city.)##
("relationship"<|>Marie Curie<|>Warsaw<|>place of birth<|>Born there.<|>9)##
<|COMPLETE|>"""


def test_well_formed_answer() -> None:
    records = parse_records(WELL_FORMED)
    assert records.entities == (
        ExtractedEntity("Marie Curie", "PER", "A physicist."),
        ExtractedEntity("Warsaw", "LOC", "A city."),
    )
    assert records.relations == (
        ExtractedRelation("Marie Curie", "Warsaw", "place of birth", "Born there.", 9.0),
    )
    assert (records.malformed, records.complete, records.self_relations, records.ignored) == (
        0,
        True,
        0,
        0,
    )


def test_format_helpers_write_what_the_parser_reads() -> None:
    answer = format_answer(
        [
            format_record("entity", "A", "PER", "d"),
            format_record("relationship", "A", "B", "country", "d", 3),
        ]
    )
    assert answer.endswith(COMPLETION_MARKER)
    assert TUPLE_DELIMITER in answer and RECORD_DELIMITER in answer
    records = parse_records(answer)
    assert [e.name for e in records.entities] == ["A"]
    assert records.relations == (ExtractedRelation("A", "B", "country", "d", 3.0),)
    assert records.complete
    assert not parse_records(
        format_answer([format_record("entity", "A", "PER", "d")], complete=False)
    ).complete
    assert parse_records(format_answer([])).complete


def test_missing_completion_marker_keeps_the_records() -> None:
    answer = WELL_FORMED.replace("<|COMPLETE|>", "")
    records = parse_records(answer)
    assert not records.complete
    assert len(records.entities) == 2 and len(records.relations) == 1
    assert records.malformed == 0


def test_a_record_cut_off_by_the_answer_limit_is_malformed() -> None:
    answer = '("entity"<|>A<|>PER<|>x)##\n("relationship"<|>A<|>B<|>coun'
    records = parse_records(answer)
    assert [e.name for e in records.entities] == ["A"]
    assert records.relations == ()
    assert (records.malformed, records.complete) == (1, False)


def test_text_after_the_marker_is_ignored() -> None:
    records = parse_records(WELL_FORMED + '\n("entity"<|>Late<|>PER<|>after the end)')
    assert [e.name for e in records.entities] == ["Marie Curie", "Warsaw"]


@pytest.mark.parametrize(
    "answer",
    [
        # odd spacing, case of the kind, single quotes, no parentheses
        " ( ENTITY <|>  Marie Curie <|> PER<|> A physicist. ) ## "
        "Relationship<|>Marie Curie<|>Warsaw<|>place of birth<|>Born there.<|> 9 ##<|complete|>",
        # curly quotes, a marker with spaces inside
        "(“entity”<|>“Marie Curie”<|>PER<|>A physicist.)##\n"
        "('relationship'<|>'Marie Curie'<|>'Warsaw'<|>'place of birth'<|>Born there.<|>'9')\n"
        "<| COMPLETE |>",
        # in a code fence with a language, records one per line without ##
        "```text\n"
        '("entity"<|>Marie Curie<|>PER<|>A physicist.)\n'
        '("relationship"<|>Marie Curie<|>Warsaw<|>place of birth<|>Born there.<|>9)\n'
        "<|COMPLETE|>\n```",
    ],
)
def test_tolerant_of_spacing_case_quotes_fences(answer: str) -> None:
    records = parse_records(answer)
    assert records.entities == (ExtractedEntity("Marie Curie", "PER", "A physicist."),)
    assert records.relations == (
        ExtractedRelation("Marie Curie", "Warsaw", "place of birth", "Born there.", 9.0),
    )
    assert (records.malformed, records.complete) == (0, True)


def test_a_description_over_two_lines_stays_one_record() -> None:
    answer = '("entity"<|>A<|>PER<|>first line\nsecond line)##\n<|COMPLETE|>'
    records = parse_records(answer)
    assert records.entities == (ExtractedEntity("A", "PER", "first line\nsecond line"),)


@pytest.mark.parametrize(
    ("strength", "expected"),
    [("7", 7.0), ("0.5", 0.5), ("high", None), ("", None), ("nan", None), ("8/10", None)],
)
def test_strength_that_is_not_a_number_is_none(strength: str, expected: float | None) -> None:
    answer = f'("relationship"<|>A<|>B<|>country<|>d<|>{strength})##<|COMPLETE|>'
    (relation,) = parse_records(answer).relations
    assert relation.strength == expected


def test_relationship_without_strength_field() -> None:
    (relation,) = parse_records('("relationship"<|>A<|>B<|>country<|>d)').relations
    assert relation == ExtractedRelation("A", "B", "country", "d", None)


@pytest.mark.parametrize(
    ("record", "why"),
    [
        ('("entity"<|>A<|>PER)', "entity with 3 fields"),
        ('("entity"<|>A<|>PER<|>d<|>extra)', "entity with 5 fields"),
        ('("relationship"<|>A<|>B<|>country)', "relationship with 4 fields"),
        ('("relationship"<|>A<|>B<|>country<|>d<|>1<|>x)', "relationship with 7 fields"),
        ('("event"<|>A<|>B<|>d)', "unknown kind"),
        ('("entity"<|>  <|>PER<|>d)', "empty name"),
        ('("entity"<|>"..."<|>PER<|>d)', "a name that is only punctuation"),
        ('("relationship"<|><|>B<|>country<|>d<|>1)', "empty source"),
        ('("relationship"|A|B|country|d|1)', "wrong delimiter"),
        ("entity: A, PER", "a kind without delimiters"),
    ],
)
def test_malformed_records_are_counted_not_guessed(record: str, why: str) -> None:
    answer = f'("entity"<|>Kept<|>ORG<|>d)##\n{record}##\n<|COMPLETE|>'
    records = parse_records(answer)
    assert [e.name for e in records.entities] == ["Kept"], why
    assert records.relations == (), why
    assert records.malformed == 1, why


def test_self_relations_are_malformed_and_counted_apart() -> None:
    answer = (
        '("relationship"<|>The Beatles<|>beatles<|>member of<|>d<|>1)##\n'
        '("relationship"<|>A<|>B<|>country<|>d<|>1)##\n<|COMPLETE|>'
    )
    records = parse_records(answer)
    assert [(r.source, r.target) for r in records.relations] == [("A", "B")]
    assert (records.malformed, records.self_relations) == (1, 1)


def test_prose_is_ignored_not_malformed() -> None:
    answer = "Here are the records you asked for:\n" + WELL_FORMED
    records = parse_records(answer)
    assert (len(records.entities), len(records.relations)) == (2, 1)
    assert (records.malformed, records.ignored) == (0, 1)


@pytest.mark.parametrize("answer", ["", "   ", "<|COMPLETE|>", "```\n```", "##\n##"])
def test_empty_answers(answer: str) -> None:
    records = parse_records(answer)
    assert (records.entities, records.relations, records.malformed) == ((), (), 0)
    assert records.complete == ("COMPLETE" in answer)


def test_never_raises_on_garbage() -> None:
    for answer in ["((((", "<|><|><|>", ")##(", '"', "(entity<|>", "<|COMPLETE|><|COMPLETE|>"]:
        parse_records(answer)


PIECES = ['"', "(", ")", "<|>", "##", "\n", " ", "entity", "relationship", "A", "B", "```", "'"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([*PIECES, COMPLETION_MARKER]), max_size=30))
def test_parser_never_raises_and_counts_are_consistent(pieces: list[str]) -> None:
    records = parse_records("".join(pieces))
    assert records.malformed >= records.self_relations >= 0
    for relation in records.relations:
        assert relation.source.strip() and relation.target.strip()
    for entity in records.entities:
        assert entity.name.strip()


def test_fences_on_the_record_lines() -> None:
    answer = '```("entity"<|>A<|>PER<|>d)##\n("relationship"<|>A<|>B<|>country<|>d<|>1)```'
    records = parse_records(answer)
    assert [e.name for e in records.entities] == ["A"]
    assert records.relations == (ExtractedRelation("A", "B", "country", "d", 1.0),)
    assert records.malformed == 0
