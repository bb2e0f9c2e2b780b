"""``chunkmark synth generate FOLDER`` where FOLDER holds the .md/.txt documents themselves."""

from __future__ import annotations

from pathlib import Path

from chunkmark.synth.corpus import load_corpus
from cli.app_runner import error_line, invoke


def write_documents(folder: Path) -> Path:
    (folder / "notes").mkdir(parents=True)
    (folder / "apples.md").write_text("# Apples\n\nApples grow on trees in orchards.\n")
    (folder / "pears.txt").write_text("Pears ripen after they are picked.\n")
    (folder / "notes" / "skipped.md").write_text("A subfolder is not read.\n")
    return folder


def test_a_folder_of_markdown_and_text_files_is_a_corpus(tmp_path: Path) -> None:
    folder = write_documents(tmp_path / "docs")
    documents, sources = load_corpus(folder)
    assert [(d.id, d.text) for d in documents] == [
        ("apples", "# Apples\n\nApples grow on trees in orchards.\n"),
        ("pears", "Pears ripen after they are picked.\n"),
    ]
    assert sources == []
    result = invoke(
        "synth", "generate", str(folder), "--llm", "fake()", "--out", str(tmp_path / "set"),
        "--questions", "4", "--dry-run", "--no-cache",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("dry run: 4 questions planned, 4 still to ask")


def test_a_folder_without_text_documents_says_what_to_pass(tmp_path: Path) -> None:
    folder = tmp_path / "pdfs"
    (folder / "sub").mkdir(parents=True)
    (folder / "report.pdf").write_bytes(b"%PDF-1.4")
    (folder / "sub" / "notes.md").write_text("Only in a subfolder.\n")
    result = invoke("synth", "generate", str(folder), "--llm", "fake()", "--out", "x")
    assert error_line(result) == (
        f"error: {folder} holds no .md or .txt files, no corpora/ folder and no dataset. Fix: "
        "Convert its documents first (PDF, HTML, Word, or files in subfolders): chunkmark "
        f"datasets import {folder} --out CORPUS, then pass CORPUS to synth generate."
    )


def test_a_dataset_folder_with_markdown_beside_its_questions_stays_a_dataset(
    tmp_path: Path,
) -> None:
    from chunkmark.datasets import load_dataset, write_jsonl

    folder = tmp_path / "set"
    write_jsonl(load_dataset("demo"), folder)
    (folder / "README.md").write_text("About this set.\n")
    documents, _ = load_corpus(folder)
    assert [d.id for d in documents] == [d.id for d in load_dataset("demo").documents]
