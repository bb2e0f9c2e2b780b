"""The converters' shared steps: a question's evidence placed piece by piece (``Evidence``), a
kept question added and counted (``Converted.keep``)."""

from __future__ import annotations

from chunkmark.datasets.suite.base import Converted, Evidence
from chunkmark.datasets.suite.locate import Locator
from chunkmark.spans import Span

DOC = "Alpha beta.  Gamma delta. Alpha beta."


def test_evidence_tallies_each_piece_and_drops_for_the_first_miss() -> None:
    out = Converted()
    evidence = Evidence(out.tally)
    locator = Locator(DOC)
    evidence.add(locator.locate("Gamma delta.", many="first"), "piece 1")
    evidence.add(locator.locate("Gamma  delta.", many="first"), "piece 2")  # spaces normalised
    evidence.add(locator.locate("Alpha beta.", many="first"), "piece 3")  # twice: the first
    evidence.add(locator.locate("Epsilon", many="first"), "piece 4")
    evidence.add(locator.locate("   ", many="first"), "piece 5")
    # "Gamma delta." starts at character 13 (after "Alpha beta." and two spaces).
    assert evidence.spans == [Span(13, 25), Span(13, 25), Span(0, 11)]
    assert out.tally.placed == {"exact": 2, "normalised": 1}
    assert out.tally.first_of_several == 1
    assert out.tally.unplaced == {"evidence not found": 1, "empty evidence": 1}
    assert evidence.problem == ("evidence not found", "piece 4")
    assert evidence.dropped("q1", "doc")
    assert out.tally.dropped == [
        {"id": "q1", "doc_id": "doc", "reason": "evidence not found", "detail": "piece 4"}
    ]
    assert out.tally.raw_questions == 1 and out.tally.kept == 0


def test_evidence_placed_whole_is_not_dropped() -> None:
    out = Converted()
    evidence = Evidence(out.tally)
    evidence.add(Locator(DOC).locate("delta", many="drop"), "piece 1")
    assert not evidence.dropped("q1", "doc")
    assert out.tally.dropped == [] and out.tally.raw_questions == 0


def test_keep_merges_the_spans_and_counts_the_question() -> None:
    out = Converted()
    spans = [Span(10, 20), Span(0, 5), Span(15, 30), Span(30, 31)]
    out.keep("q1", "What?", "doc", spans, {"scope": "document"}, split="train", structural=True)
    out.keep("q2", "Why?", "doc", [Span(3, 4)], {})
    (q1, q2) = out.questions
    # overlapping spans merged, touching ones kept apart
    assert q1.excerpts == (Span(0, 5), Span(10, 30), Span(30, 31))
    assert (q1.id, q1.text, q1.doc_id, q1.metadata) == ("q1", "What?", "doc", {"scope": "document"})
    assert q2.excerpts == (Span(3, 4),)
    assert out.tally.placed == {"structural": 4}  # each span given, before merging
    assert out.tally.kept == 2 and out.tally.raw_questions == 2
    assert out.tally.splits == {"train": 1}
