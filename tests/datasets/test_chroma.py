from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from chunkmark.datasets import find_problems, load_chroma, load_dataset, write_chroma
from chunkmark.errors import DatasetError

ALPHA = "The quick brown fox jumps over the lazy dog.\nA second line follows.\n"
BETA = "Compost needs greens and browns.\nTurn the pile monthly.\n"
VALIDATE_HINT = "chunkmark datasets validate"


MakeChroma = Callable[..., Path]


def ref(text: str, excerpt: str) -> dict[str, object]:
    start = text.index(excerpt)
    return {"content": excerpt, "start_index": start, "end_index": start + len(excerpt)}


def good_rows() -> list[list[str]]:
    return [
        ["What does the fox do?", json.dumps([ref(ALPHA, "jumps over the lazy dog")]), "alpha"],
        ["What does compost need?", json.dumps([ref(BETA, "greens and browns")]), "beta"],
        ["What follows?", json.dumps([ref(ALPHA, "A second line follows.")]), "alpha"],
    ]


def csv_text(rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["question", "references", "corpus_id"])
    writer.writerows(rows)
    return buffer.getvalue()


@pytest.fixture
def make_chroma(tmp_path: Path) -> MakeChroma:
    """Build a small Chroma-layout folder: corpora as {file: text or bytes}, rows or raw CSV."""

    def make(
        rows: list[list[str]] | None = None,
        corpora: dict[str, str | bytes] | None = None,
        raw_csv: str | None = None,
    ) -> Path:
        folder = tmp_path / "tiny"
        (folder / "corpora").mkdir(parents=True)
        for file, content in (corpora or {"alpha.md": ALPHA, "beta.md": BETA}).items():
            data = content if isinstance(content, bytes) else content.encode("utf-8")
            (folder / "corpora" / file).write_bytes(data)
        text = raw_csv if raw_csv is not None else csv_text(good_rows() if rows is None else rows)
        (folder / "questions_df.csv").write_text(text, encoding="utf-8")
        return folder

    return make


def load_error(folder: Path) -> str:
    with pytest.raises(DatasetError) as info:
        load_chroma(folder)
    message = str(info.value)
    assert "\n" not in message
    assert "Fix: " in message
    assert VALIDATE_HINT in message
    return message


# --- the benchmark ------------------------------------------------------------------------


@pytest.mark.integration
def test_loads_the_benchmark_with_exact_excerpts(chroma_general_dir: Path) -> None:
    dataset = load_chroma(chroma_general_dir)
    assert len(dataset.documents) == 5
    assert len(dataset.questions) == 472
    assert [q.id for q in dataset.questions] == [str(i) for i in range(472)]
    refs = _csv_references(chroma_general_dir)
    for question, references in zip(dataset.questions, refs, strict=True):
        text = dataset.by_id[question.doc_id].text
        assert [text[s.start : s.end] for s in question.excerpts] == [
            r["content"] for r in references
        ]
    assert find_problems(chroma_general_dir) == []


@pytest.mark.integration
def test_benchmark_documents_follow_first_use_in_the_csv(chroma_general_dir: Path) -> None:
    dataset = load_chroma(chroma_general_dir)
    first_use = list(dict.fromkeys(q.doc_id for q in dataset.questions))
    assert [d.id for d in dataset.documents] == first_use
    assert first_use[0] == "state_of_the_union"


@pytest.mark.integration
def test_write_chroma_reproduces_the_benchmark_bytes(
    chroma_general_dir: Path, tmp_path: Path
) -> None:
    dataset = load_chroma(chroma_general_dir)
    write_chroma(dataset, tmp_path / "copy")
    again = load_chroma(tmp_path / "copy")
    assert again.fingerprint == dataset.fingerprint
    original = (chroma_general_dir / "questions_df.csv").read_bytes()
    assert (tmp_path / "copy" / "questions_df.csv").read_bytes() == original


def _csv_references(folder: Path) -> list[list[dict[str, object]]]:
    with (folder / "questions_df.csv").open(encoding="utf-8", newline="") as handle:
        return [json.loads(row["references"]) for row in csv.DictReader(handle)]


# --- small valid datasets -----------------------------------------------------------------


def test_small_dataset_loads(make_chroma: MakeChroma) -> None:
    folder = make_chroma()
    dataset = load_chroma(folder)
    assert dataset.name == "tiny"
    assert [q.id for q in dataset.questions] == ["0", "1", "2"]
    assert [d.id for d in dataset.documents] == ["alpha", "beta"]
    q = dataset.questions[0]
    assert dataset.by_id["alpha"].text[q.excerpts[0].start : q.excerpts[0].end] == (
        "jumps over the lazy dog"
    )
    assert load_dataset(folder).fingerprint == dataset.fingerprint


def test_unused_corpora_follow_used_ones_in_file_order(make_chroma: MakeChroma) -> None:
    rows = [["Q?", json.dumps([ref(BETA, "greens")]), "beta"]]
    folder = make_chroma(rows, corpora={"zeta.txt": "z text", "alpha.md": ALPHA, "beta.md": BETA})
    assert [d.id for d in load_chroma(folder).documents] == ["beta", "alpha", "zeta"]


def test_crlf_corpus_is_read_with_newline_translation(make_chroma: MakeChroma) -> None:
    rows = [["Q?", json.dumps([ref(ALPHA, "A second line")]), "alpha"]]
    folder = make_chroma(rows, corpora={"alpha.md": ALPHA.replace("\n", "\r\n").encode()})
    assert load_chroma(folder).documents[0].text == ALPHA


def test_blank_lines_do_not_count_as_rows(make_chroma: MakeChroma) -> None:
    lines = csv_text(good_rows()).split("\n")
    folder = make_chroma(raw_csv="\n".join([lines[0], lines[1], "", lines[2], lines[3]]))
    dataset = load_chroma(folder)
    assert [q.id for q in dataset.questions] == ["0", "1", "2"]
    assert dataset.questions[2].text == "What follows?"


def test_write_chroma_round_trip(make_chroma: MakeChroma, tmp_path: Path) -> None:
    dataset = load_chroma(make_chroma())
    write_chroma(dataset, tmp_path / "out")
    assert load_chroma(tmp_path / "out").fingerprint == dataset.fingerprint


# --- one test per bad input ---------------------------------------------------------------


def test_missing_folder(tmp_path: Path) -> None:
    message = load_error(tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in message
    assert "does not exist" in message


def test_missing_questions_file(make_chroma: MakeChroma) -> None:
    folder = make_chroma()
    (folder / "questions_df.csv").unlink()
    message = load_error(folder)
    assert "questions_df.csv" in message


def test_non_utf8_corpus_names_the_byte_offset(make_chroma: MakeChroma) -> None:
    bad = "caf\u00e9 latte\nline two\n".encode("latin-1")
    folder = make_chroma(corpora={"alpha.md": ALPHA, "beta.md": BETA, "gamma.md": bad})
    message = load_error(folder)
    assert str(folder / "corpora" / "gamma.md") in message
    assert "line 1" in message
    assert "byte 0xe9 at byte offset 3" in message
    assert "UTF-8" in message


def test_bad_json_in_references(make_chroma: MakeChroma) -> None:
    rows = [
        ["What does the fox do?", json.dumps([ref(ALPHA, "jumps")]), "alpha"],
        ["Broken?", '[{"content": "x", "start_index": 1,', "alpha"],
    ]
    folder = make_chroma(rows)
    message = load_error(folder)
    assert f"{folder / 'questions_df.csv'}, line 3: row 1: references is not valid JSON" in message
    assert "Fix: Write references as a JSON list" in message


def test_wrong_column_count(make_chroma: MakeChroma) -> None:
    raw = (
        "question,references,corpus_id\n"
        f'Q zero,"{json.dumps([ref(ALPHA, "fox")]).replace(chr(34), chr(34) * 2)}",alpha\n'
        "Q one, with a comma,[],alpha\n"
    )
    folder = make_chroma(raw_csv=raw)
    message = load_error(folder)
    assert "questions_df.csv, line 3: row 1 has 4 fields; the header has 3" in message
    assert "Fix: Quote fields that contain commas" in message


def test_excerpt_not_matching_the_document_points_to_the_real_place(
    make_chroma: MakeChroma,
) -> None:
    shifted = {"content": "lazy dog", "start_index": 0, "end_index": 8}
    folder = make_chroma([["Where is the dog?", json.dumps([shifted]), "alpha"]])
    message = load_error(folder)
    start = ALPHA.index("lazy dog")
    assert "questions_df.csv, line 2: row 0, excerpt 1: content 'lazy dog'" in message
    assert "'The quic'" in message
    assert f"The content occurs at [{start}, {start + 8})" in message
    assert f"set start_index to {start} and end_index to {start + 8}" in message


def test_excerpt_not_found_anywhere(make_chroma: MakeChroma) -> None:
    wrong = {"content": "the lazy cat", "start_index": 31, "end_index": 43}
    folder = make_chroma([["Q?", json.dumps([wrong]), "alpha"]])
    message = load_error(folder)
    assert "differ from character 9" in message
    assert "Make the content equal the document text" in message


def test_offsets_out_of_range(make_chroma: MakeChroma) -> None:
    folder = make_chroma(
        [["Q?", json.dumps([{"content": "x", "start_index": 5, "end_index": 5000}]), "alpha"]]
    )
    message = load_error(folder)
    assert f"fall outside the document, which has {len(ALPHA)} characters" in message


def test_empty_document(make_chroma: MakeChroma) -> None:
    folder = make_chroma(corpora={"alpha.md": ALPHA, "beta.md": BETA, "empty.md": ""})
    message = load_error(folder)
    assert str(folder / "corpora" / "empty.md") in message
    assert "document 'empty' is empty" in message


def test_corpus_id_without_file_suggests_a_near_match(make_chroma: MakeChroma) -> None:
    rows = [["Q?", json.dumps([ref(ALPHA, "fox")]), "alpah"]]
    folder = make_chroma(rows)
    message = load_error(folder)
    assert "questions_df.csv, line 2: row 0: corpus_id 'alpah' has no corpus file" in message
    assert "Did you mean 'alpha'?" in message


def test_missing_keys_and_non_integer_offsets(make_chroma: MakeChroma) -> None:
    rows = [
        ["Q?", json.dumps([{"content": "fox", "start_index": 16}]), "alpha"],
        ["Q?", json.dumps([{"content": "fox", "start_index": "16", "end_index": 19.0}]), "alpha"],
    ]
    problems = find_problems(make_chroma(rows))
    assert [p.line for p in problems] == [2, 3]
    assert "row 0, excerpt 1 lacks the key(s) end_index" in problems[0].message
    assert "start_index is '16', not an integer" in problems[1].message
    assert "end_index is 19.0, not an integer" in problems[1].message


def test_empty_question_text(make_chroma: MakeChroma) -> None:
    folder = make_chroma([["  ", json.dumps([ref(ALPHA, "fox")]), "alpha"]])
    assert "row 0 has an empty question text" in load_error(folder)


def test_header_without_required_columns(make_chroma: MakeChroma) -> None:
    folder = make_chroma(raw_csv="question,refs,corpus_id\nQ,[],alpha\n")
    message = load_error(folder)
    assert "questions_df.csv, line 1: the header lacks the column(s) references" in message


def test_two_files_for_one_corpus_id(make_chroma: MakeChroma) -> None:
    folder = make_chroma(corpora={"alpha.md": ALPHA, "alpha.txt": ALPHA, "beta.md": BETA})
    assert "corpus id 'alpha' has two files: alpha.md and alpha.txt" in load_error(folder)


def test_validate_lists_every_problem_of_a_file(make_chroma: MakeChroma) -> None:
    rows = [
        ["Fine?", json.dumps([ref(ALPHA, "fox")]), "alpha"],
        ["Bad JSON?", "[{", "alpha"],
        ["", json.dumps([ref(ALPHA, "fox")]), "alpha"],
        ["Unknown corpus?", json.dumps([ref(ALPHA, "fox")]), "nope"],
        [
            "Two bad excerpts?",
            json.dumps(
                [
                    {"content": "fox", "start_index": 0, "end_index": 3},
                    {"content": "x", "start_index": 9, "end_index": 2},
                ]
            ),
            "alpha",
        ],
        ["Too", "many", "fields", "here"],
    ]
    folder = make_chroma(rows, corpora={"alpha.md": ALPHA, "beta.md": BETA, "c.md": b"\xff"})
    problems = find_problems(folder)
    where = [(Path(p.file).name, p.line) for p in problems]
    assert where == [
        ("c.md", 1),
        ("questions_df.csv", 3),
        ("questions_df.csv", 4),
        ("questions_df.csv", 5),
        ("questions_df.csv", 6),
        ("questions_df.csv", 6),
        ("questions_df.csv", 7),
    ]
    assert all(p.fix for p in problems)
    # The loader reports the first of them.
    assert str(problems[0]).split(" Fix: ")[0] in load_error(folder)
