"""``chunkmark label`` from the command line: it serves on 127.0.0.1; bad input is one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from cli.app_runner import error_line, invoke


def test_a_missing_folder_and_a_malformed_queries_file_are_one_line(tmp_path: Path) -> None:
    done = invoke("label", str(tmp_path / "nowhere"), "--no-browser", "--embedder", "none")
    assert done.exit_code != 0
    assert error_line(done) == (
        f"error: {tmp_path / 'nowhere'}: not a folder. Fix: Give a dataset folder "
        "(documents.jsonl) or a folder of .md/.txt documents."
    )
    (tmp_path / "a.md").write_text("Some text.", "utf-8")
    bad = tmp_path / "queries.csv"
    bad.write_text("id,body\n1,hello\n", "utf-8")
    done = invoke("label", str(tmp_path), "--queries", str(bad), "--embedder", "none")
    assert error_line(done).startswith(
        f"error: {bad}: no column named query, question, text (the columns are 'id', 'body')."
    )
    assert not (tmp_path / "documents.jsonl").exists()


def test_it_serves_the_page_on_127_0_0_1(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("The answer is forty-two.", "utf-8")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2] / "src"))
    command = [sys.executable, "-m", "chunkmark", "label", str(tmp_path), "--no-browser"]
    with subprocess.Popen(
        [*command, "--embedder", "none"], stderr=subprocess.PIPE, text=True, env=env
    ) as process:
        try:
            assert process.stderr is not None
            lines = []
            for line in process.stderr:
                lines.append(line)
                if "labeling" in line:
                    break
            found = re.search(r"at (http://127\.0\.0\.1:\d+/)", "".join(lines))
            assert found, lines
            with urllib.request.urlopen(found.group(1), timeout=10) as page:
                html = page.read().decode()
            assert page.status == 200 and "chunkmark label" in html
            assert "1 documents, 0 questions labeled, 0 not answered" in "".join(lines)
        finally:
            process.terminate()
            process.wait(10)


def test_label_studio_export_then_import_gives_the_same_questions(tmp_path: Path) -> None:
    import json
    import shutil

    from chunkmark.datasets import find_problems, load_dataset
    from chunkmark.label.store import QuestionStore, open_documents

    first = tmp_path / "first"
    first.mkdir()
    (first / "a.md").write_text("Snow 🏔 falls in winter. Rain falls in spring.", "utf-8")
    store = QuestionStore(first, open_documents(first))
    text = (first / "a.md").read_text("utf-8")
    store.save("When does rain fall?", "a", [(text.index("Rain"), len(text))])
    store.save("What falls?", "a", [(0, 6), (text.index("Rain"), text.index("Rain") + 4)])
    export = tmp_path / "ls.json"
    done = invoke("label", str(first), "--export-label-studio", str(export))
    assert done.exit_code == 0, done.output
    assert len(json.loads(export.read_text("utf-8"))) == 2
    second = tmp_path / "second"
    second.mkdir()
    shutil.copy(first / "a.md", second / "a.md")
    done = invoke(
        "label",
        str(second),
        "--import-label-studio",
        str(export),
        "--export-label-studio",
        str(tmp_path / "again.json"),
    )
    assert done.exit_code == 0, done.output
    assert find_problems(second) == []
    before = [(q.text, q.doc_id, q.excerpts) for q in load_dataset(first).questions]
    after = [(q.text, q.doc_id, q.excerpts) for q in load_dataset(second).questions]
    assert after == before
    bad = tmp_path / "bad.json"
    bad.write_text("[{", "utf-8")
    done = invoke(
        "label",
        str(second),
        "--import-label-studio",
        str(bad),
        "--export-label-studio",
        str(tmp_path / "x.json"),
    )
    assert error_line(done).startswith(f"error: {bad}: cannot be read as JSON")


def test_an_unknown_ranker_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("Some text.", "utf-8")
    done = invoke("label", str(tmp_path), "--ranker", "bm26", "--embedder", "none")
    assert error_line(done) == "error: unknown ranker(s) bm26. Fix: Use bm25, dense, hybrid."


def test_the_chunker_help_names_the_pools_default_chunkings() -> None:
    from chunkmark.label.pool import DEFAULT_CHUNKERS

    done = invoke("label", "--help", columns=400)
    text = " ".join(done.output.replace("│", " ").split())
    default = text.split("A chunking to pool, repeatable. [default: ", 1)[1].split("]", 1)[0]
    assert default == ", ".join(DEFAULT_CHUNKERS)


def test_the_page_uses_the_pools_passage_length_unless_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command line carries no passage length of its own: without --passage-chars the page's
    pool merges passages up to the pool's default (the one docs/label.md measured)."""
    import chunkmark.label.server
    import chunkmark.label.session
    from chunkmark.label.pool import DEFAULT_MAX_CHARS
    from chunkmark.label.server import LabelSession

    (tmp_path / "a.md").write_text("The answer is forty-two.", "utf-8")
    opened: list[LabelSession] = []
    real = chunkmark.label.session.open_session

    def recording(*args: Any, **kwargs: Any) -> LabelSession:
        opened.append(real(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(chunkmark.label.session, "open_session", recording)
    monkeypatch.setattr(chunkmark.label.server, "serve", lambda *args: None)
    for extra, expected in (([], DEFAULT_MAX_CHARS), (["--passage-chars", "1200"], 1200)):
        done = invoke("label", str(tmp_path), "--no-browser", "--embedder", "none", *extra)
        assert done.exit_code == 0, done.output
        assert opened[-1].pool.max_chars == expected
