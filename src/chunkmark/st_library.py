"""What the sentence-transformers embedder and the cross-encoder reranker share of the library:
importing it (OpenMP's idle threads set to sleep before torch loads, a missing install named
with its extra) and counting the inputs its tokenizer finds longer than the model reads.

A leaf, so that both the retrieval layer and the embedders can use it; nothing here imports
sentence-transformers or torch until it is called.
"""

from __future__ import annotations

import importlib
from typing import Any

from chunkmark.errors import MissingDependencyError
from chunkmark.threads import passive_openmp


def sentence_transformers_class(name: str, purpose: str) -> Any:
    """The class ``name`` of sentence-transformers (``SentenceTransformer``, ``CrossEncoder``),
    imported after :func:`~chunkmark.threads.passive_openmp`; without the package, a
    :class:`MissingDependencyError` naming ``purpose`` ("The rerank retriever") and the ``st``
    extra."""
    passive_openmp()  # before torch loads: idle OpenMP threads sleep, not spin
    try:
        return getattr(importlib.import_module("sentence_transformers"), name)
    except (ImportError, AttributeError):
        raise MissingDependencyError("sentence-transformers", "st", purpose) from None


def count_over_limit(tokenizer: Any, limit: int, *texts: list[str]) -> int:
    """How many inputs a Hugging Face ``tokenizer`` makes longer than ``limit`` tokens, special
    tokens included (its defaults: special tokens added, no padding): ``texts`` is one list of
    texts, or two lists read as pairs (a question and a passage)."""
    encoded = tokenizer(
        *texts,
        truncation=False,
        return_attention_mask=False,
        return_token_type_ids=False,
        verbose=False,
    )
    return sum(len(ids) > limit for ids in encoded["input_ids"])
