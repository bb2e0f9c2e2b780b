"""``unit="tokens"``: character positions mapped to cl100k_base token positions, multi-byte
characters split by byte-level BPE included, and metrics counted in tokens."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.metrics import (
    ChunkTable,
    QuestionTable,
    Scoring,
    TokenUnits,
    find_excerpt_copies,
    score_chunking_with,
    score_retrieval,
    score_retrieval_with,
)
from chunkmark.tokenizers import get_encoding

CRAB = "I like 🦀 crabs"  # cl100k_base: I| like| \xf0\x9f|\xa6|\x80| cr|abs
CAFE = "café au lait"  # ca|fé| au| la|it


@pytest.fixture(scope="module")
def units() -> TokenUnits:
    return TokenUnits.from_texts([CRAB, "", CAFE])


def test_the_tokenisation_these_tests_assume() -> None:
    enc = get_encoding("cl100k_base")
    pieces = [enc.decode_single_token_bytes(t) for t in enc.encode_ordinary(CRAB)]
    assert pieces == [b"I", b" like", b" \xf0\x9f", b"\xa6", b"\x80", b" cr", b"abs"]
    pieces = [enc.decode_single_token_bytes(t) for t in enc.encode_ordinary(CAFE)]
    assert pieces == [b"ca", b"f\xc3\xa9", b" au", b" la", b"it"]


def test_token_starts(units: TokenUnits) -> None:
    assert units.encoding == "cl100k_base"
    assert units.n_tokens.tolist() == [7, 0, 5]
    # Two tokens start inside the crab (character 7), after its first byte.
    assert (units.token_char[:7] - units.char_offset[0]).tolist() == [0, 1, 6, 7, 7, 8, 11]
    assert units.at_boundary[:7].tolist() == [True, True, True, False, False, True, True]
    assert (units.token_char[7:] - units.char_offset[2]).tolist() == [0, 2, 4, 7, 10]


def test_position_mapping(units: TokenUnits) -> None:
    doc = np.zeros(15, dtype=np.int64)
    pos = np.arange(15)
    # Start: the token holding the character's first byte (" \xf0\x9f" for the crab at 7).
    starts = units.convert(doc, pos, end=False)
    assert starts.tolist() == [0, 1, 1, 1, 1, 1, 2, 2, 5, 5, 5, 6, 6, 6, 7]
    # End: the tokens starting before the position (all three crab tokens before 8).
    ends = units.convert(doc, pos, end=True)
    assert ends.tolist() == [0, 1, 2, 2, 2, 2, 2, 3, 5, 6, 6, 6, 7, 7, 7]
    # The empty document has one position, 0, mapped to 0 both ways.
    assert units.convert(np.array([1]), np.array([0]), end=False).tolist() == [0]
    assert units.convert(np.array([1]), np.array([0]), end=True).tolist() == [0]
    # "é" (character 3 of the café text) lies inside the token "fé".
    assert units.convert_spans(np.array([2]), np.array([[3, 4]])).tolist() == [[1, 2]]


def test_span_mapping(units: TokenUnits) -> None:
    spans = np.array([[7, 8], [9, 14], [2, 6], [0, 14], [7, 7], [8, 8], [14, 14]])
    tokens = units.convert_spans(np.zeros(len(spans), dtype=np.int64), spans)
    # The crab: 3 tokens; "crabs": " cr" and "abs"; "like": " like"; empty spans stay empty.
    assert tokens.tolist() == [[2, 5], [5, 7], [1, 2], [0, 7], [2, 2], [5, 5], [7, 7]]


def test_out_of_range_positions_are_refused(units: TokenUnits) -> None:
    with pytest.raises(ValueError, match="outside its document"):
        units.convert(np.array([0]), np.array([15]), end=True)
    with pytest.raises(ValueError, match="outside its document"):
        units.convert(np.array([1]), np.array([1]), end=False)
    with pytest.raises(ValueError, match="document index"):
        units.convert(np.array([3]), np.array([0]), end=False)


def test_token_recall_and_precision(units: TokenUnits) -> None:
    scoring = Scoring(unit="tokens")
    q = QuestionTable.from_lists([0, 0], [[(7, 8)], [(9, 14)]])  # the crab; "crabs"
    chunks = ChunkTable.from_rows([(0, 0, 7), (0, 7, 14), (0, 8, 14)])
    ranking = np.array([[0], [0]], dtype=np.int64)
    chars = score_retrieval(q, chunks, ranking, 1)
    assert chars.recall.tolist() == [0.0, 0.0]  # "I like " only touches the crab
    tokens = score_retrieval_with(scoring, q, chunks, ranking, 1, units=units)
    # In tokens "I like " is [0, 3): it shares " \xf0\x9f" with the crab's [2, 5).
    assert tokens.recall[0] == pytest.approx(1 / 3)
    assert tokens.precision[0] == pytest.approx(1 / 3)
    assert tokens.iou[0] == pytest.approx(1 / (3 + 2))
    assert tokens.recall[1] == 0
    whole = score_retrieval_with(scoring, q, chunks, np.array([[1], [2]]), 1, units=units)
    assert whole.recall.tolist() == [1.0, 1.0]
    assert whole.precision[0] == pytest.approx(3 / 5)  # [2, 7) holds the crab's 3 tokens
    assert whole.precision[1] == pytest.approx(2 / 2)  # " crabs" is " cr" + "abs"
    assert chars.precision[1] == 0 and whole.precision[1] > 5 / 6  # chars: 5/6 for " crabs"


def test_token_omega_and_cut(units: TokenUnits) -> None:
    scoring = Scoring(unit="tokens")
    q = QuestionTable.from_lists([0], [[(7, 8)]])
    chunks = ChunkTable.from_rows([(0, 0, 7), (0, 7, 14)])
    omega = score_chunking_with(scoring, q, chunks, units=units)
    # H = both chunks, [0, 3) and [2, 7): all 7 tokens; the crab has 3.
    assert omega.precision_omega[0] == pytest.approx(3 / 7)
    assert omega.n_relevant[0] == 2  # in tokens both chunks overlap the crab
    ranking = np.array([[1]], dtype=np.int64)
    # The chunk "🦀 crabs" cut after the crab (character 8): tokens [2, 5).
    cut = score_retrieval_with(
        scoring, q, chunks, ranking, 1, omega.n_relevant, last_end=np.array([8]), units=units
    )
    assert cut.recall[0] == 1.0 and cut.precision[0] == 1.0
    # Cut inside the crab's token run is impossible in characters: at 7 the prefix is empty.
    empty = score_retrieval_with(
        scoring, q, chunks, ranking, 1, last_end=np.array([7]), units=units
    )
    assert empty.recall[0] == 0 and empty.hit[0] == 0


def test_token_copies(units: TokenUnits) -> None:
    texts = ["la la la"]  # "la" at 0, 3 and 6: tokens la| la| la
    tu = TokenUnits.from_texts(texts)
    q = QuestionTable.from_lists([0], [[(0, 2)]])
    chunks = ChunkTable.from_rows([(0, 0, 2), (0, 2, 8)])
    copies = find_excerpt_copies(texts, q)
    assert tu.convert_copies(copies, q.doc).spans[0].tolist() == [[1, 2], [2, 3]]
    s = score_retrieval_with(
        Scoring(excerpts="text", unit="tokens"),
        q, chunks, np.array([[1]]), 1, copies=copies, units=tu,
    )  # fmt: skip
    assert s.recall[0] == 1.0 and s.precision[0] == pytest.approx(1 / 2)


def _naive_maps(text: str) -> tuple[list[int], list[int]]:
    """Start and end maps of every character position, from bytes, one position at a time."""
    enc = get_encoding("cl100k_base")
    token_first_byte, at = [], 0
    for t in enc.encode_ordinary(text):
        token_first_byte.append(at)
        at += len(enc.decode_single_token_bytes(t))
    char_byte = [len(text[:p].encode("utf-8")) for p in range(len(text) + 1)]
    starts, ends = [], []
    for p, b in enumerate(char_byte):
        holding = [i for i, f in enumerate(token_first_byte) if f <= b]
        starts.append(len(token_first_byte) if p == len(text) else holding[-1])
        ends.append(sum(f < b for f in token_first_byte))
    return starts, ends


ALPHABET = "ab é日語🦀 \n.,"


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.text(ALPHABET, max_size=25), min_size=1, max_size=3))
def test_mapping_equals_naive_bytes(texts: list[str]) -> None:
    tu = TokenUnits.from_texts(texts)
    for d, text in enumerate(texts):
        pos = np.arange(len(text) + 1)
        doc = np.full(len(pos), d)
        starts, ends = _naive_maps(text)
        assert tu.convert(doc, pos, end=False).tolist() == starts
        assert tu.convert(doc, pos, end=True).tolist() == ends
        spans = np.stack(np.triu_indices(len(text) + 1), axis=-1)  # every s <= e
        token_spans = tu.convert_spans(np.full(len(spans), d), spans)
        length = token_spans[:, 1] - token_spans[:, 0]
        assert np.all((length >= 1) == (spans[:, 1] > spans[:, 0]))


@st.composite
def token_cases(draw: st.DrawFn):
    texts = [draw(st.text(ALPHABET, min_size=8, max_size=40)) for _ in range(2)]
    docs, excerpts = [], []
    for _ in range(draw(st.integers(1, 3))):
        d = draw(st.integers(0, 1))
        cuts = sorted(draw(st.sets(st.integers(0, len(texts[d])), min_size=2, max_size=4)))
        docs.append(d)
        excerpts.append(list(zip(cuts[::2], cuts[1::2], strict=False)))
    rows = []
    for _ in range(draw(st.integers(1, 8))):
        d = draw(st.integers(0, 1))
        s = draw(st.integers(0, len(texts[d]) - 1))
        rows.append((d, s, draw(st.integers(s + 1, len(texts[d])))))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    ranking = np.stack([rng.permutation(len(rows)) for _ in docs])
    k = draw(st.integers(1, len(rows)))
    return texts, QuestionTable.from_lists(docs, excerpts), ChunkTable.from_rows(rows), ranking, k


@settings(max_examples=150, deadline=None)
@given(case=token_cases(), denominator=st.sampled_from(["sum", "union"]))
def test_token_metrics_in_unit_interval(case, denominator) -> None:
    texts, q, c, ranking, k = case
    tu = TokenUnits.from_texts(texts)
    scoring = Scoring(unit="tokens", denominator=denominator)
    omega = score_chunking_with(scoring, q, c, units=tu)
    s = score_retrieval_with(scoring, q, c, ranking, k, omega.n_relevant, units=tu)
    for values in (s.recall, s.precision, s.iou, s.f1, s.ndcg, omega.precision_omega):
        assert np.all((values >= 0) & (values <= 1 + 1e-12))
    # A chunk overlapping an excerpt in characters overlaps it in tokens.
    chars = score_retrieval(q, c, ranking, k)
    assert np.all(s.hit >= chars.hit)
    assert np.all((s.recall > 0) >= (chars.recall > 0))
