"""``--pick specific``: of an answer's candidate questions, the one whose words best single out
its passage within the document (BM25 over stretches of the passage's length)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from chunkmark.llm import build_llm
from chunkmark.spans import Span
from chunkmark.synth.examples import evidence_lengths, evidence_span, read_examples
from chunkmark.synth.generate import generate
from chunkmark.synth.options import SynthError
from chunkmark.synth.specific import (
    Share,
    examples_share,
    first_like,
    margins,
    most_specific,
    stretches,
    wants_specific,
)

from .conftest import FACT, NOUNS, Scripted, SynthServer, corpus_texts
from .test_given import candidates, passage_of, rows, run_given


def test_stretches_are_the_passage_then_the_rest_cut_to_its_length() -> None:
    assert stretches(100, Span(40, 60)) == [
        Span(40, 60), Span(0, 20), Span(20, 40), Span(60, 80), Span(80, 100)
    ]  # fmt: skip
    assert stretches(50, Span(0, 20)) == [Span(0, 20), Span(20, 40), Span(40, 50)]
    assert stretches(45, Span(30, 45)) == [Span(30, 45), Span(0, 15), Span(15, 30)]
    assert stretches(20, Span(0, 20)) == [Span(0, 20)]


# Three stretches of four five-character words (no stop words, one token each): the passage is
# the middle one.
BEFORE, PASSAGE, AFTER = "lamp desk lamp rope ", "wolf moon lamp fern ", "rope desk sand lamp "
TEXT = BEFORE + PASSAGE + AFTER
WHERE = Span(len(BEFORE), len(BEFORE) + len(PASSAGE))


def lucene_bm25(
    query: list[str], docs: list[list[str]], k1: float = 1.5, b: float = 0.75
) -> list[float]:
    """BM25 as Lucene scores it (idf ln(1 + (N - df + 0.5) / (df + 0.5)), term frequency
    tf / (tf + k1 (1 - b + b |d| / avgdl))), written out for these tests."""
    n, avgdl = len(docs), sum(len(d) for d in docs) / len(docs)
    out = []
    for d in docs:
        score = 0.0
        for term in query:
            df = sum(term in other for other in docs)
            tf = d.count(term)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf / (tf + k1 * (1 - b + b * len(d) / avgdl))
        out.append(score)
    return out


def test_the_margin_is_the_passages_bm25_score_less_the_best_other_stretch() -> None:
    docs = [PASSAGE.split(), BEFORE.split(), AFTER.split()]
    wolf_lamp = lucene_bm25(["wolf", "lamp"], docs)
    desk = lucene_bm25(["desk"], docs)
    found = margins(["Where is the wolf's lamp?", "Which desk?", "Is it of the?"], TEXT, WHERE)
    assert found[0] == pytest.approx(wolf_lamp[0] - max(wolf_lamp[1:]), rel=1e-4)
    assert found[0] > 0  # only the passage has the wolf
    assert found[1] == pytest.approx(-max(desk[1:]), rel=1e-4) and found[1] < 0
    assert found[2] == 0.0  # stop words alone say nothing
    assert most_specific(["Which desk?", "Where is the wolf's lamp?"], TEXT, WHERE) == 1
    assert most_specific(["Is it of the?", "Which desk?"], TEXT, WHERE) == 0
    assert margins(["wolf"], PASSAGE, Span(0, len(PASSAGE))) == [0.0]  # nothing else to beat


def first_length(text: str) -> str:
    """The length in metres that the first fact of ``text`` states."""
    found = re.search(r"measures (\d+) metres", FACT.findall(text)[0])
    assert found is not None
    return found.group(1)


def specific_or_not(number: int, user: str) -> Scripted:
    """Three candidates: words found all over the document (a noun and "metres"), the length
    of the passage's first fact (a number found nowhere else), and an empty one."""
    return candidates(
        f"How many metres does the {NOUNS[number % len(NOUNS)]} measure?",
        f"Which structure measures {first_length(passage_of(user))} metres?",
        "",
    )


@pytest.mark.parametrize("pick", ["first", "specific"])
def test_pick_specific_keeps_the_candidate_that_singles_out_its_passage(
    pick: str, synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    report, out = run_given(
        synth_server, synth_corpus, tmp_path, specific_or_not, questions=6, pick=pick
    )
    kept = [row["question"] for row in rows(out)]
    specific = [q.startswith("Which structure measures ") for q in kept]
    counts = json.loads((out / "manifest.json").read_text("utf-8"))["counts"]
    assert report.accepted == 6 and counts["answers"] == 6
    if pick == "specific":
        assert all(specific)  # never the first candidate, though it passes the checks
        assert counts["candidates"] == 3 * 6  # every candidate was read
    else:
        assert not any(specific)  # the first new candidate, each time
        assert counts["candidates"] == 6
    for row in rows(out):  # the kept number is the passage's own
        if row["question"].startswith("Which structure"):
            number = row["question"].split()[3]
            assert f"measures {number} metres" in row["excerpts"][0]["text"]
    settings = json.loads((out / "manifest.json").read_text("utf-8"))["settings"]
    assert settings["pick"] == pick


def test_pick_specific_needs_given_passages(synth_corpus: Path, tmp_path: Path) -> None:
    llm = build_llm("fake()", cache_dir=None)
    with pytest.raises(SynthError, match=re.escape("--pick specific chooses among")):
        generate(synth_corpus, llm, tmp_path / "out", mode="exact", pick="specific")
    with pytest.raises(SynthError, match=re.escape("Unknown --pick 'best'")):
        generate(synth_corpus, llm, tmp_path / "out", mode="given", pick="best")


def test_first_like_keeps_the_first_candidate_of_the_kind_drawn() -> None:
    questions = ["Which desk?", "Where is the wolf's lamp?", "Is the moon there?"]
    assert first_like(questions, TEXT, WHERE, specific=True) == 1
    assert first_like(questions, TEXT, WHERE, specific=False) == 0
    only_specific = ["Where is the wolf?", "Which fern?"]
    assert first_like(only_specific, TEXT, WHERE, specific=False) == 0  # none: the first


def test_the_examples_share_counts_those_that_single_out_their_evidence() -> None:
    texts = {"d": TEXT, "short": "wolf"}
    share = examples_share(
        ["Where is the wolf's lamp?", "Which desk?", "Is the fern here?", "Wolf?", "Moon?", "Sand?"],
        ["d", "d", "d", "elsewhere", None, "d"],
        [(WHERE.start, WHERE.end), (WHERE.start, WHERE.end), (WHERE.start, WHERE.end),
         (0, 4), (0, 4), (50, 99)],
    texts)  # fmt: skip
    # the last three are not located: a document outside the corpus, none, a span past the end
    assert share == Share(specific=2, located=3) and share.fraction == pytest.approx(2 / 3)
    draws = [wants_specific(share, 7, slot) for slot in range(3000)]
    assert 1850 <= sum(draws) <= 2150  # two thirds of 3,000, within about 5 standard deviations
    assert draws == [wants_specific(share, 7, slot) for slot in range(3000)]
    assert draws != [wants_specific(share, 8, slot) for slot in range(3000)]
    assert not any(wants_specific(Share(0, 5), 7, slot) for slot in range(100))


def absent_noun_or_number(number: int, user: str) -> Scripted:
    """Three candidates: a noun of the corpus the passage does not name (a margin below 0; the
    request's number, below any length of the corpus, keeps it new), the length of the
    passage's first fact (a number found nowhere else: above 0), and an empty one."""
    passage = passage_of(user)
    absent = next(n for n in NOUNS if n not in passage)
    return candidates(
        f"Which {absent} is request {number} about?",
        f"Which structure measures {first_length(passage)} metres?",
        "",
    )


def test_pick_examples_keeps_one_that_singles_out_its_passage_as_often_as_the_examples(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    text = corpus_texts()["atlas"]
    facts = [(m.start(), m.end(), m.group()) for m in FACT.finditer(text)]
    rows_out = []
    for start, end, fact_text in facts[:6]:  # three that single out their fact, three that don't
        absent = next(n for n in NOUNS if n not in fact_text)
        for question in (
            f"What is {first_length(fact_text)} metres long?",
            f"Where is a {absent}?",
        ):
            rows_out.append({"question": question, "doc_id": "atlas",
                             "excerpts": [{"start": start, "end": end}]})  # fmt: skip
    rows_out = rows_out[0::4] + rows_out[3::4]  # facts 0, 2, 4 by number; 1, 3, 5 by noun
    path = tmp_path / "examples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows_out), encoding="utf-8")
    steering = read_examples(path)
    report, out = run_given(
        synth_server, synth_corpus, tmp_path, absent_noun_or_number, questions=12, pick="examples",
        examples=tuple(e.question for e in steering),
        example_docs=tuple(e.doc_id for e in steering),
        example_spans=tuple(evidence_span(e) for e in steering),
        example_evidence=evidence_lengths(steering),
    )  # fmt: skip
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    assert manifest["examples_specific"] == {"specific": 3, "located": 6}
    wanted = {entry["slot"]: entry["specific"] for entry in manifest["plan"]}
    assert 0 < sum(wanted.values()) < len(wanted)  # both kinds drawn
    kept = {int(row["id"][1:]): row["question"] for row in rows(out)}  # ids name their slot
    assert report.accepted == 12
    for slot, question in kept.items():
        assert question.startswith("Which structure measures ") == wanted[slot]


def test_auto_picks_by_the_examples_when_their_evidence_is_in_the_corpus(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    text = corpus_texts()["atlas"]
    start, end = next(FACT.finditer(text)).span()
    found = {"atlas": (start, end), "elsewhere": (start, end)}  # the second: not of this corpus
    picks = {}
    for where, span in found.items():
        _, out = run_given(
            synth_server, synth_corpus, tmp_path / where, absent_noun_or_number, questions=2,
            examples=("How long is it?",), example_docs=(where,), example_spans=(span,),
            example_evidence=(end - start,),  # passages of a fact or two
        )  # fmt: skip
        picks[where] = json.loads((out / "manifest.json").read_text("utf-8"))["settings"]["pick"]
    _, plain = run_given(synth_server, synth_corpus, tmp_path / "plain", questions=2)
    picks["none"] = json.loads((plain / "manifest.json").read_text("utf-8"))["settings"]["pick"]
    assert picks == {"atlas": "examples", "elsewhere": "first", "none": "first"}
    with pytest.raises(SynthError, match="found none of the examples' evidence in this corpus"):
        run_given(
            synth_server, synth_corpus, tmp_path / "explicit", absent_noun_or_number,
            questions=2, pick="examples", examples=("How long is it?",),
            example_docs=("elsewhere",), example_spans=((start, end),),
            example_evidence=(end - start,),
        )  # fmt: skip
