"""On the Chroma general benchmark corpora: chunk counts equal the reference's, and chunk texts
equal LangChain's splitters (the algorithms of Chroma's reference chunkers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkmark.chunkers import CHUNKERS

pytestmark = pytest.mark.integration

SEPARATORS = ["\n\n", "\n", ".", "?", "!", " ", ""]

# (size, overlap) -> total chunks over the 5 corpora, each chunked on its own.
FIXED_COUNTS = {(800, 400): 819, (400, 200): 1639, (400, 0): 824, (200, 0): 1644}
RECURSIVE_COUNTS = {(800, 400): 704, (400, 200): 1412, (400, 0): 1187, (200, 0): 2386}


@pytest.fixture(scope="module")
def corpora(chroma_general_dir: Path) -> list[str]:
    files = sorted((chroma_general_dir / "corpora").glob("*.md"))
    assert len(files) == 5
    return [f.read_bytes().decode("utf-8") for f in files]


def _texts(spec: str, corpora: list[str]) -> list[list[str]]:
    chunker, _ = CHUNKERS.build(spec)
    return [[text[s.start : s.end] for s in chunker(text)] for text in corpora]


@pytest.mark.parametrize(("size", "overlap"), list(FIXED_COUNTS))
def test_fixed_tokens_matches_reference(size: int, overlap: int, corpora: list[str]) -> None:
    ours = _texts(f"fixed_tokens(size={size}, overlap={overlap})", corpora)
    assert sum(map(len, ours)) == FIXED_COUNTS[size, overlap]
    langchain = pytest.importorskip("langchain_text_splitters")
    splitter = langchain.TokenTextSplitter(
        encoding_name="cl100k_base", chunk_size=size, chunk_overlap=overlap, disallowed_special=()
    )
    # The corpora's windows never split a character, so decoding is lossless.
    assert ours == [splitter.split_text(text) for text in corpora]


@pytest.mark.parametrize(("size", "overlap"), list(RECURSIVE_COUNTS))
def test_recursive_matches_reference(size: int, overlap: int, corpora: list[str]) -> None:
    ours = _texts(f"recursive(size={size}, overlap={overlap})", corpora)
    assert sum(map(len, ours)) == RECURSIVE_COUNTS[size, overlap]
    langchain = pytest.importorskip("langchain_text_splitters")
    splitter = langchain.RecursiveCharacterTextSplitter.from_tiktoken_encoder(
        encoding_name="cl100k_base",
        chunk_size=size,
        chunk_overlap=overlap,
        separators=SEPARATORS,
        keep_separator=True,
        disallowed_special=(),
    )
    assert ours == [splitter.split_text(text) for text in corpora]


@pytest.mark.parametrize("spec", ["sentences(n=5)", "words(n=100, overlap=20)"])
def test_text_chunkers_cover_the_corpora(spec: str, corpora: list[str]) -> None:
    chunker, _ = CHUNKERS.build(spec)
    for text in corpora:
        spans = list(chunker(text))
        assert spans and all(0 <= s.start < s.end <= len(text) for s in spans)
        covered = sum(s.end - s.start for s in spans)
        assert covered >= len("".join(text.split()))
