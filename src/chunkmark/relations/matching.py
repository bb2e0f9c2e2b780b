"""Extracted names to gold entities, deterministically.

:func:`normalise` puts a name in a canonical form: Unicode NFKC, case folded, every punctuation
character (Unicode categories ``P*``) deleted, whitespace runs made one space, and a leading
article (``the``, ``a``, ``an`` followed by more words) dropped. ``"The U.S."`` and ``"us"`` are
both ``"us"``; ``"Jean-Paul"`` is ``"jeanpaul"``, not ``"jean paul"``.

:class:`EntityMatcher` holds one document's entities. A name matches an entity when its
normalised form equals the normalised form of one of the entity's aliases. When several
entities share that form, the one with a mention inside the chunk (``start >= chunk_start`` and
``end <= chunk_end``) wins; among several such (or none), the lowest id in *natural* order
(digit runs compared as numbers, so ``e2`` comes before ``e10``; equal numbers then compare as
text). Names that match nothing are counted, never guessed. An optional fallback compares
embeddings: an unmatched name goes to the alias most similar to it (cosine, ties to the first
alias in entity order) when the similarity is at least ``threshold``, counted separately.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from chunkmark.relations.model import Entity

if TYPE_CHECKING:
    from chunkmark.embedders.base import Embedder, FloatArray

ARTICLES = ("the", "a", "an")
DEFAULT_THRESHOLD = 0.85

_ARTICLE = re.compile(r"^(?:" + "|".join(ARTICLES) + r") (?=\S)")
_DIGITS = re.compile(r"(\d+)")


def normalise(name: str) -> str:
    """The canonical form of a name (see the module docs); ``""`` when nothing is left."""
    text = unicodedata.normalize("NFKC", name).casefold()
    text = "".join(c for c in text if not unicodedata.category(c).startswith("P"))
    text = " ".join(text.split())
    return _ARTICLE.sub("", text)


def natural_key(entity_id: str) -> tuple[tuple[int, int, str], ...]:
    """Sort key of an id in natural order: digit runs compare as numbers, the rest as text."""
    parts = _DIGITS.split(entity_id)
    return tuple(
        (0, int(part), part) if i % 2 else (1, 0, part) for i, part in enumerate(parts) if part
    )


class EntityMatcher:
    """Matches extracted names to the entities of one document (see the module docs).

    Counters: ``matched`` (by an alias), ``fallback`` (by embedding similarity), ``unmatched``
    (neither; the names as written in ``unmatched_names``), and ``ties`` (matches where several
    entities shared the name and the rule chose one).
    """

    def __init__(
        self,
        entities: Sequence[Entity],
        *,
        embedder: Embedder | None = None,
        threshold: float = DEFAULT_THRESHOLD,
    ) -> None:
        docs = {e.doc_id for e in entities}
        if len(docs) > 1:
            raise ValueError(
                f"an EntityMatcher holds the entities of one document, got {len(docs)} "
                "documents; build one matcher per document"
            )
        if not -1.0 <= threshold <= 1.0:
            raise ValueError(f"threshold is a cosine similarity in [-1, 1], got {threshold}")
        self.entities = tuple(sorted(entities, key=lambda e: natural_key(e.id)))
        self.embedder = embedder
        self.threshold = threshold
        self._by_alias: dict[str, list[Entity]] = {}
        self._aliases: list[tuple[str, str]] = []  # (alias as written, its normalised form)
        seen: set[str] = set()
        for entity in self.entities:
            for alias in entity.aliases:
                key = normalise(alias)
                if not key:
                    continue
                holders = self._by_alias.setdefault(key, [])
                if entity not in holders:
                    holders.append(entity)
                if alias not in seen:
                    seen.add(alias)
                    self._aliases.append((alias, key))
        self._alias_vectors: FloatArray | None = None
        self._similar: dict[str, str | None] = {}
        self.matched = 0
        self.fallback = 0
        self.unmatched = 0
        self.ties = 0
        self.unmatched_names: Counter[str] = Counter()

    def match(self, name: str, chunk_start: int, chunk_end: int) -> str | None:
        """The id of the entity ``name`` stands for, read in the chunk
        ``[chunk_start, chunk_end)`` of the document; None (counted) when there is none."""
        key = normalise(name)
        holders = self._by_alias.get(key) if key else None
        if holders:
            self.matched += 1
            return self._pick(holders, chunk_start, chunk_end)
        if self.embedder is not None and key:
            similar = self._most_similar(name)
            if similar is not None:
                self.fallback += 1
                return self._pick(self._by_alias[similar], chunk_start, chunk_end)
        self.unmatched += 1
        self.unmatched_names[name] += 1
        return None

    def counts(self) -> dict[str, int]:
        """The counters as a dict: ``matched``, ``fallback``, ``unmatched``, ``ties``."""
        return {
            "matched": self.matched,
            "fallback": self.fallback,
            "unmatched": self.unmatched,
            "ties": self.ties,
        }

    def _pick(self, holders: list[Entity], chunk_start: int, chunk_end: int) -> str:
        """The tie rule: a mention inside the chunk first, then the lowest id (holders are in
        natural id order already)."""
        if len(holders) == 1:
            return holders[0].id
        self.ties += 1
        for entity in holders:
            if any(chunk_start <= m.start and m.end <= chunk_end for m in entity.mentions):
                return entity.id
        return holders[0].id

    def _most_similar(self, name: str) -> str | None:
        """The normalised alias most similar to ``name`` at or above the threshold, or None."""
        if name in self._similar:
            return self._similar[name]
        found: str | None = None
        if self._aliases and self.embedder is not None:
            if self._alias_vectors is None:
                texts = [alias for alias, _ in self._aliases]
                self._alias_vectors = self.embedder.embed(texts, kind="document")
            vector = self.embedder.embed([name], kind="document")[0]
            scores = np.asarray(self._alias_vectors @ vector, dtype=np.float64)
            best = int(np.argmax(scores))  # the first of equal maxima
            if scores[best] >= self.threshold:
                found = self._aliases[best][1]
        self._similar[name] = found
        return found
