"""``asdict.AsDict``: a record's ``to_dict`` is its fields (records inside it as dicts)."""

from __future__ import annotations

from dataclasses import dataclass

from chunkmark.asdict import AsDict
from chunkmark.metrics.paired import compare_paired


@dataclass(frozen=True)
class _Inner(AsDict):
    x: int


@dataclass(frozen=True)
class _Outer(AsDict):
    name: str
    inner: _Inner
    values: tuple[float, ...]


def test_to_dict_is_the_fields_in_order_with_records_inside_as_dicts() -> None:
    d = _Outer("a", _Inner(3), (1.0, 2.0)).to_dict()
    assert d == {"name": "a", "inner": {"x": 3}, "values": (1.0, 2.0)}
    assert list(d) == ["name", "inner", "values"]


def test_a_paired_comparison_reads_back_from_its_dict() -> None:
    c = compare_paired([0.2, 0.5, 0.9, 0.4], [0.1, 0.5, 0.7, 0.6], permutations=200, seed=1)
    d = c.to_dict()
    assert d["n"] == 4 and (d["wins"], d["ties"], d["losses"]) == (2, 1, 1)
    assert d == {name: getattr(c, name) for name in c.__dataclass_fields__}
