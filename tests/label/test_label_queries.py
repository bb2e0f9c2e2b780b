"""Queries read from a text, CSV or JSON-lines file; one clear line for a malformed one."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkmark.label.queries import read_queries
from chunkmark.label.store import LabelError


def test_text_file_one_query_per_line(tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    path.write_text("how do I reset?\r\n\n  what is a snapshot?  \nhow do I reset?\n", "utf-8")
    assert read_queries(path) == ["how do I reset?", "what is a snapshot?"]


def test_csv_column_named_or_found(tmp_path: Path) -> None:
    path = tmp_path / "tickets.csv"
    path.write_text('id,query,team\n1,"where, exactly?",a\n2,second,b\n', "utf-8")
    assert read_queries(path) == ["where, exactly?", "second"]
    assert read_queries(path, "team") == ["a", "b"]
    with pytest.raises(
        LabelError, match=r"no column 'body' \(the columns are 'id', 'query', 'team'\)"
    ):
        read_queries(path, "body")


def test_csv_row_with_the_wrong_number_of_fields(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("query,team\nfine,a\nbroken, with, commas\n", "utf-8")
    with pytest.raises(LabelError) as raised:
        read_queries(path)
    assert str(raised.value).startswith(f"{path}, row 3: 3 fields where the header has 2.")
    assert "\n" not in str(raised.value)


def test_jsonl_strings_and_objects(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('"plain"\n{"question": "asked"}\n{"text": "typed", "n": 1}\n', "utf-8")
    assert read_queries(path) == ["plain", "asked", "typed"]


def test_jsonl_malformed_line(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('"fine"\n{"question": \n', "utf-8")
    with pytest.raises(LabelError, match=r"q.jsonl, line 2: not valid JSON"):
        read_queries(path)
    path.write_text('{"q": "x"}\n', "utf-8")
    with pytest.raises(LabelError, match=r"line 1: no 'query' or 'question' or 'text' string"):
        read_queries(path)


def test_not_utf8_or_empty(tmp_path: Path) -> None:
    path = tmp_path / "latin.txt"
    path.write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(LabelError, match=r"latin.txt, line 1: not valid UTF-8: byte 0xe9"):
        read_queries(path)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", "utf-8")
    with pytest.raises(LabelError, match="no queries"):
        read_queries(empty)
