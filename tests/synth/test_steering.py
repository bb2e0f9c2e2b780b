"""Steering a generation by real questions (``--examples``, ``--evidence``), near-duplicates
and their stages, several questions a window with the window as the prompt's stable prefix,
llama.cpp's ``cache_prompt`` for a server on this machine, and the document filter."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from chunkmark.datasets import Document
from chunkmark.llm import build_llm, identity_spec
from chunkmark.synth import examples as steer
from chunkmark.synth.answers import duplicate_stage, near_duplicate
from chunkmark.synth.generate import generate
from chunkmark.synth.options import SynthError
from chunkmark.synth.plan import make_plan
from chunkmark.synth.prompt import build_prompt, focus_pieces
from cli.app_runner import error_line, invoke

from .conftest import FACT, Scripted, SynthServer, asked_section, corpus_texts, window_text
from .conftest import _user as user_of

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

WINDOW = 600


def run(corpus: Path, out: Path, spec: str, cache: Path, **options: Any) -> Any:
    options.setdefault("window_chars", WINDOW)
    llm = build_llm(spec, cache_dir=cache, seed=options.get("seed", 0))
    return generate(corpus, llm, out, **options)


def manifest(out: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((out / "manifest.json").read_text("utf-8"))
    return found


def questions(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "questions.jsonl").read_text("utf-8").splitlines()]


# --- reading examples ---------------------------------------------------------------------------


def test_examples_read_from_jsonl_with_evidence_or_plain_text(tmp_path: Path) -> None:
    jsonl = tmp_path / "q.jsonl"
    rows = [
        {"question": "Who  built the mill?", "excerpts": [{"text": "x" * 120}]},
        {"question": "Which two?", "excerpts": [{"start": 10, "end": 60}, {"text": "y" * 30}]},
        {"question": "Why?", "metadata": {"type": "multi-hop"}},
        {"question": "When?"},
    ]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n", encoding="utf-8")
    found = steer.read_examples(jsonl)
    assert [e.question for e in found] == ["Who built the mill?", "Which two?", "Why?", "When?"]
    assert [e.evidence for e in found] == [(120,), (50, 30), (), ()]
    assert [e.style for e in found] == [None, "multi", "multi", None]
    assert steer.evidence_lengths(found) == (30, 50, 120)
    # 2 of 4 multi: half the styles dealt are multi
    dealt = steer.styles_of(found)
    assert dealt is not None and dealt.count("multi") == dealt.count("factoid") == 10
    plain = tmp_path / "q.txt"
    plain.write_text("How tall is it?\n\n  What  is it?\n", encoding="utf-8")
    assert steer.read_examples(plain) == (
        steer.Example("How tall is it?"),
        steer.Example("What is it?"),
    )
    assert steer.styles_of(steer.read_examples(plain)) is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"question": "ok"}\n{"question": ', "line 2 is not JSON"),
        ('{"question": "ok"}\n{"text": "no question"}', "line 2 has no 'question' text"),
        ('{"question": "q", "excerpts": [{"start": 5}]}', "line 1: an excerpt has neither"),
    ],
)
def test_a_bad_examples_line_names_file_and_line(tmp_path: Path, line: str, expected: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line, encoding="utf-8")
    with pytest.raises(SynthError) as caught:
        steer.read_examples(path)
    assert f"{path} {expected}" in str(caught.value)


def test_evidence_targets_are_drawn_from_the_examples_lengths() -> None:
    lengths = (100, 200, 900)
    drawn = [steer.target_length(lengths, None, 0, f"doc:{i}") for i in range(300)]
    assert set(drawn) == set(lengths)  # an empirical draw: only the examples' own lengths
    assert steer.target_length(lengths, None, 0, "doc:7") == drawn[7]  # fixed by seed and window
    sized = [steer.target_length((), "passage", 0, f"d:{i}") for i in range(200)]
    assert all(s is not None and 300 <= s <= 1200 for s in sized)
    assert steer.target_length((), None, 0, "d") is None


# --- duplicates --------------------------------------------------------------------------------


def test_near_duplicates() -> None:
    assert near_duplicate(
        "What did the farmer do after washing the sheep?",
        "What did the farmer do after he washed the sheep?",
    )
    assert not near_duplicate("What is the name of the king?", "What is the name of the queen?")
    assert not near_duplicate("How tall was the tower in 1901?", "How tall was the tower in 1950?")
    asked = ["Who is the main character of the story?"]
    assert duplicate_stage("who is the MAIN character of the story", asked) == "duplicate_exact"
    assert duplicate_stage("Who's the story's main character?", asked) == "duplicate_near"
    assert duplicate_stage("Where does the story end?", asked, ["Where does the story end"]) == (
        "duplicate_example"
    )
    assert duplicate_stage("Why did the ram refuse to talk?", asked) is None


def test_duplicates_are_counted_by_stage_and_examples_are_never_accepted(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    example = "Which structure near the square is the tallest?"

    def repeat(number: int, user: str) -> Scripted | None:
        if "Your previous answer" in user:
            return None  # the usual answer: a new fact
        facts = FACT.findall(window_text(user))
        asked = asked_section(user)
        if asked:  # an earlier question reworded
            first = asked.splitlines()[1].removeprefix("- ")
            again = first.replace("What does", "What exactly does")
            return Scripted(json.dumps({"question": again, "passages": facts[-1:]}))
        return Scripted(json.dumps({"question": example, "passages": facts[:1]}))

    synth_server.responder = repeat
    out = tmp_path / "out"
    report = run(
        synth_corpus, out, synth_server.openai_spec(), tmp_path / "cache", questions=6,
        examples=(example,), window_questions=2,
    )  # fmt: skip
    c = manifest(out)["counts"]
    assert report.accepted == 6
    assert c["duplicate_example"] == 3  # every document's first question repeated the example
    assert c["duplicate_near"] == 3  # every second question reworded the first
    assert c["duplicate"] == c["duplicate_exact"] + c["duplicate_near"] + c["duplicate_example"]
    written = [q["question"] for q in questions(out)]
    assert example not in written and len(set(written)) == len(written)
    assert all(sum(q["metadata"]["rejected"].values()) == 2 for q in questions(out))


# --- evidence sizing -----------------------------------------------------------------------------


def sized_answer(user: str) -> Scripted | None:
    """A model that follows the length asked for: consecutive facts of one line of the window,
    as many as it takes to reach it."""
    asked = re.search(r"about ([\d,]+) characters long", user)
    if asked is None:
        return None
    want = int(asked.group(1).replace(",", ""))
    used = set(re.findall(r"\d+-\d+", asked_section(user)))
    for line in window_text(user).splitlines():
        facts = FACT.findall(line)
        fresh = [f for f in facts if f.split(":")[0].split()[1] not in used]
        if not fresh:
            continue
        start = line.index(fresh[0])
        end = start
        for f in facts[facts.index(fresh[0]) :]:
            end = line.index(f) + len(f)
            if end - start >= want:
                break
        label = fresh[0].split(":")[0].split()[1]
        return Scripted(
            json.dumps({"question": f"What does fact {label} say?", "passages": [line[start:end]]})
        )
    return None


def test_evidence_is_sized_like_the_examples(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    synth_server.responder = lambda number, user: sized_answer(user)
    out = tmp_path / "out"
    report = run(
        synth_corpus, out, synth_server.openai_spec(), tmp_path / "cache", questions=6,
        examples=("How long is it?",), example_evidence=(120, 170),
    )  # fmt: skip
    assert report.accepted == 6
    prompts = [user_of(r) for r in synth_server.requests]
    asked = [re.search(r"about ([\d,]+) characters long", p) for p in prompts]
    assert {int(a.group(1)) for a in asked if a} <= {120, 170} and all(asked)
    lengths = [sum(e["end"] - e["start"] for e in q["excerpts"]) for q in questions(out)]
    assert min(lengths) >= steer.SHORTEST_SHARE * 120 and max(lengths) > 150


def test_evidence_too_short_is_rejected_and_said(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    # the usual answer cites one fact (about 55 characters); 400 asked: it is too short
    out = tmp_path / "out"
    run(
        synth_corpus, out, synth_server.openai_spec(), tmp_path / "cache", questions=2,
        evidence="section",
    )  # fmt: skip
    c = manifest(out)["counts"]
    assert c["too_short"] == 2 * 3 and c["accepted"] == 0
    last = user_of(synth_server.requests[-1])
    assert "should be about" in last and "so cite all of it" in last


# --- several questions a window, the prefix and the prompt cache --------------------------------


def test_a_windows_questions_follow_each_other_and_share_the_prompt_prefix() -> None:
    texts = corpus_texts()
    doc = Document("atlas", texts["atlas"])
    plan = make_plan([doc], 7, seed=0, window_chars=WINDOW, styles=("factoid",), window_questions=3)
    windows = [(s.start, s.end) for s in plan]
    assert len(plan) == 7 and len(set(windows)) == 3
    assert windows[0] == windows[1] == windows[2] != windows[3] == windows[4] == windows[5]
    once = make_plan([doc], 7, seed=0, window_chars=WINDOW, styles=("factoid",))
    assert len({(s.start, s.end) for s in once}) > 3  # without it: a new window a question
    first = build_prompt(doc, plan[0], mode="exact", evidence_chars=300, examples=["E?"])
    later = build_prompt(
        doc, plan[1], mode="exact", asked=["What does fact 0-0 say?"], evidence_chars=300,
        examples=["E?"],
    )  # fmt: skip
    window = doc.text[plan[0].start : plan[0].end]
    shared = len(_common_prefix(first.user, later.user))
    assert first.system == later.system
    assert first.user.index(window) + len(window) <= shared  # the whole window is shared
    assert later.user.index(window) < later.user.index("about 300 characters")
    # the questions asked come right after the window, the instructions after them
    assert later.user.index(window) < later.user.index("- What does fact 0-0 say?")
    assert later.user.index("- What does fact 0-0 say?") < later.user.index("- E?")


def test_each_question_of_a_window_is_pointed_at_its_own_part() -> None:
    for count in range(1, 40):
        for parts in range(1, 6):
            ranges = [focus_pieces(count, part, parts) for part in range(parts)]
            assert all(1 <= a <= b <= count for a, b in ranges)
            if parts <= count:  # the parts tile the pieces, in order
                covered = [n for a, b in ranges for n in range(a, b + 1)]
                assert covered == list(range(1, count + 1))
    doc = Document("atlas", corpus_texts()["atlas"])
    plan = make_plan([doc], 3, seed=0, window_chars=WINDOW, styles=("factoid",), window_questions=3)
    users = [build_prompt(doc, s, mode="approximate").user for s in plan]
    pieces = len(build_prompt(doc, plan[0], mode="approximate").pieces)
    for part, user in enumerate(users):
        first, last = focus_pieces(pieces, part, 3)
        assert (
            f"question {part + 1} of 3 about this text: ask about pieces {first} to {last} ("
            in user
        )
    exact = build_prompt(doc, plan[2], mode="exact").user
    assert 'ask about the part of the text from "' in exact
    single = make_plan([doc], 3, seed=0, window_chars=WINDOW, styles=("factoid",))
    assert "about this text: ask about" not in build_prompt(doc, single[0], mode="exact").user


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def test_a_server_on_this_machine_is_sent_cache_prompt(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    run(synth_corpus, tmp_path / "a", synth_server.openai_spec(), None, questions=2)
    assert [r.get("cache_prompt") for r in synth_server.requests] == [True, True]
    off = synth_server.openai_spec(cache_prompt=False)
    run(synth_corpus, tmp_path / "b", off, None, questions=2)
    assert [r.get("cache_prompt") for r in synth_server.requests[2:]] == [False, False]
    remote = build_llm("openai(model='gpt-4o-mini', base_url='https://api.openai.com/v1')")
    assert remote.prompt_cache_flag() is None  # type: ignore[attr-defined]
    # a transport parameter: the names results give an LLM do not hold it
    assert "cache_prompt" not in identity_spec(off)


# --- the document filter -------------------------------------------------------------------------


def test_filter_documents_plans_only_the_documents_judged_relevant_and_complete(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    def judge(number: int, user: str) -> Scripted | None:
        if '"relevant"' not in user:
            return None
        doc = user.split("Document: ", 1)[1].split()[0]
        verdict = {"relevant": doc != "bulletin", "complete": doc != "chronicle"}
        return Scripted(json.dumps(verdict))

    synth_server.responder = judge
    out = tmp_path / "out"
    report = run(
        synth_corpus, out, synth_server.openai_spec(), tmp_path / "cache", questions=4,
        filter_documents=True,
    )  # fmt: skip
    m = manifest(out)
    assert report.accepted == 4
    assert {q["doc_id"] for q in questions(out)} == {"atlas"}
    assert m["document_filter"] == {
        "judged": 3,
        "relevant": {"yes": 2, "no": 1},
        "complete": {"yes": 2, "no": 1},
        "unclear": 0,
        "dropped": [
            {"id": "bulletin", "not": ["relevant"]},
            {"id": "chronicle", "not": ["complete"]},
        ],
    }
    assert [d["id"] for d in m["documents"]] == ["atlas"]


def test_cli_examples_and_evidence(
    synth_server: SynthServer, synth_corpus: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": 3}\n', encoding="utf-8")
    common = ["synth", "generate", str(synth_corpus), "--llm", synth_server.openai_spec()]
    result = invoke(*common, "--out", str(tmp_path / "o1"), "--examples", str(bad))
    assert result.exit_code != 0
    assert error_line(result).startswith(f"error: {bad} line 1 has no 'question' text.")
    result = invoke(*common, "--out", str(tmp_path / "o2"), "--evidence", "chapter")
    assert result.exit_code != 0 and "chapter" in result.output
