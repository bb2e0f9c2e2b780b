"""Shared fixtures. Benchmark data is read from ``../shared`` beside the project root, or from
the folder named by ``CHUNKMARK_SHARED_DIR``; it is never copied into the repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    return Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared")).resolve()


@pytest.fixture(scope="session")
def chroma_general_dir() -> Path:
    path = shared_dir() / "datasets" / "chroma_general"
    if not (path / "questions_df.csv").exists():
        pytest.skip(f"benchmark data not found at {path} (set CHUNKMARK_SHARED_DIR)")
    return path


@pytest.fixture(scope="session")
def golden_dir() -> Path:
    path = shared_dir() / "datasets" / "chroma_general_golden"
    if not path.exists():
        pytest.skip(f"golden metrics not found at {path} (set CHUNKMARK_SHARED_DIR)")
    return path


@pytest.fixture(autouse=True, scope="session")
def _offline_env() -> None:
    # Tests never reach a model hub; tiktoken reads its ranks from the shared cache when present.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    cache = shared_dir() / "tiktoken_cache"
    if cache.exists():
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(cache))
