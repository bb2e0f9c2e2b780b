"""``chunkmark datasets validate --fix OUT``: excerpts given as text become exact offsets in a
new folder; the validator points there, and an unknown doc_id gets the closest ids.

The documents are built from parts whose lengths give the expected offsets, so no expected
offset below comes from searching the text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import typer
from typer.testing import CliRunner, Result

from chunkmark.cli.datasets import register
from chunkmark.datasets import find_problems, load_jsonl
from chunkmark.errors import DatasetError
from chunkmark.spans import Span

HEAD = "Refunds are paid within "
UNIQUE = "fourteen days of the request"
MIDDLE = ". Shipping is free.\n"
TWICE = "Ask the desk"
GAP = " today. Or "
SPACED = "call  the\nhotline"
TAIL = " any time.\n"
DOC = HEAD + UNIQUE + MIDDLE + TWICE + GAP + TWICE + ". " + SPACED + TAIL
AT_UNIQUE = len(HEAD)
AT_TWICE = (len(HEAD + UNIQUE + MIDDLE), len(HEAD + UNIQUE + MIDDLE + TWICE + GAP))
AT_SPACED = len(HEAD + UNIQUE + MIDDLE + TWICE + GAP + TWICE + ". ")


def run(*args: str) -> Result:
    app = typer.Typer()
    register(app)
    return CliRunner().invoke(app, ["datasets", *args], env={"COLUMNS": "250"})


def write_set(folder: Path, questions: list[dict[str, object]]) -> Path:
    folder.mkdir(parents=True)
    docs = [{"id": "refund-policy", "text": DOC}, {"id": "handbook", "text": "Other text."}]
    (folder / "documents.jsonl").write_text(
        "".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8"
    )
    (folder / "questions.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8"
    )
    return folder


def ask(qid: str, *excerpts: dict[str, object], doc_id: str = "refund-policy") -> dict[str, object]:
    return {"id": qid, "question": f"Question {qid}?", "doc_id": doc_id, "excerpts": list(excerpts)}


def test_a_text_only_excerpt_points_to_fix(tmp_path: Path) -> None:
    folder = write_set(tmp_path / "ds", [ask("q1", {"text": UNIQUE})])
    problems = find_problems(folder)
    assert len(problems) == 1
    assert problems[0].line == 1
    assert problems[0].message == "question 'q1', excerpt 1: gives its text only (no start, end)."
    assert f"chunkmark datasets validate {folder} --fix OUT" in problems[0].fix
    assert "lacks the key" not in str(problems[0])


def test_an_unknown_doc_id_gets_the_closest_ids(tmp_path: Path) -> None:
    folder = write_set(tmp_path / "ds", [ask("q1", {"start": 0, "end": 4}, doc_id="refund-polcy")])
    (problem,) = find_problems(folder)
    assert problem.message == (
        "question 'q1': doc_id 'refund-polcy' is not a document in documents.jsonl."
    )
    assert problem.fix.startswith("Did you mean 'refund-policy'? ")
    far = write_set(tmp_path / "far", [ask("q1", {"start": 0, "end": 4}, doc_id="zzz")])
    (problem,) = find_problems(far)
    assert "Did you mean" not in problem.fix


def test_fix_places_text_and_lists_what_it_cannot(tmp_path: Path) -> None:
    source = write_set(
        tmp_path / "ds",
        [
            ask("unique", {"text": UNIQUE}),
            ask("wrong-offsets", {"start": 0, "end": 8, "text": UNIQUE}),
            ask("spaced", {"text": "call the hotline"}),
            ask("exact", {"start": 0, "end": len(HEAD), "text": HEAD}),
            ask("twice", {"text": TWICE}, {"text": UNIQUE}),
            ask("missing", {"text": "fourteen dais of the requets"}),
        ],
    )
    before = {p.name: p.read_bytes() for p in source.iterdir()}
    out = tmp_path / "fixed"
    result = run("validate", str(source), "--fix", str(out))
    assert result.exit_code == 1, result.output  # two questions could not be placed
    assert {p.name: p.read_bytes() for p in source.iterdir()} == before  # never in place

    fixed = load_jsonl(out)
    spans = {q.id: q.excerpts for q in fixed.questions}
    assert spans == {
        "unique": (Span(AT_UNIQUE, AT_UNIQUE + len(UNIQUE)),),
        "wrong-offsets": (Span(AT_UNIQUE, AT_UNIQUE + len(UNIQUE)),),
        "spaced": (Span(AT_SPACED, AT_SPACED + len(SPACED)),),
        "exact": (Span(0, len(HEAD)),),
    }
    written = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert written[2]["excerpts"][0]["text"] == SPACED  # the document's own whitespace
    assert find_problems(out) == []

    kept = [json.loads(line) for line in (out / "unplaced.jsonl").read_text().splitlines()]
    assert [q["id"] for q in kept] == ["twice", "missing"]
    assert kept[0]["excerpts"][1] == {  # the excerpt it could place is placed
        "start": AT_UNIQUE,
        "end": AT_UNIQUE + len(UNIQUE),
        "text": UNIQUE,
    }
    output = " ".join(result.output.split())
    first, second = AT_TWICE
    assert (
        f"line 5: question 'twice', excerpt 1 occurs 2 times in 'refund-policy': "
        f"[{first}, {first + len(TWICE)}), [{second}, {second + len(TWICE)})"
    ) in output
    # The nearest match of the misspelt passage is the passage, give or take a letter at
    # either end (a fuzzy alignment may leave out or take in one character).
    nearest = re.search(
        r"line 6: question 'missing', excerpt 1 is not in 'refund-policy'; "
        r"nearest match \[(\d+), (\d+)\)",
        output,
    )
    assert nearest is not None, output
    assert abs(int(nearest[1]) - AT_UNIQUE) <= 1
    assert abs(int(nearest[2]) - (AT_UNIQUE + len(UNIQUE))) <= 1
    assert "placed 4 excerpts by their text, 1 already exact" in output


def test_fix_never_writes_into_an_existing_folder(tmp_path: Path) -> None:
    source = write_set(tmp_path / "ds", [ask("q1", {"text": UNIQUE})])
    same = run("validate", str(source), "--fix", str(source))
    assert isinstance(same.exception, DatasetError)
    assert str(same.exception).startswith(f"{source} already exists. Fix: Name a new folder")
    assert not (source / "unplaced.jsonl").exists()
