"""``datasets.jsonl.parsed_lines``: the one JSONL line reader of the dataset validator, the label
store and relation sets."""

from __future__ import annotations

import json

import pytest

from chunkmark.datasets.jsonl import parsed_lines


def test_lines_are_numbered_from_one_blank_ones_passed_over_and_the_bom_dropped() -> None:
    content = '\ufeff{"a": 1}\n\n  \n[2, 3]\r\n"text"\n'
    bad: list[tuple[int, str]] = []
    got = list(parsed_lines(content, lambda n, e: bad.append((n, e.msg))))
    assert got == [(1, {"a": 1}), (4, [2, 3]), (5, "text")]
    assert bad == []


def test_a_line_that_is_not_json_goes_to_bad_with_its_number_and_reading_goes_on() -> None:
    content = '{"a": 1}\n{"a": \n7\n'
    bad: list[tuple[int, int]] = []
    got = list(parsed_lines(content, lambda n, e: bad.append((n, e.colno))))
    assert got == [(1, {"a": 1}), (3, 7)]
    assert bad == [(2, 7)]  # json.loads('{"a": ') fails at column 7


def test_bad_may_raise() -> None:
    def stop(number: int, exc: json.JSONDecodeError) -> None:
        raise ValueError(f"line {number}")

    with pytest.raises(ValueError, match="line 2"):
        list(parsed_lines("1\nnot json\n3\n", stop))
