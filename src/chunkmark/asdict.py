"""``to_dict`` for a dataclass record: its fields, as :func:`dataclasses.asdict` gives them."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


class AsDict:
    """Base of a dataclass whose ``to_dict`` is its fields (nested records as dicts too)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(cast("DataclassInstance", self))
