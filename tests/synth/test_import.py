"""``chunkmark datasets import``: documents of every supported type in, a corpus folder out.

Every fixture document is built inside the test (fpdf2, pypdf, python-docx, PIL); nothing
binary is kept in the repository.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from chunkmark.datasets.chroma import read_corpus
from chunkmark.errors import ConfigError, DatasetError, MissingDependencyError
from chunkmark.synth.importing import (
    ENCRYPTED_PDF,
    MANIFEST,
    NO_TEXT_LAYER,
    NothingImportedError,
    document_id,
    import_documents,
    unique_id,
)
from chunkmark.version import __version__

PDF_SENTENCES = (
    "The river otter builds its den close to slow water.",
    "Each den has an underwater entrance and a dry nest above it.",
)
HTML_SENTENCE = "Lighthouses on the northern coast were automated in 1987."
DOCX_SENTENCES = (
    "Home insurance covers fire and theft but not floods.",
    "Claims must be filed within thirty days of the loss.",
)
MD_TEXT = "# Tides\r\n\r\nSpring tides follow the full moon.\r\nNeap tides follow the quarters.\n"
TXT_TEXT = "Plain notes: the ferry leaves at noon.\n"


# --- fixture documents --------------------------------------------------------------------


def text_pdf(sentences: tuple[str, ...]) -> bytes:
    """A one-page PDF with a text layer holding ``sentences``, one per line."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    for sentence in sentences:
        pdf.multi_cell(0, 10, sentence, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def image_pdf() -> bytes:
    """A PDF whose only content is a small PNG image: no text layer."""
    from fpdf import FPDF
    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (48, 24), (180, 40, 40)).save(png, format="PNG")
    pdf = FPDF()
    pdf.add_page()
    pdf.image(io.BytesIO(png.getvalue()), x=20, y=20, w=80)
    return bytes(pdf.output())


def encrypted_pdf(data: bytes, user_password: str, owner_password: str) -> bytes:
    """``data`` (a PDF) encrypted with pypdf."""
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=io.BytesIO(data))
    writer.encrypt(user_password=user_password, owner_password=owner_password)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def docx_file(path: Path) -> None:
    """A Word document with a heading and two paragraphs."""
    import docx

    document = docx.Document()
    document.add_heading("Home policy", level=1)
    for sentence in DOCX_SENTENCES:
        document.add_paragraph(sentence)
    document.save(str(path))


def build_sources(root: Path) -> Path:
    """A folder holding one document of every kind, good and bad, some in a subfolder."""
    src = root / "src"
    (src / "policies").mkdir(parents=True)
    (src / "otters.pdf").write_bytes(text_pdf(PDF_SENTENCES))
    (src / "scanned.pdf").write_bytes(image_pdf())
    (src / "locked.pdf").write_bytes(encrypted_pdf(text_pdf(PDF_SENTENCES), "secret", "owner"))
    (src / "page.html").write_text(
        f"<html><head><title>Coast</title></head><body><h1>Lighthouses</h1>"
        f"<p>{HTML_SENTENCE}</p></body></html>",
        encoding="utf-8",
    )
    docx_file(src / "policies" / "home-insurance.docx")
    (src / "tides.md").write_bytes(MD_TEXT.encode("utf-8"))
    (src / "notes.txt").write_text(TXT_TEXT, encoding="utf-8")
    (src / "empty.txt").write_bytes(b"")
    (src / "latin1.txt").write_bytes("café au lait".encode("latin-1"))
    (src / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (src / ".hidden.md").write_text("Never imported.", encoding="utf-8")
    return src


def run_cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``chunkmark datasets import ARGS`` in a subprocess."""
    env = {**os.environ, "CHUNKMARK_LOG_DIR": str(cwd / "logs"), "COLUMNS": "200"}
    command = [sys.executable, "-m", "chunkmark", "datasets", "import", *map(str, args)]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def words(text: str) -> str:
    """``text`` with every run of whitespace made one space."""
    return " ".join(text.split())


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Any]:
    """The fixture folder imported once through the real command line."""
    root = tmp_path_factory.mktemp("import")
    build_sources(root)
    result = run_cli("src", "--out", "out", cwd=root)
    return root, root / "out", result


def manifest_of(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    return data


# --- the command line ---------------------------------------------------------------------


def test_cli_imports_the_good_documents_and_exits_0(imported: tuple[Path, Path, Any]) -> None:
    _, out, result = imported
    assert result.returncode == 0, result.stderr
    assert "imported 5 documents into out/corpora" in result.stdout
    names = sorted(p.name for p in (out / "corpora").iterdir())
    assert names == [
        "notes.txt",
        "otters.md",
        "page.md",
        "policies__home-insurance.md",
        "tides.md",
    ]


def test_cli_lists_the_skipped_sources_with_reasons_at_the_end(
    imported: tuple[Path, Path, Any],
) -> None:
    _, _, result = imported
    tail = result.stdout.split("skipped 5 sources:\n", 1)[1].splitlines()
    assert tail == [
        "  src/data.csv: unsupported file type '.csv'; supported: .md, .markdown, .txt, .pdf, "
        ".html, .htm, .docx",
        "  src/empty.txt: empty file",
        "  src/latin1.txt: not valid UTF-8: byte 0xe9 at byte offset 3; re-save it as UTF-8 "
        "(for example: iconv -f latin1 -t utf-8)",
        f"  src/locked.pdf: {ENCRYPTED_PDF}",
        f"  src/scanned.pdf: {NO_TEXT_LAYER}",
    ]


def test_corpus_files_hold_each_sources_text(imported: tuple[Path, Path, Any]) -> None:
    _, out, _ = imported
    corpora = out / "corpora"
    pdf = (corpora / "otters.md").read_text(encoding="utf-8")
    for sentence in PDF_SENTENCES:
        assert sentence in words(pdf)
    assert HTML_SENTENCE in (corpora / "page.md").read_text(encoding="utf-8")
    docx_text = (corpora / "policies__home-insurance.md").read_text(encoding="utf-8")
    assert "Home policy" in docx_text
    for sentence in DOCX_SENTENCES:
        assert sentence in docx_text
    assert (corpora / "notes.txt").read_bytes() == TXT_TEXT.encode("utf-8")
    assert (corpora / "tides.md").read_bytes() == MD_TEXT.replace("\r\n", "\n").encode("utf-8")


def test_corpus_files_use_only_newlines_and_read_back_identically(
    imported: tuple[Path, Path, Any],
) -> None:
    _, out, _ = imported
    for entry in manifest_of(out)["sources"]:
        path = out / entry["corpus_file"]
        raw = path.read_bytes()
        assert b"\r" not in raw
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        assert text == raw.decode("utf-8")
        assert len(text) == entry["characters"]


def test_corpus_reads_as_chroma_corpora(imported: tuple[Path, Path, Any]) -> None:
    _, out, _ = imported
    documents = read_corpus(out)
    entries = {e["id"]: e for e in manifest_of(out)["sources"]}
    assert sorted(d.id for d in documents) == sorted(entries)
    for document in documents:
        entry = entries[document.id]
        assert len(document.text) == entry["characters"]
        assert document.text == (out / entry["corpus_file"]).read_text(encoding="utf-8")


def test_manifest_records_each_source(imported: tuple[Path, Path, Any]) -> None:
    root, out, _ = imported
    manifest = manifest_of(out)
    assert manifest["chunkmark_version"] == __version__
    assert manifest["created"].endswith("+00:00")
    by_path = {e["path"]: e for e in manifest["sources"]}
    assert sorted(by_path) == [
        "src/notes.txt",
        "src/otters.pdf",
        "src/page.html",
        "src/policies/home-insurance.docx",
        "src/tides.md",
    ]
    for path, entry in by_path.items():
        data = (root / path).read_bytes()
        assert entry["resolved"] == str((root / path).resolve())
        assert entry["size"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert by_path["src/tides.md"]["converter"] == "text"
    assert by_path["src/notes.txt"]["corpus_file"] == "corpora/notes.txt"
    docx_entry = by_path["src/policies/home-insurance.docx"]
    assert docx_entry["id"] == "policies__home-insurance"
    assert docx_entry["corpus_file"] == "corpora/policies__home-insurance.md"
    import markitdown

    assert by_path["src/otters.pdf"]["converter"] == f"markitdown {markitdown.__version__}"


def test_manifest_records_each_skipped_source(imported: tuple[Path, Path, Any]) -> None:
    _, out, _ = imported
    skipped = {e["path"]: e["reason"] for e in manifest_of(out)["skipped"]}
    assert skipped["src/locked.pdf"] == ENCRYPTED_PDF
    assert skipped["src/scanned.pdf"] == NO_TEXT_LAYER
    assert skipped["src/empty.txt"] == "empty file"
    assert "byte offset 3" in skipped["src/latin1.txt"]
    assert "unsupported file type '.csv'" in skipped["src/data.csv"]
    assert "src/.hidden.md" not in skipped


def test_image_only_fixture_has_no_text_layer() -> None:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(image_pdf()))
    assert all(not (page.extract_text() or "").strip() for page in reader.pages)


def test_non_empty_out_is_refused_without_force(imported: tuple[Path, Path, Any]) -> None:
    root, out, _ = imported
    before = manifest_of(out)
    result = run_cli("src/tides.md", "--out", "out", cwd=root)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "--out folder out is not empty" in lines[0] and "--force" in lines[0]
    assert manifest_of(out) == before


def test_missing_source_is_a_one_line_error_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("Some text.", encoding="utf-8")
    result = run_cli("a.md", "missing-folder", "--out", "out", cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: missing-folder does not exist.")
    assert not (tmp_path / "out").exists()


def test_nothing_importable_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty.md").write_bytes(b"")
    (tmp_path / "scan.pdf").write_bytes(image_pdf())
    result = run_cli("empty.md", "scan.pdf", "--out", "out", cwd=tmp_path)
    assert result.returncode == 2
    assert "error: nothing could be imported: 2 sources were skipped" in result.stderr
    assert f"scan.pdf: {NO_TEXT_LAYER}" in result.stdout
    assert not (tmp_path / "out").exists()


# --- the Python API -----------------------------------------------------------------------


def test_force_writes_into_a_used_folder_and_keeps_other_files(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("Alpha text.", encoding="utf-8")
    out = tmp_path / "out"
    (out / "corpora").mkdir(parents=True)
    (out / "corpora" / "mine.md").write_text("Hand written.", encoding="utf-8")
    (out / "README").write_text("keep me", encoding="utf-8")
    with pytest.raises(ConfigError, match="--force"):
        import_documents([tmp_path / "a.md"], out)
    report = import_documents([tmp_path / "a.md"], out, force=True)
    assert [i.corpus_file for i in report.imported] == ["corpora/a.md"]
    assert report.foreign == [out / "corpora" / "mine.md"]
    assert (out / "README").read_text(encoding="utf-8") == "keep me"
    assert (out / "corpora" / "mine.md").exists()


def test_out_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("Alpha text.", encoding="utf-8")
    (tmp_path / "out").write_text("", encoding="utf-8")
    with pytest.raises(ConfigError, match="is a file"):
        import_documents([tmp_path / "a.md"], tmp_path / "out", force=True)


def notes_folder(root: Path) -> Path:
    src = root / "notes"
    for relative in ("a.md", "b.txt", "drafts/c.md", "deep/drafts/d.md", "deep/e.markdown"):
        path = src / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"Text of {relative}.", encoding="utf-8")
    return src


def imported_paths(src: Path, out: Path, **filters: Any) -> list[str]:
    report = import_documents([src], out, **filters)
    return [
        PurePosixPath(Path(i.path).relative_to(src).as_posix()).as_posix() for i in report.imported
    ]


def test_folders_are_walked_recursively_in_sorted_order(tmp_path: Path) -> None:
    src = notes_folder(tmp_path)
    report = import_documents([src], tmp_path / "out")
    assert [i.doc_id for i in report.imported] == [
        "a",
        "b",
        "deep__drafts__d",
        "deep__e",
        "drafts__c",
    ]
    assert [i.corpus_file for i in report.imported][:2] == ["corpora/a.md", "corpora/b.txt"]
    assert report.imported[3].corpus_file == "corpora/deep__e.md"


def test_include_keeps_only_matching_files(tmp_path: Path) -> None:
    src = notes_folder(tmp_path)
    assert imported_paths(src, tmp_path / "o1", include=["*.MD"]) == [
        "a.md",
        "deep/drafts/d.md",
        "drafts/c.md",
    ]
    assert imported_paths(src, tmp_path / "o2", include=["*.txt", "deep/*.markdown"]) == [
        "b.txt",
        "deep/e.markdown",
    ]


def test_exclude_drops_files_and_folders(tmp_path: Path) -> None:
    src = notes_folder(tmp_path)
    assert imported_paths(src, tmp_path / "o1", exclude=["drafts"]) == [
        "a.md",
        "b.txt",
        "deep/e.markdown",
    ]
    assert imported_paths(src, tmp_path / "o2", include=["*.md"], exclude=["a.md"]) == [
        "deep/drafts/d.md",
        "drafts/c.md",
    ]


def test_out_folder_inside_a_source_folder_is_not_imported(tmp_path: Path) -> None:
    src = notes_folder(tmp_path)
    first = import_documents([src], src / "corpus")
    again = import_documents([src], src / "corpus", force=True)
    assert [i.doc_id for i in again.imported] == [i.doc_id for i in first.imported]


def test_out_folder_cannot_be_a_source_folder(tmp_path: Path) -> None:
    src = notes_folder(tmp_path)
    with pytest.raises(ConfigError, match="also a folder to import"):
        import_documents([src], src, force=True)


def test_a_file_named_twice_is_imported_once(tmp_path: Path) -> None:
    src = notes_folder(tmp_path)
    report = import_documents([src / "a.md", src], tmp_path / "out", include=["a.md"])
    assert [i.doc_id for i in report.imported] == ["a"]


def test_colliding_ids_get_a_numeric_suffix(tmp_path: Path) -> None:
    for name in ("report.md", "report.txt", "Report.markdown", "report-2.md"):
        (tmp_path / "src" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "src" / name).write_text(f"Text of {name}.", encoding="utf-8")
    report = import_documents([tmp_path / "src"], tmp_path / "out")
    by_path = {Path(i.path).name: i.doc_id for i in report.imported}
    assert by_path == {
        "Report.markdown": "Report",
        "report-2.md": "report-2",
        "report.md": "report-3",
        "report.txt": "report-4",
    }
    assert len({i.corpus_file.casefold() for i in report.imported}) == 4


def test_owner_password_only_pdf_is_imported(tmp_path: Path) -> None:
    data = encrypted_pdf(text_pdf(PDF_SENTENCES), "", "owner")
    (tmp_path / "restricted.pdf").write_bytes(data)
    report = import_documents([tmp_path / "restricted.pdf"], tmp_path / "out")
    text = (tmp_path / "out" / report.imported[0].corpus_file).read_text(encoding="utf-8")
    assert PDF_SENTENCES[0] in words(text)


def test_nothing_imported_error_carries_the_skipped_sources(tmp_path: Path) -> None:
    (tmp_path / "blank.txt").write_text(" \n\t\n", encoding="utf-8")
    with pytest.raises(NothingImportedError) as caught:
        import_documents([tmp_path / "blank.txt"], tmp_path / "out")
    assert [s.reason for s in caught.value.skipped] == ["holds only whitespace"]
    assert isinstance(caught.value, DatasetError)


def test_no_matching_files_is_an_error(tmp_path: Path) -> None:
    src = notes_folder(tmp_path)
    with pytest.raises(NothingImportedError, match="no documents found"):
        import_documents([src], tmp_path / "out", include=["*.pdf"])


def test_missing_markitdown_raises_missing_dependency_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "page.html").write_text(f"<p>{HTML_SENTENCE}</p>", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "markitdown", None)
    with pytest.raises(MissingDependencyError) as caught:
        import_documents([tmp_path / "page.html"], tmp_path / "out")
    assert caught.value.package == "markitdown"
    assert "pip install 'chunkmark[import]'" in str(caught.value)
    assert "Importing PDF, HTML and Word documents" in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_text_sources_do_not_need_markitdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.md").write_text("Alpha text.", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "markitdown", None)
    report = import_documents([tmp_path / "a.md"], tmp_path / "out")
    assert [i.converter for i in report.imported] == ["text"]


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("policies/home-insurance.pdf", "policies__home-insurance"),
        ("Annual Report (2024).pdf", "Annual-Report-2024"),
        ("a/b/c.d.md", "a__b__c.d"),
        (".profile.md", "profile"),
        ("café/menu.md", "café__menu"),
        ("???.md", "document"),
        ("con.md", "con_"),
    ],
)
def test_document_ids_are_filesystem_safe(relative: str, expected: str) -> None:
    assert document_id(PurePosixPath(relative)) == expected


def test_long_ids_are_cut() -> None:
    doc_id = document_id(PurePosixPath("é" * 300 + ".md"))
    assert len(doc_id.encode("utf-8")) <= 160


def test_unique_id_ignores_case() -> None:
    used: set[str] = set()
    assert [unique_id(x, used) for x in ("a", "A", "a", "a-2")] == ["a", "A-2", "a-3", "a-2-2"]
