"""The built-in demo dataset: four short original markdown documents and their questions.

The documents (a backup tool's manual, an on-call runbook, a sourdough guide and a community
garden's composting handbook) have headings of several levels, lists, tables and fenced code
blocks, so structure-aware chunkers have something to work with. Every answer is one to three
exact excerpts, stored in the JSONL layout under ``demo_data/``.
"""

from __future__ import annotations

import dataclasses
from importlib import resources

from chunkmark.datasets.jsonl import load_jsonl
from chunkmark.datasets.model import Dataset

DEMO_NAME = "demo"


def load_demo() -> Dataset:
    """The demo dataset, named ``"demo"``."""
    root = resources.files("chunkmark.datasets").joinpath("demo_data")
    with resources.as_file(root) as folder:
        dataset = load_jsonl(folder)
    return dataclasses.replace(dataset, name=DEMO_NAME, source=DEMO_NAME)
