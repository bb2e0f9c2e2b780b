"""Structure-aware chunkers and the markdown block parser: tiny hand-computed cases.

Token counts quoted in comments are cl100k_base counts; the tests that depend on them assert
them first.
"""

from __future__ import annotations

import pytest

from chunkmark.chunkers import CHUNKERS, Chunk
from chunkmark.chunkers.markdown import parse_blocks, sections
from chunkmark.errors import SpecError
from chunkmark.spans import Span
from chunkmark.tokenizers import count_tokens


def _chunks(spec: str, text: str) -> list[Span | Chunk]:
    chunker, _ = CHUNKERS.build(spec)
    return list(chunker(text))


def _texts(spec: str, text: str) -> list[str]:
    return [text[c.start : c.end] for c in _chunks(spec, text)]


def _embeds(spec: str, text: str) -> list[str | None]:
    return [c.embed_text if isinstance(c, Chunk) else None for c in _chunks(spec, text)]


def _tokens(*texts: str) -> list[int]:
    return count_tokens(list(texts), "cl100k_base")


# --- the block parser -------------------------------------------------------------------------


def _blocks(text: str) -> list[tuple[str, str, bool]]:
    return [(b.kind, text[b.start : b.end], b.joined) for b in parse_blocks(text)]


def test_fences_hide_headings_and_blank_lines() -> None:
    text = "# A\n```py\n# not a heading\n\nstill code\n```\nafter\n## B\n"
    assert _blocks(text) == [
        ("heading", "# A", False),
        ("code", "```py\n# not a heading\n\nstill code\n```", False),
        ("text", "after", True),  # no blank line: same paragraph as the code block
        ("heading", "## B", False),
    ]


def test_fence_closing_rules() -> None:
    # A fence closes only with at least as many of the same character; a backtick "fence"
    # with a backtick after it is inline code, i.e. text.
    text = "~~~~\n~~~\n```\n# x\n~~~~~\ntail\n\n```a`b\n# h"
    assert _blocks(text) == [
        ("code", "~~~~\n~~~\n```\n# x\n~~~~~", False),
        ("text", "tail", True),
        ("text", "```a`b", False),
        ("heading", "# h", False),
    ]


def test_unclosed_fence_runs_to_the_end() -> None:
    text = "x\n\n```\n# h\n\nmore\n  \n"
    assert _blocks(text) == [("text", "x", False), ("code", "```\n# h\n\nmore", False)]


def test_atx_heading_syntax() -> None:
    text = "#tag\n\n####### seven\n\n    # four spaces\n\n   ### three\n\n#\n\n##\tTab"
    assert [(b.kind, b.level) for b in parse_blocks(text)] == [
        ("text", 0),
        ("text", 0),
        ("text", 0),
        ("heading", 3),
        ("heading", 1),
        ("heading", 2),
    ]


def test_tables() -> None:
    text = (
        "Intro:\n| a | b |\n|---|---|\n| 1 | 2 |\nafter\n\n"
        "x | y\n--- | :-:\n1 | 2\n\n"
        "p | q\nno delimiter row"
    )
    assert _blocks(text) == [
        ("text", "Intro:", False),
        ("table", "| a | b |\n|---|---|\n| 1 | 2 |", True),
        ("text", "after", True),
        ("table", "x | y\n--- | :-:\n1 | 2", False),
        ("text", "p | q\nno delimiter row", False),
    ]


def test_sections_tree() -> None:
    text = "pre\n# A\n## B\n### C\n#### deep\n## D\n# E"
    blocks = parse_blocks(text)
    secs = sections(blocks, max_level=3)
    assert [[text[h.start : h.end] for h in s.path] for s in secs] == [
        [],
        ["# A"],
        ["# A", "## B"],
        ["# A", "## B", "### C"],  # "#### deep" (level 4) stays inside C
        ["# A", "## D"],
        ["# E"],
    ]
    assert [s.parent for s in secs] == [-1, -1, 1, 2, 1, -1]
    # Block indices: pre 0, A 1, B 2, C 3, deep 4, D 5, E 6.
    assert [(s.first, s.stop, s.subtree_stop) for s in secs] == [
        (0, 1, 1),
        (1, 2, 6),
        (2, 3, 5),
        (3, 5, 5),
        (5, 6, 6),
        (6, 7, 7),
    ]


# --- paragraphs -------------------------------------------------------------------------------


def test_paragraphs_heading_context() -> None:
    text = "# Intro\n\nFirst para.\n\nSecond para."
    spec = "paragraphs(min_tokens=0, max_tokens=50)"
    assert _texts(spec, text) == ["# Intro", "First para.", "Second para."]
    assert _embeds(spec, text) == [
        None,  # the chunk is the heading itself
        "# Intro\n\nFirst para.",
        "# Intro\n\nSecond para.",
    ]
    no_context = "paragraphs(min_tokens=0, max_tokens=50, heading_context=False)"
    assert _embeds(no_context, text) == [None, None, None]
    # "# Intro" (2 tokens) < 3 takes in "First para."; the merged chunk starts with the heading.
    assert _tokens("# Intro", "First para.") == [2, 3]
    merged = "paragraphs(min_tokens=3, max_tokens=50)"
    assert _texts(merged, text) == ["# Intro\n\nFirst para.", "Second para."]
    assert _embeds(merged, text) == [None, "# Intro\n\nSecond para."]


def test_paragraphs_context_ignores_headings_in_code() -> None:
    text = "# Real\n\n```\n# fake\n```\n\nText."
    assert _embeds("paragraphs(min_tokens=0)", text) == [
        None,
        "# Real\n\n```\n# fake\n```",
        "# Real\n\nText.",
    ]


def test_paragraphs_merge_up_to_min_tokens_but_not_across_headings() -> None:
    # a, b, c, d: 1 token each; "# H": 2. "a" < 3 takes in "b" (3 tokens with "\n\n"), which
    # is enough; "c" cannot take in the heading; "# H" < 3 takes in "d".
    text = "a\n\nb\n\nc\n\n# H\n\nd"
    assert _tokens("a", "a\n\nb", "# H", "# H\n\nd") == [1, 3, 2, 4]
    assert _texts("paragraphs(min_tokens=3, max_tokens=50)", text) == [
        "a\n\nb",
        "c",
        "# H\n\nd",
    ]
    # Merging never goes over max_tokens: "a\n\nb" has 3 tokens > 2.
    assert _texts("paragraphs(min_tokens=2, max_tokens=2)", "a\n\nb") == ["a", "b"]


def test_paragraphs_split_at_sentences_then_words() -> None:
    text = "One two. Three four. Five six."
    assert _tokens("One two.", "One two. Three four.", "One two. Three four. Five six.") == [
        3,
        6,
        9,
    ]
    assert _texts("paragraphs(min_tokens=0, max_tokens=4)", text) == [
        "One two.",
        "Three four.",
        "Five six.",
    ]
    assert _texts("paragraphs(min_tokens=0, max_tokens=7)", text) == [
        "One two. Three four.",
        "Five six.",
    ]
    # One sentence over the limit: words, packed ("alpha beta" is 2 tokens).
    assert _tokens("alpha beta", "gamma delta") == [2, 2]
    assert _texts("paragraphs(min_tokens=0, max_tokens=2)", "alpha beta gamma delta") == [
        "alpha beta",
        "gamma delta",
    ]


def test_code_blocks_and_tables_stay_whole() -> None:
    text = "Intro.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\nx = 1\n\ny = 2\n```"
    for spec in ("paragraphs(min_tokens=0, max_tokens=50)", "heading_paragraph"):
        assert _texts(spec, text) == [
            "Intro.",
            "| a | b |\n|---|---|\n| 1 | 2 |",
            "```\nx = 1\n\ny = 2\n```",
        ]


def test_over_long_code_block_is_split_at_lines() -> None:
    # Lines: "```" 1 token, "x = 1" 4, ...; the whole block is 18 tokens. Packed by lines:
    # "```\nx = 1" (6) + "\ny = 2" would make 11 > 10.
    text = "```\nx = 1\ny = 2\nz = 3\n```"
    assert _tokens(
        text, "```\nx = 1", "```\nx = 1\ny = 2", "y = 2\nz = 3", "y = 2\nz = 3\n```"
    ) == [
        18,
        6,
        11,
        9,
        11,
    ]
    assert _texts("paragraphs(min_tokens=0, max_tokens=10)", text) == [
        "```\nx = 1",
        "y = 2\nz = 3",
        "```",
    ]


def test_over_long_line_is_split_at_words_then_characters() -> None:
    text = "```\nalpha beta gamma delta\n```"
    assert _texts("paragraphs(min_tokens=0, max_tokens=2)", text) == [
        "```",
        "alpha beta",
        "gamma delta",
        "```",
    ]
    # A word over the limit: the longest prefixes within it, cut at characters.
    word = "Supercalifragilisticexpialidocious"
    pieces = _texts("paragraphs(min_tokens=0, max_tokens=2)", word)
    assert "".join(pieces) == word
    sizes = _tokens(*pieces)
    assert all(n <= 2 for n in sizes)
    ends = [sum(map(len, pieces[: i + 1])) for i in range(len(pieces) - 1)]
    assert all(_tokens(word[e - len(p) : e + 1])[0] > 2 for p, e in zip(pieces, ends, strict=False))


def test_a_character_over_the_limit_is_kept_whole() -> None:
    # "😀" is 2 tokens: with max_tokens=1 each one is a chunk of its own, over the limit.
    assert _tokens("😀") == [2]
    assert _texts("paragraphs(min_tokens=0, max_tokens=1)", "😀😀") == ["😀", "😀"]


# --- markdown_sections ------------------------------------------------------------------------


def _spans(spec: str, text: str) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in _chunks(spec, text)]


def test_markdown_sections_overlap() -> None:
    # No whitespace: cut at p + 10; the next piece starts int(0.3 * 10) = 3 before the end.
    text = "0123456789" * 3
    spec = "markdown_sections(max_length=10, overlap_ratio=0.3)"
    assert _spans(spec, text) == [(0, 10), (7, 17), (14, 24), (21, 30)]


def test_markdown_sections_no_progress_fallback() -> None:
    # The first piece backs off to the space at 8 ("abcdefgh"). Overlap 9: 8 - 9 <= 0 would
    # not move forward, so the next piece starts at 8 (stripped: 9).
    text = "abcdefgh ijklmn"
    assert _spans("markdown_sections(max_length=10, overlap_ratio=0.9)", text) == [(0, 8), (9, 15)]
    # Overlap 5: the next piece starts at 3 and reaches 13 (no whitespace in [11, 13]).
    assert _spans("markdown_sections(max_length=10, overlap_ratio=0.5)", text) == [
        (0, 8),
        (3, 13),
        (9, 15),
    ]


def test_markdown_sections_back_off_to_line_break_or_space() -> None:
    # Window [0, 20): the last line break in its last fifth ([16, 20]) is at 17.
    text = "line one\nline two\nline three"
    spec = "markdown_sections(max_length=20, overlap_ratio=0)"
    assert _texts(spec, text) == ["line one\nline two", "line three"]
    # Window [0, 15): no line break; the last whitespace in [12, 15] is at 14.
    text = "aaaa bbbb cccc dddd"
    spec = "markdown_sections(max_length=15, overlap_ratio=0)"
    assert _texts(spec, text) == ["aaaa bbbb cccc", "dddd"]


def test_markdown_sections_start_at_chosen_levels_outside_code() -> None:
    text = "intro\n# Top\ntext\n## A\n```\n## not\n```\n### B\nb\n#### C\nc"
    assert _texts("markdown_sections", text) == [
        "intro\n# Top\ntext",
        "## A\n```\n## not\n```",
        "### B\nb\n#### C\nc",
    ]
    assert _texts("markdown_sections(levels=[1, 4])", text) == [
        "intro",
        "# Top\ntext\n## A\n```\n## not\n```\n### B\nb",
        "#### C\nc",
    ]


def test_markdown_sections_keep_a_code_block_whole() -> None:
    # The code block is [13, 26) (13 chars). The first window [0, 20) ends inside it: cut at
    # 13. Overlap 10 would start the next piece at 3, where [3, 23) would cut the block again:
    # it starts at 26 - 20 = 6 instead. The next overlap start, 16, is inside the block: the
    # last piece starts after it.
    text = "para one two\n```\nc1\nc2\n```\nend"
    assert _texts("markdown_sections(max_length=20, overlap_ratio=0.5)", text) == [
        "para one two",
        "ne two\n```\nc1\nc2\n```",
        "end",
    ]


def test_markdown_sections_cut_long_code_at_lines() -> None:
    # The block (19 chars) does not fit in 10: cut at its last line break before 10 (at 9).
    text = "```\nl1\nl2\nl3\nl4\n```"
    assert _texts("markdown_sections(max_length=10, overlap_ratio=0)", text) == [
        "```\nl1\nl2",
        "l3\nl4\n```",
    ]


# --- heading sections -------------------------------------------------------------------------

HEADED = "pre\n\n# A\n```\n# no\n```\n## B\nb text\n#### D\nd\n# E"


def test_headings() -> None:
    assert _texts("headings", HEADED) == [
        "pre",
        "# A\n```\n# no\n```",
        "## B\nb text\n#### D\nd",
        "# E",
    ]
    assert _texts("headings(max_level=1)", HEADED) == [
        "pre",
        "# A\n```\n# no\n```\n## B\nb text\n#### D\nd",
        "# E",
    ]
    assert all(isinstance(c, Span) for c in _chunks("headings", HEADED))


def test_heading_limited() -> None:
    text = "# Guide\n\n## Install\n\nRun one. Run two.\n\n## Use\n\nCall."
    # The Install section (9 tokens) is over 6: split at its paragraphs (2 and 6 tokens; 9
    # together). The Use section (5) fits.
    assert _tokens("## Install\n\nRun one. Run two.", "## Install", "Run one. Run two.") == [
        9,
        2,
        6,
    ]
    assert _tokens("## Use\n\nCall.") == [5]
    spec = "heading_limited(max_tokens=6)"
    assert _texts(spec, text) == ["# Guide", "## Install", "Run one. Run two.", "## Use\n\nCall."]
    assert _embeds(spec, text) == [
        None,
        "# Guide\n\n## Install",
        "# Guide > ## Install\n\nRun one. Run two.",
        "# Guide\n\n## Use\n\nCall.",
    ]


HIERARCHY = "intro\n# A\na text\n## B\nb text\n### C\nc text\n## D\nd text\n# E\ne text"


def test_hierarchical_leaves() -> None:
    spec = "hierarchical"
    assert _texts(spec, HIERARCHY) == [
        "intro",
        "# A\na text",
        "## B\nb text",
        "### C\nc text",
        "## D\nd text",
        "# E\ne text",
    ]
    assert _embeds(spec, HIERARCHY) == [
        None,
        None,
        "# A\n\n## B\nb text",
        "# A > ## B\n\n### C\nc text",
        "# A\n\n## D\nd text",
        None,
    ]
    # With max_level=2, "### C" is inside B's leaf.
    assert _texts("hierarchical(max_level=2)", HIERARCHY)[2] == "## B\nb text\n### C\nc text"


def test_hierarchical_parents() -> None:
    spec = "hierarchical(score_on='parents')"
    whole_a = "# A\na text\n## B\nb text\n### C\nc text\n## D\nd text"
    whole_b = "## B\nb text\n### C\nc text"
    assert _texts(spec, HIERARCHY) == [
        "intro",  # before any heading: its own span
        whole_a,  # A's own text: A has sub-headings, so A's whole section
        whole_b,  # B's own text: B's whole section
        whole_b,  # C, a leaf: its parent B
        whole_a,  # D, a leaf: its parent A
        "# E\ne text",  # a top-level leaf: its own span
    ]
    # What is embedded is the leaf, exactly as with score_on="leaves".
    assert _embeds(spec, HIERARCHY) == [
        None,
        "# A\na text",
        "# A\n\n## B\nb text",
        "# A > ## B\n\n### C\nc text",
        "# A\n\n## D\nd text",
        None,
    ]


def test_heading_paragraph() -> None:
    text = "# A\n\nPara one.\n\n```\ncode\n\nmore\n```\n\n## B\n\n#### deep\n\nPara two.\n\n## C"
    assert _texts("heading_paragraph", text) == [
        "# A\n\nPara one.",  # a heading joins the paragraph after it
        "```\ncode\n\nmore\n```",
        "## B\n\n#### deep\n\nPara two.",  # a deeper heading too
        "## C",  # nothing follows: alone
    ]
    assert _embeds("heading_paragraph", text) == [
        None,
        "# A\n\n```\ncode\n\nmore\n```",
        "# A\n\n## B\n\n#### deep\n\nPara two.",
        "# A\n\n## C",
    ]


def test_empty_and_whitespace_documents() -> None:
    for name in ("paragraphs", "markdown_sections", "headings", "heading_limited"):
        assert _chunks(name, "") == []
        assert _chunks(name, " \n\t\n ") == []
    for name in ("hierarchical", "hierarchical(score_on='parents')", "heading_paragraph"):
        assert _chunks(name, "\n\n") == []


@pytest.mark.parametrize(
    "spec",
    [
        "paragraphs(max_tokens=0)",
        "paragraphs(min_tokens=-1)",
        "paragraphs(min_tokens=300, max_tokens=256)",
        "paragraphs(encoding='no_such_encoding')",
        "markdown_sections(max_length=0)",
        "markdown_sections(overlap_ratio=1.0)",
        "markdown_sections(overlap_ratio=-0.1)",
        "markdown_sections(levels=[])",
        "markdown_sections(levels=[0, 2])",
        "markdown_sections(levels=[7])",
        "headings(max_level=0)",
        "headings(max_level=7)",
        "heading_limited(max_tokens=0)",
        "heading_limited(max_level=9)",
        "hierarchical(score_on='roots')",
        "hierarchical(max_level=0)",
        "heading_paragraph(max_level=-1)",
    ],
)
def test_bad_parameters_are_spec_errors(spec: str) -> None:
    with pytest.raises(SpecError):
        CHUNKERS.build(spec)


def test_levels_is_a_list_in_the_spec() -> None:
    _, spec = CHUNKERS.build("markdown_sections(levels=[1, 2])")
    assert str(spec) == "markdown_sections(max_length=1500, overlap_ratio=0.3, levels=[1, 2])"
