"""Which questions a recommendation rests on, when a dataset mixes questions by
``metadata.source`` (``human`` and ``synthetic``, or any other labels).

For each source, the cells ranked by their mean over that source's questions; for each source
other than the reference (``human``), Kendall's tau-b between its ranking and the reference's
with a bootstrap interval that resamples the two sources' questions independently
(:func:`chunkmark.metrics.agreement.ranking_agreement`); and the reference's own ceiling,
split-half: the interval of tau between the cell means of two random halves of the reference
questions (what two sets of half its size agree to, by its own noise alone). Then one sentence
saying which questions the recommendation rests on:

- every question, when each other source's interval lies above 0 ("400 synthetic questions
  that agree with your 30 human ones, tau 0.60 [0.30, 0.80]");
- the human questions, when some source's interval reaches 0 or below: the recommendation
  computed on all questions is then not the one to trust, and the human ranking's first cells
  are named;
- nothing to check against, when there is no reference question.

Datasets whose questions carry no ``metadata.source``, or only the reference, get no lines.
``chunkmark run`` prints these lines after its recommendation, the report shows them among its
notes, and ``chunkmark synth check`` prints the same for two question sets before a grid.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from chunkmark.datasets import Dataset, Question
from chunkmark.metrics.agreement import (
    LEVEL,
    RankingAgreement,
    kendall_taus,
    percentile_interval,
    ranking_agreement,
)

if TYPE_CHECKING:
    from chunkmark.report.comparisons import Recommendation
    from chunkmark.report.data import ReportData

FloatArray = npt.NDArray[np.float64]
SOURCE_KEY = "source"
REFERENCE = "human"
RESAMPLES = 1_000
SHOWN_CELLS = 3  # cells of a ranking named in a line


def question_sources(questions: Sequence[Question]) -> dict[str, str]:
    """Question id -> its ``metadata.source`` (questions without one are left out)."""
    out: dict[str, str] = {}
    for q in questions:
        source = q.metadata.get(SOURCE_KEY) if q.metadata else None
        if isinstance(source, str) and source.strip():
            out[q.id] = source.strip()
    return out


@dataclass(frozen=True)
class SourceRanking:
    """The cells by their mean over one source's questions, best first."""

    source: str
    questions: int
    cells: tuple[str, ...]
    means: tuple[float, ...]


@dataclass(frozen=True)
class Ceiling:
    """Tau between the cell means of two random halves of the reference questions: its median
    and ``level`` percentile interval over ``resamples`` splits."""

    tau: float
    low: float
    high: float
    resamples: int


@dataclass(frozen=True)
class SourceCheck:
    """One dataset's questions by source: counts, rankings, agreement of every other source
    with the reference, and the reference's split-half ceiling."""

    dataset: str
    metric: str
    counts: dict[str, int]
    rankings: tuple[SourceRanking, ...]
    agreement: dict[str, RankingAgreement]
    ceiling: Ceiling | None
    reference: str = REFERENCE

    def ranking(self, source: str) -> SourceRanking | None:
        return next((r for r in self.rankings if r.source == source), None)

    def agrees(self) -> bool:
        """Whether every other source's tau interval lies above 0 (and there is one)."""
        return (
            bool(self.agreement)
            and all(a.ci_low > 0 for a in self.agreement.values() if not math.isnan(a.ci_low))
            and not any(math.isnan(a.ci_low) for a in self.agreement.values())
        )

    def rests_on(self) -> str:
        """The sentence naming the questions the recommendation rests on."""
        ref = self.counts.get(self.reference, 0)
        others = {s: n for s, n in self.counts.items() if s != self.reference}
        listed = ", ".join(f"{n} {s}" for s, n in sorted(others.items()))
        total = sum(self.counts.values())
        if not ref:
            return (
                f"{self.dataset}: the recommendation rests on {total} questions ({listed}) and "
                f"none is {self.reference}: nothing checks that they rank the cells as your "
                "users' questions would."
            )
        taus = "; ".join(f"{s} {_tau(a)}" for s, a in sorted(self.agreement.items()))
        ceiling = (
            ""
            if self.ceiling is None
            else f"; the {self.reference} questions' own split-half ceiling "
            f"[{self.ceiling.low:+.2f}, {self.ceiling.high:+.2f}]"
        )
        if self.agrees():
            return (
                f"{self.dataset}: the recommendation rests on all {total} questions: {listed} "
                f"that rank the cells like your {ref} {self.reference} ones (Kendall's tau of "
                f"{self.metric}, 95% interval: {taus}{ceiling})."
            )
        human = self.ranking(self.reference)
        top = "" if human is None else ", ".join(human.cells[:SHOWN_CELLS])
        return (
            f"{self.dataset}: the recommendation above mixes {listed} questions that do not "
            f"rank the cells like your {ref} {self.reference} ones (Kendall's tau of "
            f"{self.metric}, 95% interval reaching 0: {taus}{ceiling}). It rests on your {ref} "
            f"{self.reference} questions alone: by their mean, {top}."
        )

    def lines(self) -> list[str]:
        """The sentence, then each source's first cells."""
        out = [self.rests_on()]
        for r in self.rankings:
            shown = ", ".join(
                f"{c} {100 * m:.1f}%" for c, m in zip(r.cells[:SHOWN_CELLS], r.means, strict=False)
            )
            out.append(f"  by {r.source} questions ({r.questions}): {shown}")
        return out


def _tau(a: RankingAgreement) -> str:
    return f"{a.tau:+.2f} [{a.ci_low:+.2f}, {a.ci_high:+.2f}]"


def split_half(
    values: npt.ArrayLike, *, resamples: int = RESAMPLES, level: float = LEVEL, seed: int = 0
) -> Ceiling | None:
    """Tau between the cell means of two random halves of the questions (``values`` is
    ``(cells, questions)``), over ``resamples`` random splits; None with fewer than 4 questions
    or 2 cells."""
    x = np.asarray(values, dtype=np.float64)
    x = x[:, ~np.isnan(x).any(axis=0)]
    cells, n = x.shape
    if n < 4 or cells < 2:
        return None
    rng = np.random.default_rng(seed)
    half = n // 2
    order = np.argsort(rng.random((resamples, n)), axis=1)
    first = np.zeros((resamples, n))
    np.put_along_axis(first, order[:, :half], 1.0, axis=1)
    second = np.zeros((resamples, n))
    np.put_along_axis(second, order[:, half : 2 * half], 1.0, axis=1)
    taus = kendall_taus((first @ x.T) / half, (second @ x.T) / half)
    kept = taus[~np.isnan(taus)]
    if not len(kept):
        return Ceiling(math.nan, math.nan, math.nan, 0)
    low, high = percentile_interval(kept, level)
    return Ceiling(float(np.median(kept)), low, high, len(kept))


def check_sources(
    dataset: str,
    metric: str,
    values: Mapping[str, FloatArray],
    question_ids: Sequence[str],
    sources: Mapping[str, str],
    *,
    reference: str = REFERENCE,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> SourceCheck | None:
    """The check of one dataset: ``values`` holds each cell's per-question values of ``metric``
    in the order of ``question_ids``; ``sources`` maps question ids to their source. None when
    the questions have no source other than the reference, or there are fewer than 2 cells."""
    labels = [sources.get(q, "") for q in question_ids]
    counts = Counter(s for s in labels if s)
    if not set(counts) - {reference} or len(values) < 2:
        return None
    names = list(values)
    matrix = np.vstack([np.asarray(values[c], dtype=np.float64) for c in names])
    by_source = {s: np.array([lab == s for lab in labels]) for s in counts}
    rankings = []
    for s in sorted(counts, key=lambda s: (s != reference, s)):
        means = np.nanmean(matrix[:, by_source[s]], axis=1)
        order = np.argsort(-means, kind="stable")
        rankings.append(
            SourceRanking(
                s,
                counts[s],
                tuple(names[i] for i in order),
                tuple(float(means[i]) for i in order),
            )
        )
    agreement: dict[str, RankingAgreement] = {}
    ceiling = None
    if counts.get(reference):
        ref = matrix[:, by_source[reference]]
        for s in counts:
            if s != reference:
                agreement[s] = ranking_agreement(
                    ref, matrix[:, by_source[s]], resamples=resamples, seed=seed
                )
        ceiling = split_half(ref, resamples=resamples, seed=seed + 1)
    return SourceCheck(
        dataset, metric, dict(counts), tuple(rankings), agreement, ceiling, reference
    )


def checks_for(
    data: ReportData,
    recommendations: Sequence[Recommendation],
    datasets: Mapping[str, Dataset] | None = None,
    *,
    resamples: int = RESAMPLES,
) -> list[SourceCheck]:
    """The check of each recommendation's dataset at its metric, setting and scoring;
    ``datasets`` by fingerprint when in memory (else read from where the run found them;
    a dataset no longer there is left out)."""
    checks = []
    for r in recommendations:
        info = next(d for d in data.datasets if d.key == r.dataset)
        dataset = (datasets or {}).get(info.fingerprint) or _load(info.source)
        sources = question_sources(dataset.questions) if dataset is not None else {}
        if not sources:
            continue
        check = check_recommendation(
            data, r.dataset, r.metric, r.retrieval, r.scoring, sources, resamples=resamples
        )
        if check is not None:
            checks.append(check)
    return checks


def check_recommendation(
    data: ReportData,
    dataset: str,
    metric: str,
    retrieval: str,
    scoring: str,
    sources: Mapping[str, str],
    *,
    resamples: int = RESAMPLES,
) -> SourceCheck | None:
    """:func:`check_sources` over the cells of ``dataset`` in a report's data (its scores at
    ``retrieval`` and ``scoring``), on the questions every cell scored."""
    from chunkmark.metrics import METRICS
    from chunkmark.report.data import paired_values

    cells = data.cells_of(dataset)
    shared = len({c.embedder for c in cells}) == 1
    by_key = {(c.index, retrieval, scoring): c for c in cells}
    found = paired_values(data, list(by_key), metric)
    if len(found) < 2:
        return None
    values = {by_key[k].chunker_short if shared else by_key[k].label: v for k, v in found.items()}
    order = data.shared_questions(list(found))
    label = METRICS[metric].label if metric in METRICS else metric
    return check_sources(dataset, label, values, order, sources, resamples=resamples)


def _load(source: str) -> Dataset | None:
    from chunkmark.datasets import load_dataset
    from chunkmark.errors import ChunkmarkError

    if not source or not Path(source).exists():
        return None
    try:
        return load_dataset(source)
    except ChunkmarkError:
        return None


def source_lines(
    data: ReportData,
    recommendations: Sequence[Recommendation],
    datasets: Mapping[str, Dataset] | None = None,
) -> list[str]:
    """The lines ``chunkmark run`` prints after its recommendation and the report shows among
    its notes (none when no dataset mixes sources)."""
    return [line for c in checks_for(data, recommendations, datasets) for line in c.lines()]
