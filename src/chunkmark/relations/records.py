"""Delimited entity and relationship records: the format the extraction prompt asks for, and a
tolerant parser of answers written in it.

An answer is a list of records separated by :data:`RECORD_DELIMITER`, ending with
:data:`COMPLETION_MARKER`; a record's fields are separated by :data:`TUPLE_DELIMITER`::

    ("entity"<|>Marie Curie<|>PER<|>A physicist born in Warsaw.)##
    ("relationship"<|>Marie Curie<|>Warsaw<|>place of birth<|>She was born there.<|>9)##
    <|COMPLETE|>

How :func:`parse_records` reads an answer:

- Code fences (```` ``` ````, with a language when one ends its line) are dropped. Everything from the
  completion marker on (any case, spaces allowed inside ``<| |>``) is ignored; without the
  marker ``complete`` is False and the records read are kept.
- Records are split at :data:`RECORD_DELIMITER` and at line breaks that start a new record
  (a line opening with a record kind, in parentheses and quotes or not, then the field
  delimiter), so records on their own lines need no ``##``.
- A record may lack its parentheses; fields are stripped of whitespace and of the pairs of
  quotes around them (straight, curly or backticks); the kind is stripped of any quotes and
  read case-insensitively.
- ``entity`` records have 4 fields (kind, name, type, description). ``relationship`` records
  have 6 (kind, source, target, type, description, strength) or 5 (no strength). A strength
  that is not a finite number is None.
- A record that cannot be read is counted in ``malformed`` and skipped, never guessed: a wrong
  field count, an unknown kind, a name that is empty once normalised
  (:func:`chunkmark.relations.matching.normalise`), or a text that looks like a record (it opens
  with ``(`` or names a record kind) but has no field delimiter. A relationship whose source
  and target are the same name once normalised cannot be a pair of entities: it is skipped,
  counted in ``malformed`` and, separately, in ``self_relations``. Text that is not a record at
  all (a sentence before the first record) is ignored and counted in ``ignored``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from chunkmark.relations.matching import normalise
from chunkmark.relations.model import ExtractedEntity, ExtractedRelation

TUPLE_DELIMITER = "<|>"
RECORD_DELIMITER = "##"
COMPLETION_MARKER = "<|COMPLETE|>"
ENTITY = "entity"
RELATIONSHIP = "relationship"

ENTITY_FIELDS = 4
RELATIONSHIP_FIELDS = (5, 6)

_FENCE = re.compile(r"```[\w+-]*[ \t]*(?=\n|$)|```")
_COMPLETION = re.compile(r"<\|\s*complete\s*\|>", re.IGNORECASE)
_QUOTES = "\"'`“”‘’«»"  # straight, curly and backtick quotes
_KIND = rf"[{_QUOTES}]?\s*(?:{ENTITY}|{RELATIONSHIP})\s*[{_QUOTES}]?"
_RECORD_LINE = re.compile(rf"\n(?=[ \t]*\(?[ \t]*{_KIND}\s*{re.escape(TUPLE_DELIMITER)})", re.I)
_LOOKS_LIKE_RECORD = re.compile(rf"^\(|\b(?:{ENTITY}|{RELATIONSHIP})\b", re.IGNORECASE)


@dataclass(frozen=True)
class Records:
    """What an answer held: the records read, and counts of what could not be read.

    ``malformed`` includes ``self_relations`` (relationships from a name to itself);
    ``ignored`` counts pieces of text that were not records at all.
    """

    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()
    malformed: int = 0
    complete: bool = False
    self_relations: int = 0
    ignored: int = 0


def format_record(kind: str, *fields: object) -> str:
    """One record as the prompt asks for it: ``("kind"<|>field<|>...)``."""
    return "(" + TUPLE_DELIMITER.join([f'"{kind}"', *(str(f) for f in fields)]) + ")"


def format_answer(records: list[str], *, complete: bool = True) -> str:
    """Records joined by the record delimiter (one per line), then the completion marker."""
    body = f"{RECORD_DELIMITER}\n".join(records)
    if not complete:
        return body
    return f"{body}{RECORD_DELIMITER}\n{COMPLETION_MARKER}" if records else COMPLETION_MARKER


def parse_records(answer: str) -> Records:
    """The records of an answer, read tolerantly (see the module docs); never raises."""
    text = _FENCE.sub("", answer)
    marker = _COMPLETION.search(text)
    complete = marker is not None
    if marker is not None:
        text = text[: marker.start()]
    entities: list[ExtractedEntity] = []
    relations: list[ExtractedRelation] = []
    malformed = self_relations = ignored = 0
    for piece in _pieces(text):
        fields = _fields(piece)
        if fields is None:
            if _LOOKS_LIKE_RECORD.search(piece):
                malformed += 1
            else:
                ignored += 1
            continue
        kind = fields[0].strip(_QUOTES + " ").casefold()
        if kind == ENTITY and len(fields) == ENTITY_FIELDS and normalise(fields[1]):
            entities.append(ExtractedEntity(fields[1], fields[2], fields[3]))
        elif kind == RELATIONSHIP and len(fields) in RELATIONSHIP_FIELDS:
            source, target = fields[1], fields[2]
            if not normalise(source) or not normalise(target):
                malformed += 1
            elif normalise(source) == normalise(target):
                malformed += 1
                self_relations += 1
            else:
                strength = _strength(fields[5]) if len(fields) == 6 else None
                relations.append(ExtractedRelation(source, target, fields[3], fields[4], strength))
        else:
            malformed += 1
    return Records(tuple(entities), tuple(relations), malformed, complete, self_relations, ignored)


def _pieces(text: str) -> list[str]:
    """The non-blank pieces of text between record delimiters and record-starting lines."""
    out: list[str] = []
    for chunk in text.split(RECORD_DELIMITER):
        out.extend(p.strip() for p in _RECORD_LINE.split(chunk) if p.strip())
    return out


def _fields(piece: str) -> list[str] | None:
    """A record's fields without parentheses, whitespace and quotes; None without delimiter."""
    if TUPLE_DELIMITER not in piece:
        return None
    body = piece
    if body.startswith("("):
        body = body[1:]
    if body.endswith(")"):
        body = body[:-1]
    return [_unquote(f) for f in body.split(TUPLE_DELIMITER)]


def _unquote(field: str) -> str:
    """A field without whitespace and without the pairs of quotes around it."""
    text = field.strip()
    while len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
        text = text[1:-1].strip()
    return text


def _strength(field: str) -> float | None:
    try:
        value = float(field)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
