"""The options of question generation (``chunkmark synth generate``): what shapes the questions
(a rerun must use the same to resume) and how the run goes, checked before anything is read;
the styles and examples as the command line gives them; the LLM price table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from chunkmark.costs.llm_prices import LLMPrices, load_llm_prices
from chunkmark.costs.llm_prices import unknown_price as _unknown_price
from chunkmark.errors import ChunkmarkError
from chunkmark.llm import LLM

MAX_ATTEMPTS = 3  # answers asked for one slot before its window is skipped
MIN_WINDOW_CHARS = 200

STYLES = ("factoid", "multi", "paraphrased")
MODES = ("exact", "approximate", "given")
# Which candidate of a given-mode answer is kept: the first that passes the checks, the one that
# best singles out its passage within the document, or one that does so as often as the
# examples' questions single out their evidence (chunkmark.synth.specific); ``auto`` is
# ``examples`` when some example's evidence lies in the corpus, else ``first``.
PICKS = ("auto", "first", "specific", "examples")
# Questions asked for in one answer of the given mode (``--candidates``, this by default); one
# that passes the checks is kept, so a question the run already has costs no request when
# another candidate is new.
GIVEN_CANDIDATES = 3
MAX_CANDIDATES = 8
LAYOUTS = ("jsonl", "chroma")
EVIDENCE = ("sentence", "passage", "section")


class SynthError(ChunkmarkError):
    """Question generation cannot start or go on: a bad option, a price that is not known, an
    output folder holding something else."""


def load_prices(path: str | Path | None = None) -> LLMPrices:
    """The LLM price table (:mod:`chunkmark.costs.llm_prices`) with the entries of ``path``;
    a bad file is a :class:`SynthError`."""
    return load_llm_prices(path, SynthError)


def unknown_price(llm: LLM, table: LLMPrices) -> SynthError:
    """The error for a model without a price, naming the fix."""
    return _unknown_price(llm, table, SynthError)


@dataclass(frozen=True)
class GenerationOptions:
    """The options of one generation: everything that shapes the questions written (``questions``
    to ``candidates``; a rerun must use the same to resume), then how the run goes:
    ``examples`` are real questions shown as examples of style (a few a window) and never
    accepted again (``example_docs``: the document each was asked of, when known; a slot is
    shown examples of other documents; ``example_spans``: the offsets of each one's longest
    excerpt, when known); ``example_evidence`` their evidence lengths (characters), from which each
    window's evidence length is drawn, else ``evidence`` (``sentence``, ``passage`` or
    ``section``) sizes it; ``window_questions`` questions are asked in a row about each window
    (a server's prompt cache then reads the window once); ``filter_documents`` asks the LLM
    first which documents are relevant and complete and plans only those; ``pick`` (given
    mode) which candidate question of an answer is kept (:data:`PICKS`; ``auto`` is resolved
    by the run, which records the pick it used), of ``candidates`` asked for in one answer.
    ``concurrency`` (slots worked on at once, across documents; None: the LLM client's
    ``concurrency``, which also bounds the requests in flight), ``max_cost`` (US dollars; the run
    stops cleanly before the first request whose estimate would cross it) and ``prices`` (the
    price table; the shipped one when None)."""

    questions: int = 50
    seed: int = 0
    window_chars: int = 4000
    mode: str = "exact"
    styles: tuple[str, ...] = ("factoid",)
    examples: tuple[str, ...] = ()
    example_evidence: tuple[int, ...] = ()
    example_docs: tuple[str | None, ...] = ()
    example_spans: tuple[tuple[int, int] | None, ...] = ()
    evidence: str | None = None
    window_questions: int = 1
    filter_documents: bool = False
    layout: str = "jsonl"
    min_excerpt_chars: int = 20
    json_schema: bool = True
    pick: str = "auto"
    candidates: int = GIVEN_CANDIDATES
    concurrency: int | None = None
    max_cost: float | None = None
    prices: LLMPrices | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "styles", tuple(self.styles))
        object.__setattr__(self, "examples", tuple(self.examples))
        object.__setattr__(self, "example_evidence", tuple(self.example_evidence))
        object.__setattr__(self, "example_docs", tuple(self.example_docs))
        object.__setattr__(
            self,
            "example_spans",
            tuple(None if s is None else tuple(s) for s in self.example_spans),
        )

    @classmethod
    def given(cls, options: GenerationOptions | None, changes: dict[str, Any]) -> GenerationOptions:
        """``options`` (the defaults when None) with the fields named in ``changes`` replaced;
        a name that is not a field is a TypeError, as for a function's keyword."""
        unknown = sorted(set(changes) - {f.name for f in fields(cls)})
        if unknown:
            raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
        return replace(options if options is not None else cls(), **changes)

    def check(self) -> None:
        """Raise :class:`SynthError` for a value out of range."""
        if self.questions < 1:
            raise SynthError(
                f"--questions must be at least 1, got {self.questions}.", "Ask for 1 or more."
            )
        if self.window_chars < MIN_WINDOW_CHARS:
            raise SynthError(
                f"--window-chars must be at least {MIN_WINDOW_CHARS}, got {self.window_chars}.",
                "Windows of a few thousand characters work best (the default is 4000).",
            )
        if self.mode not in MODES:
            raise SynthError(
                f"Unknown excerpt mode {self.mode!r}.", f"Use one of: {', '.join(MODES)}."
            )
        if self.layout not in LAYOUTS:
            raise SynthError(
                f"Unknown layout {self.layout!r}.", f"Use one of: {', '.join(LAYOUTS)}."
            )
        unknown = [s for s in self.styles if s not in STYLES]
        if unknown or not self.styles:
            raise SynthError(
                f"Unknown question style {unknown[0]!r}."
                if unknown
                else "No question style given.",
                f"Use one or more of: {', '.join(STYLES)}.",
            )
        if self.mode == "given" and "multi" in self.styles:
            raise SynthError(
                "--excerpts given writes one question a passage, so it cannot ask the multi style.",
                "Use --style factoid or paraphrased with --excerpts given, or --excerpts exact.",
            )
        if self.pick not in PICKS:
            raise SynthError(f"Unknown --pick {self.pick!r}.", f"Use one of: {', '.join(PICKS)}.")
        if self.pick not in ("auto", "first") and self.mode != "given":
            raise SynthError(
                f"--pick {self.pick} chooses among the candidate questions of --excerpts given; "
                f"--excerpts {self.mode} writes one question an answer.",
                "Leave out --pick, or pass --excerpts given.",
            )
        if self.pick == "examples" and not any(self.example_spans):
            raise SynthError(
                "--pick examples needs examples with evidence: none of the --examples gives an "
                "excerpt's start and end.",
                "Pass examples as chunkmark label writes them (doc_id, excerpts with start and "
                "end), or --pick first or specific.",
            )
        if not 1 <= self.candidates <= MAX_CANDIDATES:
            raise SynthError(
                f"--candidates must be 1 to {MAX_CANDIDATES}, got {self.candidates}.",
                f"Pass a number from 1 to {MAX_CANDIDATES} ({GIVEN_CANDIDATES} by default).",
            )
        if self.candidates != GIVEN_CANDIDATES and self.mode != "given":
            raise SynthError(
                f"--candidates asks --excerpts given for several questions an answer; "
                f"--excerpts {self.mode} writes one.",
                "Leave out --candidates, or pass --excerpts given.",
            )
        if self.mode == "given" and self.window_questions > 1:
            raise SynthError(
                "--excerpts given asks one question a passage, so --window-questions must be 1.",
                "Leave out --window-questions.",
            )
        if self.evidence is not None and self.evidence not in EVIDENCE:
            raise SynthError(
                f"Unknown evidence size {self.evidence!r}.", f"Use one of: {', '.join(EVIDENCE)}."
            )
        if self.window_questions < 1:
            raise SynthError(
                f"--window-questions must be at least 1, got {self.window_questions}.",
                "Pass 1 (a new window for every question) or more.",
            )
        if self.min_excerpt_chars < 1:
            raise SynthError("min_excerpt_chars must be at least 1.", "Pass a positive number.")
        if self.concurrency is not None and self.concurrency < 1:
            raise SynthError(
                f"--concurrency must be at least 1, got {self.concurrency}.", "Pass 1 or more."
            )


def parse_styles(values: Sequence[str]) -> tuple[str, ...]:
    """Styles from repeated options and/or comma lists, in order, each once."""
    styles = [s.strip() for v in values for s in v.split(",") if s.strip()]
    return tuple(dict.fromkeys(styles))
