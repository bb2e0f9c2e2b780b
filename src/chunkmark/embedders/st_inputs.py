"""What a sentence-transformers model reads: token ids after the prompt, the special tokens and
truncation, and batches of them padded as the transformer module takes them.

The embedder feeds these ids to the model's modules directly (a tokenizing transformer followed
by pooling, dense and normalize modules), so each text is tokenised once and the embedding
cache can key vectors on what the model reads (docs/architecture.md, "Doing the least
embedding work").
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkmark.errors import EmbeddingError
from chunkmark.st_library import count_over_limit

# Modules the token path knows how to drive: a tokenizing transformer first, then these.
TOKEN_PATH_MODULES = {"Transformer", "Pooling", "Normalize", "Dense"}

TokenIds = npt.NDArray[np.int32]


def module_names(model: Any) -> list[str]:
    """The class names of a loaded model's modules, in order."""
    return [type(module).__name__ for module in model]


def drives_token_path(model: Any, prompt: str | None) -> bool:
    """Whether the model's inputs can be given as token ids: a tokenizing transformer followed
    by pooling/dense/normalize modules, and no pooling that leaves the prompt out."""
    names = module_names(model)
    if not names or names[0] != "Transformer" or not set(names) <= TOKEN_PATH_MODULES:
        return False
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None or not callable(tokenizer):
        return False
    pooling = [m for m in model if type(m).__name__ == "Pooling"]
    return not (prompt and pooling and getattr(pooling[0], "include_prompt", True) is False)


def token_ids(
    tokenizer: Any, texts: Sequence[str], prompt: str | None, limit: int
) -> tuple[list[TokenIds], int]:
    """Tokenise once, add special tokens, truncate to ``limit`` tokens as the model would;
    returns the rows and how many texts were truncated."""
    inputs = [prompt + t for t in texts] if prompt else list(texts)
    encoded = tokenizer(
        inputs,
        add_special_tokens=False,
        truncation=False,
        return_attention_mask=False,
        return_token_type_ids=False,
        verbose=False,
    )["input_ids"]
    head, tail = special_tokens(tokenizer)
    room = limit - len(head) - len(tail)
    out = []
    truncated = 0
    for ids in encoded:
        if len(ids) > room:
            truncated += 1
            ids = ids[:room]
        out.append(np.asarray([*head, *ids, *tail], dtype=np.int32))
    return out, truncated


def padded_features(model: Any, batch: list[TokenIds], device: str | None) -> dict[str, Any]:
    """A batch of token-id rows padded to the longest, on ``device``, as the transformer module
    reads it."""
    import torch

    where = torch.device(device or "cpu")
    pad = model.tokenizer.pad_token_id or 0
    width = max(len(x) for x in batch)
    input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for row, x in enumerate(batch):
        input_ids[row, : len(x)] = torch.from_numpy(x.astype(np.int64))
        mask[row, : len(x)] = 1
    features: dict[str, Any] = {
        "input_ids": input_ids.to(where, non_blocking=True),
        "attention_mask": mask.to(where, non_blocking=True),
        "modality": "text",
    }
    if "token_type_ids" in getattr(model.tokenizer, "model_input_names", ()):
        features["token_type_ids"] = torch.zeros_like(features["input_ids"])
    return features


def count_truncated(model: Any, texts: list[str], prompt: str | None) -> int:
    """How many of ``texts`` (after ``prompt``) exceed the model's input limit (0 when the
    model has no tokenizer or limit to tell)."""
    limit = model.max_seq_length
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None or not isinstance(limit, int):
        return 0
    return count_over_limit(tokenizer, limit, [prompt + t for t in texts] if prompt else texts)


@functools.lru_cache(maxsize=8)
def special_tokens(tokenizer: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The special token ids a tokenizer puts before and after one sequence (e.g. CLS, SEP)."""
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    for at in range(len(full) - len(plain) + 1):
        if full[at : at + len(plain)] == plain:
            return tuple(full[:at]), tuple(full[at + len(plain) :])
    raise EmbeddingError(
        "Cannot tell where this model's tokenizer puts its special tokens.",
        "Report the model name; meanwhile its inputs go through sentence-transformers' encode.",
    )
