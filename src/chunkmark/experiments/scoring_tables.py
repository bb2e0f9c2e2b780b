"""A cell's span tables under every scoring option it is scored with, built once each.

Token units (:class:`~chunkmark.metrics.scoring.TokenUnits`, one tokenisation of the
dataset's documents) and excerpt copies (:func:`~chunkmark.metrics.scoring.find_excerpt_copies`)
are built only when a scoring option needs them, and kept for the cell's every setting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chunkmark.metrics import ChunkTable, OmegaScores, QuestionTable, RetrievalScores
from chunkmark.metrics.scoring import (
    Scoring,
    TokenUnits,
    find_excerpt_copies,
    score_chunking_with,
    score_retrieval_with,
)
from chunkmark.metrics.span_metrics import ExcerptCopies
from chunkmark.spans import IntArray


@dataclass(frozen=True)
class ScoredTables:
    """The tables metrics read under one scoring option: in its unit, with its precision Ω."""

    questions: QuestionTable
    chunks: ChunkTable
    omega: OmegaScores


class ScoringTables:
    """One cell's questions and chunks (in characters), scored under any :class:`Scoring`."""

    def __init__(
        self,
        texts: Sequence[str],
        questions: QuestionTable,
        chunks: ChunkTable,
        key: str = "",
        omega: OmegaScores | None = None,
    ) -> None:
        """``key`` names the texts (the dataset's fingerprint) so that token units are built
        once per dataset, not once per cell; ``omega``, when the caller already scored the
        chunking in characters by position, is reused for the scorings that measure so."""
        self.texts = texts
        self.key = key
        self.questions = questions
        self.chunks = chunks
        self._units: TokenUnits | None = None
        self._copies: ExcerptCopies | None = None
        self._scored: dict[Scoring, ScoredTables] = {}
        self._omega = omega

    def units(self) -> TokenUnits:
        if self._units is None:
            self._units = _units_for(self.texts, self.key)
        return self._units

    def copies(self) -> ExcerptCopies:
        if self._copies is None:
            self._copies = find_excerpt_copies(self.texts, self.questions)
        return self._copies

    def tables(self, scoring: Scoring) -> ScoredTables:
        """The tables under ``scoring``, built on first use."""
        if scoring not in self._scored:
            units = self.units() if scoring.uses_tokens else None
            copies = self.copies() if scoring.uses_copies else None
            if self._omega is not None and units is None and copies is None:
                omega = self._omega
            else:
                omega = score_chunking_with(
                    scoring, self.questions, self.chunks, copies=copies, units=units
                )
            questions, chunks = self.questions, self.chunks
            if units is not None:
                questions, chunks = units.convert_questions(questions), units.convert_chunks(chunks)
            self._scored[scoring] = ScoredTables(questions, chunks, omega)
        return self._scored[scoring]

    def score(
        self, scoring: Scoring, ranking: IntArray, depth: IntArray, *, last_end: IntArray
    ) -> tuple[RetrievalScores, ScoredTables]:
        """Span and rank scores of the ``depth`` leading entries of ``ranking`` (the last one
        ending at ``last_end``, in characters), and the tables they were computed on."""
        tables = self.tables(scoring)
        scores = score_retrieval_with(
            scoring,
            self.questions,
            self.chunks,
            ranking,
            depth,
            tables.omega.n_relevant,
            last_end=last_end,
            copies=self.copies() if scoring.uses_copies else None,
            units=self.units() if scoring.uses_tokens else None,
        )
        return scores, tables


_UNITS: dict[str, TokenUnits] = {}


def _units_for(texts: Sequence[str], key: str) -> TokenUnits:
    """Token units of a dataset's texts, kept for the dataset the run is on (one at a time)."""
    if key and key in _UNITS:
        return _UNITS[key]
    units = TokenUnits.from_texts(list(texts))
    _UNITS.clear()
    if key:
        _UNITS[key] = units
    return units
