"""``--excerpts given``: chunkmark picks each passage (whole sentences, sized like the examples'
evidence) and the LLM writes only a question it answers."""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from chunkmark.datasets import Document
from chunkmark.errors import LLMError
from chunkmark.llm import build_llm
from chunkmark.synth import examples as steer
from chunkmark.synth.generate import generate
from chunkmark.synth.options import SynthError
from chunkmark.synth.plan import make_passage_plan
from chunkmark.synth.prompt import build_prompt
from cli.app_runner import error_line, invoke

from .conftest import FACT, Scripted, SynthServer, corpus_texts, label
from .conftest import _user as user_of

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

# Sentence ends of the test corpus, found independently of the sentence splitter: every fact
# ends in "metres." and the one saying ends in "saying.".
_END = re.compile(r"(metres|saying)\.")


def passage_of(user: str) -> str:
    return user.split("<passage>\n", 1)[1].split("\n</passage>", 1)[0]


def given_answer(user: str) -> Scripted:
    """A model-like answer to a given-mode prompt: a question about the passage's first fact."""
    facts = FACT.findall(passage_of(user))
    about = label(facts[0]) if facts else "saying"
    return Scripted(text=json.dumps({"question": f"What does fact {about} say?"}))


def run(corpus: Path, out: Path, spec: str, cache: Path, **options: Any) -> Any:
    llm = build_llm(spec, cache_dir=cache, seed=options.get("seed", 0))
    return generate(corpus, llm, out, mode="given", **options)


def run_given(
    server: SynthServer,
    corpus: Path,
    tmp_path: Path,
    responder: Callable[[int, str], Scripted | None] | None = None,
    **options: Any,
) -> tuple[Any, Path]:
    """A given-mode run into ``tmp_path/out`` against ``server``, answering with ``responder``
    (else like a model: :func:`given_answer`)."""
    server.responder = responder or (lambda number, user: given_answer(user))
    out = tmp_path / "out"
    return run(corpus, out, server.openai_spec(), tmp_path / "cache", **options), out


def rows(out: Path) -> list[dict[str, Any]]:
    lines = (out / "questions.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_passages_are_whole_sentences_near_the_length_drawn_and_spread_out() -> None:
    texts = corpus_texts()
    docs = [Document(name, text) for name, text in texts.items()]
    lengths = {"atlas": 300, "bulletin": 150, "chronicle": 240}
    plan = make_passage_plan(
        docs, 12, seed=3, styles=("factoid",), length_of=lambda doc, j: lengths[doc]
    )
    assert len(plan) == 12
    counts = {d.id: sum(1 for s in plan if s.doc_id == d.id) for d in docs}
    total = sum(len(t) for t in texts.values())
    for name, text in texts.items():  # in proportion to length, within one
        assert abs(counts[name] - 12 * len(text) / total) < 1
    sentence = max(len(m) for m in FACT.findall(texts["atlas"]))
    for slot in plan:
        text = texts[slot.doc_id]
        passage = text[slot.start : slot.end]
        # starts where a sentence starts and ends where one ends
        assert slot.start == 0 or text[slot.start - 1] in " \n"
        assert text[slot.start : slot.start + 4] in ("Fact", "The ")
        assert _END.search(text, slot.end - 8, slot.end) is not None
        assert abs(len(passage) - lengths[slot.doc_id]) <= sentence
    for doc in docs:  # one document's passages do not overlap (they fit in its stretches)
        assert counts[doc.id] * (lengths[doc.id] + sentence) <= len(doc.text)
        spans = sorted((s.start, s.end) for s in plan if s.doc_id == doc.id)
        assert all(a[1] <= b[0] for a, b in pairwise(spans))
    again = make_passage_plan(
        docs, 12, seed=3, styles=("factoid",), length_of=lambda doc, j: lengths[doc]
    )
    other = make_passage_plan(
        docs, 12, seed=4, styles=("factoid",), length_of=lambda doc, j: lengths[doc]
    )
    assert again == plan and other != plan


def test_a_passage_longer_than_the_rest_of_its_document_starts_earlier() -> None:
    text = corpus_texts()["chronicle"]
    plan = make_passage_plan(
        [Document("c", text)], 2, seed=0, styles=("factoid",), length_of=lambda d, j: 500
    )
    sentence = max(len(m) for m in FACT.findall(text))
    assert all(abs(s.end - s.start - 500) <= sentence for s in plan)


def test_a_text_without_sentence_marks_gives_a_passage_of_the_length_on_word_boundaries() -> None:
    text = " ".join(f"word{i}" for i in range(400))  # no sentence ends: one "sentence"
    plan = make_passage_plan(
        [Document("d", text)], 2, seed=0, styles=("factoid",), length_of=lambda d, j: 200
    )
    for slot in plan:
        assert 150 <= slot.end - slot.start <= 200
        assert text[slot.start - 1] == " " and text[slot.end] == " "


def test_the_prompt_shows_the_passage_and_asks_for_questions_alone() -> None:
    texts = corpus_texts()
    doc = Document("atlas", texts["atlas"])
    [slot] = make_passage_plan([doc], 1, seed=0, styles=("factoid",), length_of=lambda d, j: 200)
    prompt = build_prompt(doc, slot, mode="given", asked=["What does fact 0-1 say?"],
                          examples=["How tall is the mill?"])  # fmt: skip
    assert passage_of(prompt.user) == texts["atlas"][slot.start : slot.end]
    assert "<text>" not in prompt.user and "passages" not in json.dumps(prompt.schema)
    # three candidate questions, no passages: the schema asks for exactly three strings
    assert prompt.schema["required"] == ["questions"]
    listed = prompt.schema["properties"]["questions"]
    assert (listed["minItems"], listed["maxItems"], listed["items"]) == (3, 3, {"type": "string"})
    assert '{"questions": ["<question 1>", "<question 2>", "<question 3>"]}' in prompt.user
    assert "Ask 3 different specific, factual questions" in prompt.user
    # the examples are shown; the questions already asked are not (a small model copied them)
    assert "- How tall is the mill?" in prompt.user
    assert "What does fact 0-1 say?" not in prompt.user and "already asked" not in prompt.user


def test_each_question_gets_its_passage_as_excerpt_sized_like_the_examples(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    report, out = run_given(
        synth_server, synth_corpus, tmp_path, questions=10,
        examples=("How long is the bridge?",), example_evidence=(180, 420),
    )  # fmt: skip
    assert report.accepted == 10 and report.counts["duplicate"] == 0
    texts = corpus_texts()
    prompts = [passage_of(user_of(r)) for r in synth_server.requests]
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    assert manifest["settings"]["mode"] == "given"
    lengths = []
    for row, shown in zip(rows(out), prompts, strict=True):
        [excerpt] = row["excerpts"]
        assert texts[row["doc_id"]][excerpt["start"] : excerpt["end"]] == shown  # as shown
        assert row["metadata"]["matches"] == ["given"]
        first = label(FACT.findall(shown)[0]) if FACT.findall(shown) else "saying"
        assert row["question"] == f"What does fact {first} say?"
        lengths.append(excerpt["end"] - excerpt["start"])
    # drawn from 180 and 420, each within a sentence (about 60 characters) of what was drawn
    assert all(120 <= n <= 480 for n in lengths) and 200 <= statistics.median(lengths) <= 420


def test_a_repeated_question_is_a_duplicate_asked_again_at_another_temperature(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    same = Scripted(text=json.dumps({"question": "What is the tallest tower?"}))
    synth_server.responder = lambda number, user: same
    out = tmp_path / "out"
    report = run(synth_corpus, out, synth_server.openai_spec(), tmp_path / "cache", questions=4)
    # the first question of each document is new; every later one repeats it
    assert report.accepted == 3 and report.counts["duplicate_exact"] == 3
    temperatures = [r.get("temperature") for r in synth_server.requests]
    assert 0.8 in temperatures and temperatures[0] == 0


def candidates(*questions: str) -> Scripted:
    return Scripted(text=json.dumps({"questions": list(questions)}))


def test_the_first_new_candidate_is_kept_and_repeats_before_it_cost_no_request(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    # every answer leads with the same question; the second candidate names the passage's fact
    def answer(number: int, user: str) -> Scripted:
        facts = FACT.findall(passage_of(user))
        about = label(facts[0]) if facts else "saying"
        return candidates("What is the tallest tower?", f"What does fact {about} say?", "")

    report, out = run_given(synth_server, synth_corpus, tmp_path, answer, questions=6)
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    by_doc: dict[str, list[str]] = {}
    for row in rows(out):
        by_doc.setdefault(row["doc_id"], []).append(row["question"])
    # each document's first slot keeps the leading question, its later slots the second one
    expected_repeats = 0
    for questions in by_doc.values():
        assert questions[0] == "What is the tallest tower?"
        assert all(q.startswith("What does fact ") for q in questions[1:])
        expected_repeats += len(questions) - 1
    assert report.accepted == 6 and len(synth_server.requests) == 6  # no request spent again
    counts = manifest["counts"]
    assert counts["duplicate"] == 0 and counts["answers"] == 6
    assert counts["candidates"] == 6 + expected_repeats  # the kept ones and those before them
    assert counts["candidates_duplicate"] == expected_repeats >= 3
    assert manifest["settings"]["candidates"] == 3


def test_an_answer_whose_candidates_all_repeat_is_one_duplicate_and_is_asked_again(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    # the first answer of a document is new; later first answers repeat it twice over (and
    # once within the answer itself); answers at the retry temperature are new
    def answer(number: int, user: str) -> Scripted:
        if "Your previous answer" in user:
            return candidates(f"What is said in request {number}?", "", "")
        return candidates(
            "Which tower is tallest?", "Which tower is tallest?", "What is the tallest tower?"
        )

    synth_server.responder = answer
    out = tmp_path / "out"
    report = run(synth_corpus, out, synth_server.openai_spec(), tmp_path / "cache", questions=4)
    counts = report.counts
    # three documents: each first slot keeps its first candidate; the fourth slot's three are
    # all repeats (exactly, exactly, nearly), so the answer is one duplicate and is asked again
    assert report.accepted == 4 and counts["duplicate"] == counts["duplicate_exact"] == 1
    assert counts["candidates_duplicate"] == 3 and counts["candidates"] == 3 + 3 + 1
    assert len(synth_server.requests) == 5
    again = [r for r in synth_server.requests if "Your previous answer" in user_of(r)]
    assert len(again) == 1 and again[0].get("temperature") == 0.8
    assert "question 1: this question" in user_of(again[0])


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"styles": ("multi",)}, "cannot ask the multi style"),
        ({"window_questions": 2}, "--window-questions must be 1"),
    ],
)
def test_what_given_passages_cannot_do_is_refused(
    options: dict[str, Any], expected: str, synth_corpus: Path, tmp_path: Path
) -> None:
    llm = build_llm("fake()", cache_dir=None)
    with pytest.raises(SynthError, match=re.escape(expected)):
        generate(synth_corpus, llm, tmp_path / "out", mode="given", **options)


def test_cli_excerpts_given(synth_server: SynthServer, synth_corpus: Path, tmp_path: Path) -> None:
    synth_server.responder = lambda number, user: given_answer(user)
    out = tmp_path / "out"
    result = invoke(
        "synth", "generate", str(synth_corpus), "--llm", synth_server.openai_spec(),
        "--out", str(out), "--questions", "3", "--excerpts", "given", "--evidence", "sentence",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lengths = [r["excerpts"][0]["end"] - r["excerpts"][0]["start"] for r in rows(out)]
    assert len(lengths) == 3 and all(40 <= n <= 360 for n in lengths)
    result = invoke(
        "synth", "generate", str(synth_corpus), "--llm", synth_server.openai_spec(),
        "--out", str(tmp_path / "o2"), "--excerpts", "given", "--style", "multi",
    )  # fmt: skip
    assert result.exit_code != 0
    assert "cannot ask the multi style" in error_line(result)


def test_the_dry_run_counts_the_tokens_of_the_prompts_a_given_run_sends(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    from chunkmark.costs.meter import MESSAGE_TOKENS
    from chunkmark.synth.generate import estimate
    from chunkmark.tokenizers import count_tokens

    synth_server.responder = lambda number, user: given_answer(user)
    spec = synth_server.openai_spec()
    steer = {"examples": ("How long is the bridge?",), "example_evidence": (180, 420)}
    llm = build_llm(spec, cache_dir=None)
    found = estimate(synth_corpus, llm, tmp_path / "out", mode="given", questions=5, **steer)
    run(synth_corpus, tmp_path / "out", spec, tmp_path / "cache", questions=5, **steer)
    sent = [r["messages"] for r in synth_server.requests]
    assert found.slots == found.calls == len(sent) == 5  # every answer accepted at once
    # no earlier question is listed in a given prompt, so the estimate is the prompts' own
    # tokens, counted here from what the server received
    tokens = [sum(count_tokens([m["content"] for m in ms], "cl100k_base")) for ms in sent]
    assert found.input_tokens == sum(tokens) + 5 * MESSAGE_TOKENS


def test_an_example_asked_again_is_not_shown_in_the_slots_next_prompts(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    examples = ("How long is the mill near the hill?", "Which bridge is the longest?")

    def copy_first_example(number: int, user: str) -> Scripted:
        shown = [e for e in examples if f"- {e}" in user]  # copies the first example it sees
        question = shown[0] if shown else "What does the passage's first fact say?"
        return Scripted(text=json.dumps({"question": question}))

    report, out = run_given(
        synth_server, synth_corpus, tmp_path, copy_first_example, questions=1, examples=examples
    )
    prompts = [user_of(r) for r in synth_server.requests]
    # first both examples, then without the one copied, then without either
    assert [sum(f"- {e}" in p for e in examples) for p in prompts] == [2, 1, 0]
    assert report.accepted == 1 and report.counts["duplicate_example"] == 2
    assert rows(out)[0]["question"] == "What does the passage's first fact say?"


def copy_first_example_once(examples: tuple[str, ...]) -> Callable[[int, str], Scripted]:
    """A model that, in a slot's first request, asks the first example it is shown again."""

    def answer(number: int, user: str) -> Scripted:
        shown = [e for e in examples if f"- {e}" in user]
        if shown and "none of the answers above" not in user:  # a slot's first request
            return Scripted(text=json.dumps({"question": shown[0]}))
        return given_answer(user)

    return answer


def test_an_example_asked_again_is_withheld_from_every_later_slot(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    examples = ("How long is the mill near the hill?", "Which bridge is the longest?")

    report, _ = run_given(
        synth_server, synth_corpus, tmp_path, copy_first_example_once(examples), questions=4,
        examples=examples,
    )  # fmt: skip
    shown = [sum(f"- {e}" in user_of(r) for e in examples) for r in synth_server.requests]
    # slot 0 copies the first example and is asked again without it; slot 1 starts without it
    # and copies the second; every later request shows neither
    assert shown[:4] == [2, 1, 1, 0], shown
    assert all(n == 0 for n in shown[4:])
    assert report.counts["duplicate_example"] == 2 and report.accepted == 4


def test_a_resumed_run_still_withholds_the_examples_copied_before_the_stop(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    examples = ("How long is the mill near the hill?", "Which bridge is the longest?")

    synth_server.as_usual_next(2)  # slot 0: the copy, then its correction
    synth_server.fail_next(401)  # the run stops at slot 1's first request
    with pytest.raises(LLMError, match="HTTP 401"):
        run_given(
            synth_server, synth_corpus, tmp_path, copy_first_example_once(examples), questions=4,
            examples=examples,
        )  # fmt: skip
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text("utf-8"))
    assert manifest["plan"][0]["copied"] == [examples[0]]
    assert all("copied" not in e for e in manifest["plan"][1:])
    synth_server.requests.clear()
    report, out = run_given(
        synth_server, synth_corpus, tmp_path, copy_first_example_once(examples), questions=4,
        examples=examples,
    )  # fmt: skip
    shown = [sum(f"- {e}" in user_of(r) for e in examples) for r in synth_server.requests]
    # the resumed slot 1 starts without the example slot 0 copied before the stop
    assert shown[:3] == [1, 0, 0], shown
    assert report.accepted == 4 and report.resumed == 1
    kept = json.loads((out / "manifest.json").read_text("utf-8"))["plan"]
    assert kept[0]["copied"] == [examples[0]] and kept[1]["copied"] == [examples[1]]


def test_given_passages_are_at_most_window_chars_long(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    report, out = run_given(
        synth_server, synth_corpus, tmp_path, questions=3,
        examples=("How long is the bridge?",), example_evidence=(2000,), window_chars=300,
    )  # fmt: skip
    assert report.accepted == 3
    lengths = [r["excerpts"][0]["end"] - r["excerpts"][0]["start"] for r in rows(out)]
    # drawn 2,000, capped at 300: within a sentence (about 60 characters) of the cap
    assert all(200 <= n <= 360 for n in lengths)


def test_a_slot_is_shown_examples_asked_of_other_documents(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    examples = ("Atlas one?", "Atlas two?", "Bulletin one?", "Chronicle one?", "Anywhere?")
    docs = ("atlas", "atlas", "bulletin", "chronicle", None)
    report, _ = run_given(
        synth_server, synth_corpus, tmp_path, questions=6, examples=examples, example_docs=docs
    )
    assert report.accepted == 6
    for request in synth_server.requests:
        user = user_of(request)
        doc = user.split("Document: ", 1)[1].split(" ", 1)[0]
        listed = {e for e in examples if f"- {e}" in user}
        mine = {e for e, d in zip(examples, docs, strict=True) if d == doc}
        theirs = {e for e, d in zip(examples, docs, strict=True) if d is not None and d != doc}
        assert listed == theirs and not listed & mine, (doc, listed)


def test_examples_without_documents_or_only_of_this_one_are_all_shown() -> None:
    from chunkmark.synth.examples import elsewhere

    assert elsewhere(["a", "b"], [None, None], "x") == ["a", "b"]
    assert elsewhere(["a", "b"], ["x", "x"], "x") == ["a", "b"]
    assert elsewhere(["a", "b", "c"], ["x", "y", None], "x") == ["b"]
    assert elsewhere(["a", "b"], [], "x") == ["a", "b"]


def test_an_examples_file_says_which_document_each_was_asked_of(tmp_path: Path) -> None:
    from chunkmark.synth.examples import read_examples

    path = tmp_path / "examples.jsonl"
    path.write_text(
        '{"question": "Q1?", "doc_id": "atlas"}\n{"question": "Q2?"}\n', encoding="utf-8"
    )
    assert [e.doc_id for e in read_examples(path)] == ["atlas", None]


def test_question_forms_are_drawn_from_the_examples_first_words() -> None:
    examples = ["Why did the mill close?", "how tall is it?", "What is the bridge made of?",
                "Is the tower old?", '"Who built it?"']  # fmt: skip
    assert [steer.question_form(q) for q in examples] == ["why", "how", "what", None, "who"]
    drawn = [steer.target_form(examples, 0, f"doc:{i}") for i in range(400)]
    counts = Counter(drawn)
    # an empirical draw: only the examples' forms, each about a quarter of the windows
    assert set(counts) == {"why", "how", "what", "who"}
    assert all(70 <= n <= 130 for n in counts.values())
    assert drawn == [steer.target_form(examples, 0, f"doc:{i}") for i in range(400)]
    assert drawn != [steer.target_form(examples, 1, f"doc:{i}") for i in range(400)]
    assert steer.target_form(["Is it?", "Summarize the meeting."], 0, "doc:0") is None


def test_a_steered_given_prompt_asks_for_the_form_drawn_for_its_passage(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    examples = ("Why is the tower tall?", "How long is the bridge?")
    run_given(synth_server, synth_corpus, tmp_path, questions=8, examples=examples)
    asked = [
        re.findall(r'Start every question with "(\w+)"', user_of(r)) for r in synth_server.requests
    ]
    assert all(len(a) == 1 for a in asked)
    assert {a[0] for a in asked} == {"Why", "How"}  # 8 passages, both forms drawn
    synth_server.requests.clear()
    run_given(synth_server, synth_corpus, tmp_path / "plain", questions=4)
    assert not any("Start every question" in user_of(r) for r in synth_server.requests)


def test_more_candidates_are_asked_for_and_read_when_set(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    # five candidates an answer: the first four repeat one question, the fifth is new
    def answer(number: int, user: str) -> Scripted:
        repeats = ["What is the tallest tower?"] * 4
        return candidates(*repeats, f"What does request {number} ask?")

    report, out = run_given(synth_server, synth_corpus, tmp_path, answer, questions=4, candidates=5)
    assert report.accepted == 4 and len(synth_server.requests) == 4
    request = synth_server.requests[0]
    listed = request["response_format"]["json_schema"]["schema"]["properties"]["questions"]
    assert listed["minItems"] == listed["maxItems"] == 5
    assert "Ask 5 different" in user_of(request)
    assert json.loads(user_of(request).split("in this form:\n", 1)[1].split("\n", 1)[0]) == {
        "questions": [f"<question {n}>" for n in range(1, 6)]
    }
    kept = [row["question"] for row in rows(out)]
    # each document's first slot keeps the repeated question (new to it), the others the fifth
    assert sum(q == "What is the tallest tower?" for q in kept) == 3
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    assert manifest["settings"]["candidates"] == 5
    with pytest.raises(SynthError, match=re.escape("--candidates must be 1 to 8, got 9")):
        run_given(synth_server, synth_corpus, tmp_path / "nine", answer, questions=1, candidates=9)
