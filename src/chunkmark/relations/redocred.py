"""Re-DocRED as a chunkmark relation set.

Re-DocRED (Tan et al., EMNLP 2022; MIT licence; texts from English Wikipedia, CC BY-SA) is a
document-level relation extraction dataset: each document has a ``title``, ``sents`` (token
lists), ``vertexSet`` (entities as lists of mentions: ``name``, ``sent_id``, ``pos`` = [first
token, last token + 1], ``type``) and ``labels`` (``h``, ``t`` entity indices, ``r`` a Wikidata
property id, ``evidence`` sentence ids, empty for the triples Re-DocRED added).

:func:`prepare_redocred` turns such a file into a relation set (see
:mod:`chunkmark.relations.model`):

- the tokens are joined into natural text (:func:`detokenise`) with the exact character span of
  every token; sentences are joined by one space; each Re-DocRED document becomes
  ``TITLE\\n\\nBODY``;
- the documents are drawn with the seed (``docs`` of them, default all), shuffled with it and
  joined ``docs_per_corpus`` at a time, a blank line between, into corpus files
  ``redocred-00``, ``redocred-01``, ... so that retrieval meets distractors;
- entity ``d{index:03d}e{j}`` is entity ``j`` of the Re-DocRED document ``index``: its type is
  the most common mention type (ties: the first seen), its aliases the distinct mention texts in
  text order, its mentions their spans (each distinct span once);
- relation ``d{index:03d}r{k}`` is label ``k`` of that document: its support is the evidence
  sentences (runs of consecutive sentences merged into one span, ``support_kind="evidence"``),
  else the smallest window of consecutive sentences holding a head mention and a tail mention
  (fewest sentences, then the earliest; ``support_kind="window"``). A label that repeats an
  earlier (head, tail, property) of its document, and a label whose head is its tail, are
  skipped and counted;
- question ``d{index:03d}r{k}`` asks ``What is the {label} of {head}?`` (the head's first
  alias) with the support spans as its excerpts.

Every mention span and support span is checked against the text while building, and the
written folder is read back with :func:`~chunkmark.relations.model.load_relation_set` and
compared with what was built.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from chunkmark.datasets import download as downloads
from chunkmark.datasets.jsonl import load_jsonl, write_jsonl
from chunkmark.datasets.model import Dataset, Document
from chunkmark.datasets.suite import SUITE_SETS, Sample
from chunkmark.datasets.suite.base import Preparing, Scope
from chunkmark.datasets.suite.manifest import (
    MANIFEST_FILE,
    SourceInfo,
    Tally,
    read_manifest,
    summary,
    write_manifest,
)
from chunkmark.errors import ConfigError, DatasetError
from chunkmark.files import write_bytes_atomic
from chunkmark.paths import resolve_cache_dir
from chunkmark.relations.model import (
    BuiltSet,
    Entity,
    Relation,
    RelationSet,
    SupportKind,
    relation_question,
)
from chunkmark.spans import Span

CORPUS_PREFIX = "redocred"
DEFAULT_DOCS_PER_CORPUS = 20
REL_INFO_FILE = "rel_info.json"
SEPARATOR = "\n\n"  # between a title and its body, and between documents of a corpus file

REDOCRED = downloads.RemoteDataset(
    name="redocred",
    description="Re-DocRED's test split: 500 Wikipedia documents, 17,448 relations (MIT).",
    base_url="https://raw.githubusercontent.com/tonytan48/Re-DocRED/main",
    homepage="https://github.com/tonytan48/Re-DocRED",
    files=(
        downloads.RemoteFile(
            "test_revised.json",
            "data/test_revised.json",
            "ea673b7ef91e16510d7eb88863d3903e47318dc5653ef361266f27ae3b84723c",
        ),
        downloads.RemoteFile(
            REL_INFO_FILE,
            f"data/{REL_INFO_FILE}",
            "2a335535f33afd5b478544fadf97f7b6fdd0c486ee9e160cc6cacdf508f38509",
        ),
    ),
)

_SOURCE_FIX = (
    "Use a Re-DocRED split (data/test_revised.json of github.com/tonytan48/Re-DocRED), unchanged."
)


# --- detokenisation -----------------------------------------------------------------------------

# Penn Treebank escapes, should a file carry them, and what they stand for.
_PTB = {
    "-LRB-": "(",
    "-RRB-": ")",
    "-LSB-": "[",
    "-RSB-": "]",
    "-LCB-": "{",
    "-RCB-": "}",
    "``": "\u201c",
    "''": "\u201d",
}
_NO_SPACE_BEFORE = frozenset(
    {",", ".", "..", ";", ":", "!", "?", ")", "]", "}", "%", "\u201d", "\u2019"}
)
_NO_SPACE_AFTER = frozenset({"(", "[", "{", "$", "#", "\u201c", "\u2018"})
_JOINERS = frozenset({"-", "/"})  # no space on either side: step-daughter, PC/Macintosh
_RANGE_DASH = "\u2013"  # joined between numbers: 1903–1999
_STRAIGHT_QUOTES = frozenset({'"', "'"})
_CLITIC = re.compile(r"^(?:['\u2019](?:s|re|ve|ll|m|d)|n['\u2019]t)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Detokenised:
    """Natural text for a list of tokenised sentences, with the span of every token.

    ``tokens[i][j]`` is the span of token ``j`` of sentence ``i`` in ``text`` (its surface form:
    the token itself, or the character a Penn Treebank escape stands for); ``sentences[i]`` runs
    from the first token of sentence ``i`` to the end of its last.
    """

    text: str
    tokens: tuple[tuple[Span, ...], ...]
    sentences: tuple[Span, ...]


def surface(token: str) -> str:
    """How ``token`` is written in the text: itself, or what a Penn Treebank escape stands for."""
    return _PTB.get(token, token)


def detokenise(sentences: Sequence[Sequence[str]]) -> Detokenised:
    """Join tokenised sentences into natural text, recording every token's character span.

    Within a sentence tokens are separated by one space, except: none before closing
    punctuation (``, . ; : ! ? ) ] } %``, closing curly quotes) and clitics (``'s``, ``n't``,
    ``'re``, ``'ve``, ``'ll``, ``'m``, ``'d``); none after opening brackets, ``$``, ``#`` and
    opening curly quotes; none around ``-`` and ``/``, nor around ``–`` between two numbers;
    none around whitespace tokens (kept as they are: a no-break space stays one). Straight
    quotes (``"`` and ``'``) pair up left to right within a sentence: the opening one sticks to
    the next token, the closing one to the previous; an unpaired one sticks to the previous
    token (a possessive ``Simpsons'``) unless it starts the sentence. Sentences are joined by one
    space.
    """
    parts: list[str] = []
    token_spans: list[tuple[Span, ...]] = []
    sentence_spans: list[Span] = []
    position = 0
    for number, tokens in enumerate(sentences):
        if number:
            parts.append(" ")
            position += 1
        start = position
        spans: list[Span] = []
        for token, gap in zip(tokens, _gaps(tokens), strict=True):
            written = surface(token)
            parts.append(gap)
            position += len(gap)
            spans.append(Span(position, position + len(written)))
            parts.append(written)
            position += len(written)
        token_spans.append(tuple(spans))
        sentence_spans.append(Span(start, position))
    return Detokenised("".join(parts), tuple(token_spans), tuple(sentence_spans))


def _gaps(tokens: Sequence[str]) -> list[str]:
    """The separator written before each token of one sentence ("" before the first)."""
    left, right = _attachments(tokens)
    return ["" if i == 0 or right[i - 1] or left[i] else " " for i in range(len(tokens))]


def _attachments(tokens: Sequence[str]) -> tuple[list[bool], list[bool]]:
    """For each token: whether it sticks to the token before it, and to the token after it."""
    left = [False] * len(tokens)
    right = [False] * len(tokens)
    for i, token in enumerate(tokens):
        written = surface(token)
        if written in _NO_SPACE_BEFORE or _CLITIC.match(token):
            left[i] = True
        if written in _NO_SPACE_AFTER:
            right[i] = True
        if token in _JOINERS or (token and not token.strip()):
            left[i] = right[i] = True
        between_numbers = 0 < i < len(tokens) - 1 and _is_number(tokens[i - 1])
        if token == _RANGE_DASH and between_numbers and _is_number(tokens[i + 1]):
            left[i] = right[i] = True
    for quote in _STRAIGHT_QUOTES:
        _pair_quotes(tokens, quote, left, right)
    return left, right


def _pair_quotes(tokens: Sequence[str], quote: str, left: list[bool], right: list[bool]) -> None:
    places = [i for i, token in enumerate(tokens) if token == quote]
    opened = False
    for n, i in enumerate(places):
        if opened:
            left[i], opened = True, False
        elif n + 1 < len(places) or i == 0:
            right[i], opened = True, True
        else:
            left[i] = True


def _is_number(token: str) -> bool:
    return bool(token) and token.replace(",", "").replace(".", "").isdigit()


# --- reading the source -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mention:
    """A mention in Re-DocRED's terms: a sentence and a token range ``[start, end)`` in it."""

    sent_id: int
    start: int
    end: int
    type: str


@dataclass(frozen=True, slots=True)
class Label:
    """A gold relation in Re-DocRED's terms: entity indices, property id, evidence sentences."""

    head: int
    tail: int
    property_id: str
    evidence: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SourceDocument:
    """One checked Re-DocRED document; ``index`` is its position in the source file."""

    index: int
    title: str
    sents: tuple[tuple[str, ...], ...]
    entities: tuple[tuple[Mention, ...], ...]
    labels: tuple[Label, ...]


def read_redocred(path: str | Path) -> list[SourceDocument]:
    """Read and check a Re-DocRED file (a JSON list of documents).

    Raises :class:`DatasetError` naming the file (and the document index) when the file is
    missing, not UTF-8, not JSON, or a document lacks a key or points outside itself.
    """
    file = Path(path)
    data = _read_json(file, "the Re-DocRED file", "Pass an existing file with --redocred.")
    if not isinstance(data, list):
        raise DatasetError(
            f"{file} holds a JSON {_kind(data)}, not a list of documents.", _SOURCE_FIX
        )
    return [_document(file, index, item) for index, item in enumerate(data)]


def read_rel_info(path: str | Path) -> dict[str, str]:
    """Read a DocRED ``rel_info.json`` (Wikidata property id -> label).

    Raises :class:`DatasetError` naming the file when it is missing or not such a mapping.
    """
    file = Path(path)
    data = _read_json(
        file,
        "the relation labels file",
        f"Pass --rel-info FILE, or put DocRED's {REL_INFO_FILE} beside the Re-DocRED file.",
    )
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise DatasetError(
            f"{file} is not a JSON object of property id -> label.",
            f'Use DocRED\'s {REL_INFO_FILE} ({{"P17": "country", ...}}).',
        )
    return {str(k): v for k, v in data.items()}


def _read_json(file: Path, what: str, missing_fix: str) -> Any:
    if not file.is_file():
        raise DatasetError(f"{what} {file} does not exist.", missing_fix)
    try:
        text = file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"{file} is not UTF-8 (byte {exc.start}).", "Save the file as UTF-8, unchanged."
        ) from None
    except OSError as exc:
        raise DatasetError(f"cannot read {file} ({exc.strerror}).", missing_fix) from None
    try:
        return json.loads(text.removeprefix("\ufeff"))
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{file} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}).",
            "Download the file again; it is probably cut short or edited.",
        ) from None


def _kind(value: object) -> str:
    for kind, name in ((dict, "object"), (list, "list"), (str, "string")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


class _Where:
    """Builds the errors about one document of the source file."""

    def __init__(self, file: Path, index: int, item: object) -> None:
        title = item.get("title") if isinstance(item, dict) else None
        named = f" ({title!r})" if isinstance(title, str) else ""
        self.prefix = f"{file}, document {index}{named}"

    def error(self, problem: str) -> DatasetError:
        return DatasetError(f"{self.prefix}: {problem}.", _SOURCE_FIX)


def _document(file: Path, index: int, item: object) -> SourceDocument:
    where = _Where(file, index, item)
    if not isinstance(item, dict):
        raise where.error(f"is a JSON {_kind(item)}, not an object")
    missing = [k for k in ("title", "sents", "vertexSet", "labels") if k not in item]
    if missing:
        raise where.error(f"lacks the key(s) {', '.join(missing)}")
    if not isinstance(item["title"], str):
        raise where.error("title is not a string")
    sents = item["sents"]
    if not isinstance(sents, list) or not all(
        isinstance(s, list) and all(isinstance(t, str) for t in s) for s in sents
    ):
        raise where.error("sents is not a list of token lists")
    sentences = tuple(tuple(s) for s in sents)
    if not isinstance(item["vertexSet"], list) or not isinstance(item["labels"], list):
        raise where.error("vertexSet and labels must be lists")
    entities = tuple(
        _entity(where, sentences, j, value) for j, value in enumerate(item["vertexSet"])
    )
    labels = tuple(
        _label(where, len(sentences), len(entities), k, value)
        for k, value in enumerate(item["labels"])
    )
    return SourceDocument(index, item["title"], sentences, entities, labels)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _entity(
    where: _Where, sents: tuple[tuple[str, ...], ...], j: int, value: object
) -> tuple[Mention, ...]:
    if not isinstance(value, list) or not value:
        raise where.error(f"entity {j} of vertexSet is not a non-empty list of mentions")
    mentions: list[Mention] = []
    for m, item in enumerate(value):
        label = f"entity {j}, mention {m}"
        if not isinstance(item, dict) or not {"sent_id", "pos"} <= set(item):
            raise where.error(f"{label} is not an object with sent_id and pos")
        sent_id, pos, kind = item["sent_id"], item["pos"], item.get("type", "")
        if not _is_int(sent_id) or not 0 <= sent_id < len(sents):
            raise where.error(f"{label}: sent_id {sent_id!r} is not a sentence of the document")
        if (
            not isinstance(pos, list)
            or len(pos) != 2
            or not all(_is_int(p) for p in pos)
            or not 0 <= pos[0] < pos[1] <= len(sents[sent_id])
        ):
            raise where.error(
                f"{label}: pos {pos!r} is not [first, last + 1] within sentence {sent_id} "
                f"({len(sents[sent_id])} tokens)"
            )
        if not isinstance(kind, str):
            raise where.error(f"{label}: type is not a string")
        mentions.append(Mention(sent_id, pos[0], pos[1], kind))
    return tuple(mentions)


def _label(where: _Where, sentences: int, entities: int, k: int, value: object) -> Label:
    label = f"label {k}"
    if not isinstance(value, dict):
        raise where.error(f"{label} is not an object")
    missing = [key for key in ("h", "t", "r", "evidence") if key not in value]
    if missing:
        raise where.error(f"{label} lacks the key(s) {', '.join(missing)}")
    for key in ("h", "t"):
        if not _is_int(value[key]) or not 0 <= value[key] < entities:
            raise where.error(f"{label}: {key} {value[key]!r} is not an entity of vertexSet")
    if not isinstance(value["r"], str) or not value["r"]:
        raise where.error(f"{label}: r is not a property id")
    evidence = value["evidence"]
    if not isinstance(evidence, list) or not all(
        _is_int(e) and 0 <= e < sentences for e in evidence
    ):
        raise where.error(f"{label}: evidence {evidence!r} is not a list of sentence ids")
    return Label(value["h"], value["t"], value["r"], tuple(evidence))


# --- building the relation set ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PrepareStats:
    """What :func:`build_relation_set` made, and what it skipped or merged.

    ``mentions`` counts distinct mention spans; ``mentions_merged`` the source mentions that
    repeated a span of their entity. ``mentions_checked`` and ``supports_checked`` count the
    spans checked against the text (every one).
    """

    documents: int
    corpus_files: int
    sentences: int
    entities: int
    mentions: int
    mentions_merged: int
    relations: int
    evidence: int
    window: int
    same_sentence: int
    cross_sentence: int
    duplicates_skipped: int
    self_relations_skipped: int
    mentions_checked: int
    supports_checked: int


# A relation set built from Re-DocRED, before it is written.
PreparedSet = BuiltSet[PrepareStats]


def choose_documents(total: int, docs: int | None, seed: int) -> list[int]:
    """The indices of the documents to use, in corpus order: all ``total`` shuffled with
    ``seed`` (a ``random.Random``), then the first ``docs`` of them (all when None)."""
    if docs is not None and not 1 <= docs <= total:
        raise ConfigError(
            f"--docs {docs} is not between 1 and the {total} documents of the file.",
            f"Give --docs from 1 to {total}, or leave it out to use every document.",
        )
    order = list(range(total))
    random.Random(seed).shuffle(order)
    return order if docs is None else order[:docs]


def build_relation_set(
    documents: Sequence[SourceDocument],
    rel_info: Mapping[str, str],
    *,
    docs: int | None = None,
    seed: int = 0,
    docs_per_corpus: int = DEFAULT_DOCS_PER_CORPUS,
    name: str = CORPUS_PREFIX,
    source: str = "",
) -> PreparedSet:
    """Draw, detokenise and group ``documents`` into corpus files; build their entities,
    relations and questions, checking every mention and support span against the text.

    ``source`` names the file in error messages. Raises :class:`ConfigError` for a bad
    ``docs``/``docs_per_corpus`` and :class:`DatasetError` for a property id missing from
    ``rel_info``.
    """
    if docs_per_corpus < 1:
        raise ConfigError(
            f"--docs-per-corpus {docs_per_corpus} is below 1.", "Give a whole number from 1."
        )
    chosen = [documents[i] for i in choose_documents(len(documents), docs, seed)]
    groups = [chosen[i : i + docs_per_corpus] for i in range(0, len(chosen), docs_per_corpus)]
    width = max(2, len(str(len(groups) - 1)))
    builder = _Builder(rel_info, source)
    corpora = [
        builder.corpus(f"{CORPUS_PREFIX}-{n:0{width}d}", group) for n, group in enumerate(groups)
    ]
    questions = tuple(relation_question(r, builder.entity_by_id) for r in builder.relations)
    dataset = Dataset(name, tuple(corpora), questions, source=source)
    return PreparedSet(dataset, tuple(builder.entities), tuple(builder.relations), builder.stats())


class _Builder:
    """Accumulates entities, relations and counts over the corpus files."""

    def __init__(self, rel_info: Mapping[str, str], source: str) -> None:
        self.rel_info = rel_info
        self.source = source
        self.entities: list[Entity] = []
        self.entity_by_id: dict[str, Entity] = {}
        self.relations: list[Relation] = []
        self.counts: Counter[str] = Counter()

    def corpus(self, corpus_id: str, group: Sequence[SourceDocument]) -> Document:
        """One corpus file: the documents of ``group`` as ``TITLE\\n\\nBODY``, a blank line
        between them; their entities and relations are added to the builder."""
        parts: list[str] = []
        placed: list[_Placed] = []
        offset = 0
        for doc in group:
            if parts:
                parts.append(SEPARATOR)
                offset += len(SEPARATOR)
            body = detokenise(doc.sents)
            head = doc.title + SEPARATOR
            parts += [head, body.text]
            placed.append(_Placed(doc, body, offset + len(head), corpus_id))
            offset += len(head) + len(body.text)
        text = "".join(parts)
        for place in placed:
            self._document(place, text)
        self.counts["corpus_files"] += 1
        return Document(corpus_id, text)

    def _document(self, place: _Placed, text: str) -> None:
        doc = place.doc
        self.counts["documents"] += 1
        self.counts["sentences"] += len(doc.sents)
        ids = [f"d{doc.index:03d}e{j}" for j in range(len(doc.entities))]
        for entity_id, mentions in zip(ids, doc.entities, strict=True):
            entity = place.entity(entity_id, mentions, text, self._bug)
            self.entities.append(entity)
            self.entity_by_id[entity.id] = entity
            self.counts["mentions"] += len(entity.mentions)
            self.counts["mentions_merged"] += len(mentions) - len(entity.mentions)
            self.counts["mentions_checked"] += len(mentions)
        seen: set[tuple[int, int, str]] = set()
        for k, label in enumerate(doc.labels):
            key = (label.head, label.tail, label.property_id)
            if label.head == label.tail:
                self.counts["self_relations_skipped"] += 1
                continue
            if key in seen:
                self.counts["duplicates_skipped"] += 1
                continue
            seen.add(key)
            relation = place.relation(
                f"d{doc.index:03d}r{k}",
                (ids[label.head], ids[label.tail]),
                label,
                self._label_of(doc, label),
                text,
                self._bug,
            )
            self.relations.append(relation)
            self.counts["supports_checked"] += len(relation.support)
            self.counts[relation.support_kind] += 1
            self.counts["same_sentence" if relation.same_sentence else "cross_sentence"] += 1

    def _label_of(self, doc: SourceDocument, label: Label) -> str:
        found = self.rel_info.get(label.property_id)
        if found is None:
            raise DatasetError(
                f"{self.source}, document {doc.index} ({doc.title!r}): property "
                f"{label.property_id!r} is not in the relation labels file.",
                f"Use DocRED's complete {REL_INFO_FILE} (--rel-info FILE).",
            )
        return found

    def _bug(self, doc: SourceDocument, problem: str) -> DatasetError:
        return DatasetError(
            f"{self.source}, document {doc.index} ({doc.title!r}): {problem}.",
            "This is a bug in chunkmark's Re-DocRED conversion; please report it with the "
            "file and document index.",
        )

    def stats(self) -> PrepareStats:
        """Every field is its count, but ``entities`` and ``relations``: those kept."""
        kept = {"entities": len(self.entities), "relations": len(self.relations)}
        return PrepareStats(
            **{f.name: kept.get(f.name, self.counts[f.name]) for f in fields(PrepareStats)}
        )


_Bug = Callable[[SourceDocument, str], DatasetError]


@dataclass(frozen=True)
class _Placed:
    """A detokenised document placed in its corpus file: ``base`` is where its body starts."""

    doc: SourceDocument
    body: Detokenised
    base: int
    corpus_id: str

    def mention_span(self, mention: Mention) -> Span:
        tokens = self.body.tokens[mention.sent_id]
        return Span(
            self.base + tokens[mention.start].start, self.base + tokens[mention.end - 1].end
        )

    def sentences_span(self, first: int, last: int) -> Span:
        """Sentences ``first`` to ``last`` (inclusive) as one span of the corpus file."""
        sentences = self.body.sentences
        return Span(self.base + sentences[first].start, self.base + sentences[last].end)

    def entity(self, entity_id: str, mentions: Sequence[Mention], text: str, bug: _Bug) -> Entity:
        """The entity with these mentions (each distinct span once, in text order), every
        mention checked against ``text``."""
        spans: dict[Span, Mention] = {}
        for mention in mentions:
            span = self.mention_span(mention)
            tokens = self.doc.sents[mention.sent_id][mention.start : mention.end]
            check_span(text, span, tokens, lambda p: bug(self.doc, f"mention {p}"))
            spans.setdefault(span, mention)
        ordered = sorted(spans, key=lambda s: (s.start, s.end))
        aliases = dict.fromkeys(text[s.start : s.end] for s in ordered)
        kind = Counter(m.type for m in mentions).most_common(1)[0][0]
        return Entity(entity_id, self.corpus_id, kind, tuple(aliases), tuple(ordered))

    def relation(
        self,
        relation_id: str,
        ends: tuple[str, str],
        label: Label,
        name: str,
        text: str,
        bug: _Bug,
    ) -> Relation:
        """The relation of ``label`` with its support spans, each checked against ``text``."""
        heads = {m.sent_id for m in self.doc.entities[label.head]}
        tails = {m.sent_id for m in self.doc.entities[label.tail]}
        kind: SupportKind
        if label.evidence:
            runs, kind = sentence_runs(label.evidence), "evidence"
        else:
            runs, kind = [smallest_window(heads, tails)], "window"
        support = []
        for first, last in runs:
            span = self.sentences_span(first, last)
            tokens = [t for s in self.doc.sents[first : last + 1] for t in s]
            check_span(text, span, tokens, lambda p: bug(self.doc, f"support of {relation_id} {p}"))
            support.append(span)
        return Relation(
            relation_id,
            self.corpus_id,
            ends[0],
            ends[1],
            label.property_id,
            name,
            tuple(support),
            kind,
            bool(heads & tails),
        )


def check_span(
    text: str, span: Span, tokens: Sequence[str], error: Callable[[str], Exception]
) -> None:
    """Check that ``text[span]`` is exactly ``tokens`` written out: the first token at its start,
    the last at its end, every token in order with only whitespace between.

    Raises ``error(description)`` otherwise.
    """
    piece = text[span.start : span.end]
    written = [surface(t) for t in tokens]
    pattern = r"\s*".join(re.escape(w) for w in written)
    if not written or not piece or re.fullmatch(pattern, piece) is None:
        raise error(f"[{span.start}, {span.end}) reads {piece!r}, not the tokens {written}")


def sentence_runs(sentence_ids: Sequence[int]) -> list[tuple[int, int]]:
    """Runs of consecutive sentence ids as (first, last) pairs, in order (duplicates ignored)."""
    runs: list[tuple[int, int]] = []
    for sid in sorted(set(sentence_ids)):
        if runs and runs[-1][1] == sid - 1:
            runs[-1] = (runs[-1][0], sid)
        else:
            runs.append((sid, sid))
    return runs


def smallest_window(heads: set[int], tails: set[int]) -> tuple[int, int]:
    """The fewest consecutive sentences (first, last) that hold a sentence of ``heads`` and one
    of ``tails``; among windows of equal size, the earliest."""
    return min(
        ((min(h, t), max(h, t)) for h in heads for t in tails),
        key=lambda w: (w[1] - w[0], w[0]),
    )


# --- writing and downloading --------------------------------------------------------------------


def prepare_redocred(
    redocred: str | Path,
    out: str | Path,
    *,
    rel_info: str | Path | None = None,
    docs: int | None = None,
    seed: int = 0,
    docs_per_corpus: int = DEFAULT_DOCS_PER_CORPUS,
) -> tuple[RelationSet, PrepareStats]:
    """Turn the Re-DocRED file ``redocred`` into a relation set in ``out`` (see the module
    docstring); ``rel_info`` defaults to ``rel_info.json`` beside ``redocred``.

    Returns the set as read back from ``out`` and the counts. Same inputs and ``seed``, same
    files, byte for byte.
    """
    source = Path(redocred)
    labels = read_rel_info(rel_info if rel_info is not None else source.parent / REL_INFO_FILE)
    documents = read_redocred(source)
    prepared = build_relation_set(
        documents,
        labels,
        docs=docs,
        seed=seed,
        docs_per_corpus=docs_per_corpus,
        name=Path(out).resolve().name,
        source=str(source),
    )
    return prepared.write(out), prepared.stats


def redocred_dir() -> Path:
    """Where the downloaded Re-DocRED files are (or would be) cached."""
    return resolve_cache_dir() / "datasets" / REDOCRED.name


def ensure_redocred(progress: Callable[[str], None] | None = None) -> Path:
    """The cached Re-DocRED test split (``test_revised.json`` and ``rel_info.json``),
    downloaded first from the public repository if missing; returns the path of
    ``test_revised.json``. ``progress`` receives one line per file fetched.

    Each file is checked against its pinned SHA-256 before it is written. Raises
    :class:`DatasetError` naming ``--redocred`` as the fix when the files cannot be fetched.
    """
    folder = redocred_dir()
    for item in REDOCRED.files:
        target = folder / item.local
        if downloads.verified(target, item.sha256):
            continue
        url = f"{REDOCRED.base_url}/{item.remote}"
        if progress is not None:
            progress(f"downloading {url}")
        manual = (
            f"Download {url} (and {REL_INFO_FILE} beside it) yourself and pass the file with "
            "--redocred FILE, or check your connection."
        )
        data = downloads.fetch_url(url, manual, downloads.BASE_URL_ENV)
        digest = hashlib.sha256(data).hexdigest()
        if digest != item.sha256:
            raise DatasetError(
                f"{url} has SHA-256 {digest}, not the pinned {item.sha256}; it was not saved.",
                manual,
            )
        write_bytes_atomic(target, data)
    return folder / REDOCRED.files[0].local


EVIDENCE_SET = "redocred-evidence"


def evidence_dataset(
    redocred: str | Path,
    *,
    rel_info: str | Path | None = None,
    docs: int | None = None,
    seed: int = 0,
    name: str = EVIDENCE_SET,
) -> tuple[Dataset, dict[str, int]]:
    """Re-DocRED's relations that annotators supported with evidence sentences, as a plain
    question set: one document per Re-DocRED document (``TITLE\\n\\nBODY``, drawn with ``docs``
    and ``seed`` as :func:`build_relation_set` draws them), one question per relation whose
    support is its evidence sentences ("What is the LABEL of HEAD?"). Relations Re-DocRED added
    without evidence are left out; documents without such a relation stay as distractors.

    Returns the dataset and the counts: ``relations`` (all built), ``questions`` (kept),
    ``without_evidence``, ``duplicates_skipped``, ``self_relations_skipped``.
    """
    source = Path(redocred)
    labels = read_rel_info(rel_info if rel_info is not None else source.parent / REL_INFO_FILE)
    prepared = build_relation_set(
        read_redocred(source), labels, docs=docs, seed=seed, docs_per_corpus=1, source=str(source)
    )
    evidence = {r.id for r in prepared.relations if r.support_kind == "evidence"}
    questions = tuple(q for q in prepared.dataset.questions if q.id in evidence)
    dataset = Dataset(name, prepared.dataset.documents, questions, source=str(source))
    counts = {
        "relations": len(prepared.relations),
        "questions": len(questions),
        "without_evidence": len(prepared.relations) - len(questions),
        "duplicates_skipped": prepared.stats.duplicates_skipped,
        "self_relations_skipped": prepared.stats.self_relations_skipped,
    }
    return dataset, counts


@dataclass(frozen=True)
class EvidenceSet:
    """:func:`evidence_dataset` as a set of the suite (:data:`SUITE_SETS`): converted from the
    cached Re-DocRED test split (downloaded first), or from ``test_revised.json`` beside or
    inside ``--from``."""

    name: str = EVIDENCE_SET
    description: str = (
        "Re-DocRED evidence: 500 Wikipedia articles, 7,547 relations with annotated evidence "
        "sentences (MIT; texts CC BY-SA)."
    )
    docs: int | None = 100
    scope: Scope = "corpus"

    def folder(self, sample: Sample) -> Path:
        folder = self.name
        if sample.docs is not None:
            folder += f"-docs{sample.docs}-seed{sample.seed}"
        return resolve_cache_dir() / "datasets" / folder

    def prepare(self, how: Preparing) -> str:
        sample, from_dir = how.sample, how.from_dir
        folder = self.folder(sample)
        if not how.force and (folder / MANIFEST_FILE).is_file():
            return "already converted: " + summary(folder, read_manifest(folder))
        source: Path | None = None
        if from_dir is not None:
            for candidate in (from_dir / "redocred", from_dir.parent / "redocred", from_dir):
                if (candidate / "test_revised.json").is_file():
                    source = candidate / "test_revised.json"
                    break
        if source is None:
            source = ensure_redocred(how.progress)
        how.progress(f"{self.name}: converting {source}")
        dataset, counts = evidence_dataset(
            source, docs=sample.docs, seed=sample.seed, name=folder.name
        )
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MANIFEST_FILE).unlink(missing_ok=True)
        write_jsonl(dataset, folder)
        loaded = load_jsonl(folder)
        manifest = _evidence_manifest(loaded, sample, counts)
        write_manifest(folder, manifest)
        return summary(folder, manifest)


def _evidence_manifest(loaded: Dataset, sample: Sample, counts: dict[str, int]) -> dict[str, Any]:
    tally = Tally(raw_questions=counts["questions"], kept=len(loaded.questions))
    tally.placed["structural"] = sum(len(q.excerpts) for q in loaded.questions)
    tally.set_aside("relations without evidence sentences", counts["without_evidence"])
    tally.splits["test"] = len(loaded.questions)
    lengths = [len(d.text) for d in loaded.documents]
    licence = "MIT (dataset); texts from English Wikipedia (CC BY-SA)"
    return tally.manifest(
        name=EVIDENCE_SET,
        title="Re-DocRED evidence",
        source=SourceInfo("tonytan48/Re-DocRED", None, licence, REDOCRED.homepage),
        documents=len(loaded.documents),
        documents_in_source=None,
        docs=sample.docs,
        seed=sample.seed,
        mean_document_chars=statistics.fmean(lengths) if lengths else 0.0,
        notes=counts,
    )


SUITE_SETS.add(EvidenceSet())
