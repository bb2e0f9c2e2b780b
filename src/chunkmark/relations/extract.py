"""Extractors: entity and relationship records from each chunk, by an LLM or by the gold oracle.

Both are built from specs through :data:`EXTRACTORS`:

``llm(llm=SPEC, gleanings=0, max_tokens=2048, entity_types=[...], prompt='v1')``
    An LLM reads each chunk and answers delimited records (:mod:`chunkmark.relations.records`),
    asked with the versioned prompt ``prompts/extract_<version>.md`` (the system message: the
    format, the entity types, an example; the user message: the chunk). One call per *distinct*
    chunk text; the client's answer cache keys each call by the prompt and the chunk, so a rerun
    asks nothing. ``gleanings=n`` asks up to n more rounds (``prompts/glean_<version>.md``): the
    first request again, the answers so far, and a note that some records were missed; each
    round is a separate, cached call, and gleaning stops at the first round that adds no record
    (nor does it start when the first answer holds none). Records are merged across rounds, the
    first of equal records kept (entities by normalised name; relationships by normalised
    source, normalised target and case-folded type). Needs ``context`` (anything with
    ``llm(spec)``, e.g. :class:`chunkmark.chunkers.ChunkerContext`, which caches and seeds the
    client; without one the client has no cache) and optionally a :class:`Budget`.
``cooccurrence``
    The oracle, no model: for every gold relation of the chunk's document whose head and tail
    each have an alias in the chunk, a relationship record from the head's name to the tail's,
    typed with the relation's label; an entity record for every entity named. An alias is *in*
    the chunk when it occurs there case-sensitively as whole words: not preceded or followed by
    a Unicode word character (``(?<!\\w)alias(?!\\w)``; unlike ``\\b`` this also works for
    aliases that start or end with punctuation, such as ``U.S.``). The name written for an
    entity is its earliest-occurring alias (longest first at one position) that
    :class:`~chunkmark.relations.matching.EntityMatcher` maps back to that entity in this chunk,
    so matching its records gives exactly the pairs a perfect extractor could name; an entity
    none of whose aliases maps back (they are shared with an entity the tie rule prefers) is not
    named. Needs ``relations``: the gold relations (of the set, or of the documents extracted).

Cost: :meth:`LLMExtractor.requests` lists the first request of each distinct text and
:meth:`LLMExtractor.estimate` counts calls, tokens (``cl100k_base``, as the synth and plan
estimates count) and US dollars (the LLM price table of ``chunkmark.costs``) without a request:
answers the cache holds are replayed, the rest is bounded from below (one call per text) and
above (every gleaning round asked, every answer ``max_tokens`` long). A :class:`Budget`
(``max_calls`` requests, ``max_cost`` dollars) is enforced before each request that is not in
the cache, with a :class:`~chunkmark.costs.meter.CostMeter`; crossing it raises
:class:`~chunkmark.costs.budget.BudgetReached` saying what was done. An error of the
LLM client is raised as an :class:`~chunkmark.errors.LLMError` naming the chunk; answers
received before it stay in the client's cache.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, Protocol

from chunkmark.chunkers.contextual import fill
from chunkmark.errors import LLMError, SpecError
from chunkmark.files import shipped_prompt
from chunkmark.relations.matching import EntityMatcher, normalise
from chunkmark.relations.model import (
    ChunkInput,
    Entity,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    Extractor,
    Relation,
)
from chunkmark.relations.records import (
    COMPLETION_MARKER,
    RECORD_DELIMITER,
    TUPLE_DELIMITER,
    Records,
    parse_records,
)
from chunkmark.specs import Registry

if TYPE_CHECKING:
    from chunkmark.costs.llm_prices import LLMPrices
    from chunkmark.costs.meter import CostMeter
    from chunkmark.costs.prices import Price
    from chunkmark.llm import LLM

PromptVersion = Literal["v1"]
Gleanings = Literal[0, 1, 2]

DEFAULT_LLM = "openai(model='gpt-4o-mini')"
DEFAULT_ENTITY_TYPES: tuple[str, ...] = ("PER", "ORG", "LOC", "TIME", "NUM", "MISC")
TYPE_MEANINGS = {  # how the prompt explains the Re-DocRED types; other types are shown bare
    "PER": "people",
    "ORG": "organisations",
    "LOC": "places",
    "TIME": "dates and times",
    "NUM": "numbers and amounts",
    "MISC": "other named things: events, works, products, nationalities",
}
ANSWER_TOKENS = 2048
ENCODING = "cl100k_base"
USER_MARK = "<!-- user -->"  # splits a prompt file into its system and user messages
VERSION = 1

EXTRACTORS: Registry[Extractor] = Registry("extractor")


# --- prompts ----------------------------------------------------------------------------------


def prompt_text(name: str) -> str:
    """The text of the prompt file ``prompts/<name>.md`` shipped in the package."""
    return shipped_prompt("relations", f"{name}.md")


def _delimiters() -> dict[str, str]:
    return {
        "tuple_delimiter": TUPLE_DELIMITER,
        "record_delimiter": RECORD_DELIMITER,
        "completion_marker": COMPLETION_MARKER,
    }


def type_list(entity_types: Sequence[str]) -> str:
    """The entity types as the prompt lists them: ``PER (people), ORG (organisations), ...``."""
    return ", ".join(f"{t} ({TYPE_MEANINGS[t]})" if t in TYPE_MEANINGS else t for t in entity_types)


# --- budget and estimate ------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    """Limits of an extractor over its life: ``max_calls`` requests sent (answers the cache
    holds are free and not counted), and ``max_cost`` US dollars, the client's reported tokens
    since the extractor was built priced from ``prices`` (default: the shipped LLM price table),
    plus the next request's estimate (its ``cl100k_base`` prompt tokens and ``max_tokens``)."""

    max_calls: int | None = None
    max_cost: float | None = None
    prices: LLMPrices | None = None

    def __post_init__(self) -> None:
        if self.max_calls is not None and self.max_calls < 0:
            raise ValueError(f"max_calls must be 0 or more, got {self.max_calls}")
        if self.max_cost is not None and self.max_cost < 0:
            raise ValueError(f"max_cost must be 0 or more, got {self.max_cost}")


@dataclass(frozen=True)
class ExtractionEstimate:
    """What extracting would ask, found without a request.

    ``texts`` distinct chunk texts; ``cached_calls`` answers the cache already holds (free);
    ``calls`` the fewest requests still to send (gleaning stops at once), ``calls_max`` the
    most (every gleaning round asked); tokens likewise (input: ``cl100k_base`` tokens of the
    prompts plus the chat framing; output: ``max_tokens`` per request). Dollars are None when
    the model has no price.
    """

    model: str
    texts: int
    cached_calls: int
    calls: int
    calls_max: int
    input_tokens: int
    input_tokens_max: int
    output_tokens: int
    output_tokens_max: int
    usd: float | None
    usd_max: float | None


# --- the LLM extractor ----------------------------------------------------------------------------


class LLMSource(Protocol):
    """What builds LLM clients for an extractor (a chunker context does)."""

    def llm(self, spec: str) -> Any: ...


@dataclass
class _Merged:
    """Records of one chunk merged over rounds, the first of equal records kept."""

    entities: dict[str, ExtractedEntity]
    relations: dict[tuple[str, str, str], ExtractedRelation]
    malformed: int = 0
    complete: bool = True

    def add(self, records: Records) -> int:
        """Merge one answer's records; how many were new."""
        before = len(self.entities) + len(self.relations)
        for entity in records.entities:
            self.entities.setdefault(normalise(entity.name), entity)
        for relation in records.relations:
            key = (normalise(relation.source), normalise(relation.target), relation.type.casefold())
            self.relations.setdefault(key, relation)
        self.malformed += records.malformed
        self.complete = self.complete and records.complete
        return len(self.entities) + len(self.relations) - before


@dataclass
class _Counts:
    chunks: int = 0
    texts: int = 0
    answers: int = 0
    gleaning_rounds: int = 0
    requests: int = 0
    empty_answers: int = 0
    incomplete: int = 0
    malformed: int = 0
    self_relations: int = 0


class LLMExtractor:
    """Records of each distinct chunk text, by an LLM (see the module docs)."""

    def __init__(
        self,
        llm: LLM,
        *,
        gleanings: int = 0,
        max_tokens: int = ANSWER_TOKENS,
        entity_types: Sequence[str] = DEFAULT_ENTITY_TYPES,
        prompt: str = "v1",
        budget: Budget | None = None,
    ) -> None:
        if gleanings < 0:
            raise ValueError(f"gleanings must be 0 or more, got {gleanings}")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be positive, got {max_tokens}")
        self.llm = llm
        self.gleanings = gleanings
        self.max_tokens = max_tokens
        self.entity_types = tuple(_check_types(entity_types))
        self.prompt = prompt
        self.budget = budget
        system, _, user = prompt_text(f"extract_{prompt}").partition(USER_MARK)
        values = {"entity_types": type_list(self.entity_types), **_delimiters()}
        self.system = fill(system.strip("\n"), **values)
        self._user = fill(user.strip("\n"), **values)
        self._glean = fill(prompt_text(f"glean_{prompt}"), **_delimiters())
        self._counts = _Counts()
        self._lock = threading.Lock()
        self._meter: CostMeter | None = None
        if budget is not None and budget.max_cost is not None:
            self._meter = _meter(llm, budget)

    @property
    def name(self) -> str:
        return "llm"

    def identity(self) -> dict[str, Any]:
        """The extractor, the prompt version, gleanings, answer length, entity types and the
        LLM (its identity, temperature and seed)."""
        return {
            "extractor": "llm",
            "version": VERSION,
            "prompt": f"extract_{self.prompt}",
            "gleanings": self.gleanings,
            "max_tokens": self.max_tokens,
            "entity_types": list(self.entity_types),
            "llm": self.llm.identity(),
            "temperature": getattr(self.llm, "temperature", None),
            "seed": getattr(self.llm, "seed", None),
        }

    # requests -------------------------------------------------------------------------------

    def request(self, text: str) -> str:
        """The user message of the first round for a chunk text."""
        return fill(self._user, chunk=text)

    def glean_request(self, text: str, answers: Sequence[str]) -> str:
        """The user message of the gleaning round after ``answers`` (the earlier answers)."""
        shown = "\n".join(a.strip() for a in answers)
        return fill(self._glean, request=self.request(text), answers=shown)

    def requests(self, chunks: Sequence[ChunkInput]) -> list[tuple[str, str, int]]:
        """The first-round ``(system, user, max_tokens)`` request of each distinct chunk text
        (gleaning rounds depend on the answers)."""
        texts = dict.fromkeys(c.text for c in chunks)
        return [(self.system, self.request(t), self.max_tokens) for t in texts]

    # extraction --------------------------------------------------------------------------------

    def extract(self, chunks: Sequence[ChunkInput]) -> list[Extraction]:
        """One :class:`Extraction` per chunk, in order; each distinct text is extracted once.

        A text's calls, cache hits and tokens are on its first chunk's extraction; later chunks
        with the same text get the same records with those counts at 0, so summing over the
        list gives the work done. Distinct texts are extracted concurrently, up to the client's
        ``concurrency`` (a text's gleaning rounds one after the other), and the list is the
        same whatever it is; with a budget they are extracted one at a time, so that the run
        stops at the request a sequential run stops at. Raises
        :class:`~chunkmark.costs.budget.BudgetReached` before a request that would cross the
        budget, and :class:`~chunkmark.errors.LLMError` (naming the chunk) when the client
        fails: for the first failing text in order, as a sequential run would.
        """
        from chunkmark.costs.budget import BudgetReached
        from chunkmark.llm.pool import ordered, workers_for

        first: dict[str, int] = {}
        for index, chunk in enumerate(chunks):
            first.setdefault(chunk.text, index)
        total = len(first)
        workers = 1 if self._budgeted() else workers_for(self.llm)

        def one(index: int) -> tuple[Extraction, _Counts]:
            tally = _Counts()
            try:
                return self._extract_one(chunks[index], index, tally), tally
            except BaseException:
                self._merge(tally)  # what a failing text sent still counts
                raise

        extracted = ordered(one, list(first.values()), workers=workers)
        done: dict[str, Extraction] = {}
        out: list[Extraction] = []
        for index, chunk in enumerate(chunks):
            self._counts.chunks += 1
            found = done.get(chunk.text)
            if found is not None:
                out.append(replace(found, calls=0, cache_hits=0, input_tokens=0, output_tokens=0))
                continue
            try:
                found, tally = next(extracted)
            except BudgetReached as exc:
                raise BudgetReached(
                    f"{exc.problem} Extraction stopped at chunk {index} ({_where(chunk)}): "
                    f"{len(done)} of {total} distinct chunk texts were extracted, "
                    f"{self._counts.requests} requests sent by this extractor.",
                    self._rerun_fix(exc.fix),
                ) from None
            self._merge(tally)
            done[chunk.text] = found
            out.append(found)
        return out

    def _budgeted(self) -> bool:
        b = self.budget
        return b is not None and (b.max_calls is not None or b.max_cost is not None)

    def _merge(self, tally: _Counts) -> None:
        """Add one text's counts to the extractor's."""
        with self._lock:
            for f in fields(_Counts):
                if f.name != "chunks":
                    setattr(
                        self._counts, f.name, getattr(self._counts, f.name) + getattr(tally, f.name)
                    )

    def _extract_one(self, chunk: ChunkInput, index: int, tally: _Counts) -> Extraction:
        """One distinct text's rounds, in order (in any thread; counts go to ``tally``)."""
        from chunkmark.llm.pool import thread_stats

        before = thread_stats(self.llm)
        tally.texts += 1
        merged = _Merged({}, {})
        answers: list[str] = []
        for round_ in range(1 + self.gleanings):
            user = (
                self.request(chunk.text) if round_ == 0 else self.glean_request(chunk.text, answers)
            )
            answer = self._ask(user, chunk, index, tally)
            answers.append(answer)
            records = parse_records(answer)
            _count(tally, records, round_)
            if merged.add(records) == 0:
                break
        used = thread_stats(self.llm) - before
        return Extraction(
            entities=tuple(merged.entities.values()),
            relations=tuple(merged.relations.values()),
            malformed=merged.malformed,
            complete=merged.complete,
            calls=used.calls - used.cache_hits,
            cache_hits=used.cache_hits,
            input_tokens=used.input_tokens,
            output_tokens=used.output_tokens,
        )

    def _ask(self, user: str, chunk: ChunkInput, index: int, tally: _Counts) -> str:
        """One answer ("" when the model answered nothing), within the budget."""
        from chunkmark.llm import EmptyAnswerError
        from chunkmark.llm.pool import thread_stats

        before = thread_stats(self.llm)
        try:
            with self._guard(user, tally):
                return self.llm.complete(self.system, user, max_tokens=self.max_tokens)
        except EmptyAnswerError:
            tally.empty_answers += 1
            return ""
        except LLMError as exc:
            raise LLMError(
                f"Relation extraction failed at chunk {index} ({_where(chunk)}): {exc.problem}",
                self._rerun_fix(exc.fix),
            ) from exc
        finally:
            used = thread_stats(self.llm) - before
            tally.requests += used.calls - used.cache_hits

    def _guard(self, user: str, tally: _Counts) -> AbstractContextManager[None]:
        """The budget check of one request: nothing when it is answered by the cache. (With a
        budget, texts are extracted one at a time: ``tally`` holds the current text's.)"""
        from chunkmark.costs.budget import BudgetReached

        if self.budget is None or _cached_answer(self.llm, self.system, user, self.max_tokens):
            return nullcontext()
        limit = self.budget.max_calls
        sent = self._counts.requests + tally.requests
        if limit is not None and sent >= limit:
            raise BudgetReached(
                f"The next request would be number {sent + 1}, past max_calls={limit}.",
                "Raise max_calls and run again.",
            )
        if self._meter is None:
            return nullcontext()
        price = self._meter.price
        tokens = _prompt_tokens(self.system, user)
        estimate = 0.0 if price is None else price.cost(tokens, self.max_tokens)
        return self._meter.request(estimate)

    def _rerun_fix(self, fix: str | None) -> str:
        first = (fix or "Fix the problem and run again.").rstrip()
        if getattr(self.llm, "cache", None) is None:
            return f"{first} (This client has no answer cache: a rerun asks everything again.)"
        return (
            f"{first} Every answer received is in the LLM answer cache, so running again asks "
            "only the rest."
        )

    def counters(self) -> dict[str, int]:
        """What this extractor did: ``chunks`` seen, distinct ``texts`` extracted, ``answers``
        read (``gleaning_rounds`` of them after the first), ``requests`` sent (answers not in
        the cache), ``empty_answers``, ``incomplete`` answers (no completion marker),
        ``malformed`` records (``self_relations`` of them)."""
        return asdict(self._counts)

    # estimate -----------------------------------------------------------------------------------

    def estimate(
        self, chunks: Sequence[ChunkInput], prices: LLMPrices | None = None
    ) -> ExtractionEstimate:
        """Calls, tokens and dollars of extracting ``chunks``, without any request (see the
        module docs); the cache is only read. ``prices`` defaults to the budget's table, else
        the shipped one."""
        from chunkmark.costs.llm_prices import load_llm_prices, price_of

        if prices is None and self.budget is not None:
            prices = self.budget.prices
        table = prices if prices is not None else load_llm_prices()
        price = price_of(self.llm, table)
        totals = dict.fromkeys(
            ("cached", "calls", "calls_max", "input", "input_max", "output", "output_max"), 0
        )
        texts = list(dict.fromkeys(c.text for c in chunks))
        for text in texts:
            for name, value in self._text_estimate(text).items():
                totals[name] += value
        return ExtractionEstimate(
            model=str(self.llm.identity().get("model", self.llm.name)),
            texts=len(texts),
            cached_calls=totals["cached"],
            calls=totals["calls"],
            calls_max=totals["calls_max"],
            input_tokens=totals["input"],
            input_tokens_max=totals["input_max"],
            output_tokens=totals["output"],
            output_tokens_max=totals["output_max"],
            usd=_cost(price, totals["input"], totals["output"]),
            usd_max=_cost(price, totals["input_max"], totals["output_max"]),
        )

    def _text_estimate(self, text: str) -> dict[str, int]:
        """One text: cached rounds replayed, then the bounds from the first unanswered round."""
        counts = dict.fromkeys(("cached", "calls", "calls_max", "input", "input_max"), 0)
        merged = _Merged({}, {})
        answers: list[str] = []
        rounds = 1 + self.gleanings
        for round_ in range(rounds):
            user = self.request(text) if round_ == 0 else self.glean_request(text, answers)
            answer = _cached_answer(self.llm, self.system, user, self.max_tokens)
            if answer is None:
                tokens = _prompt_tokens(self.system, user)
                counts["calls"] = 1
                counts["calls_max"] = rounds - round_
                counts["input"] = tokens
                counts["input_max"] = tokens + sum(
                    self._glean_bound(text, answers, later - round_)
                    for later in range(round_ + 1, rounds)
                )
                break
            counts["cached"] += 1
            answers.append(answer)
            if merged.add(parse_records(answer)) == 0:
                break
        counts["output"] = counts["calls"] * self.max_tokens
        counts["output_max"] = counts["calls_max"] * self.max_tokens
        return counts

    def _glean_bound(self, text: str, known: list[str], unknown: int) -> int:
        """At most the prompt tokens of a gleaning round after the ``known`` answers and
        ``unknown`` more (each at most ``max_tokens``)."""
        return _prompt_tokens(self.system, self.glean_request(text, known)) + (
            unknown * self.max_tokens
        )


def _count(c: _Counts, records: Records, round_: int) -> None:
    """Count one answer's records."""
    c.answers += 1
    c.gleaning_rounds += int(round_ > 0)
    c.incomplete += int(not records.complete)
    c.malformed += records.malformed
    c.self_relations += records.self_relations


def _check_types(entity_types: Sequence[str]) -> list[str]:
    """The entity types stripped; ValueError for none, blanks, repeats or a delimiter inside."""
    types = [t.strip() for t in entity_types]
    if not types or any(not t for t in types):
        raise ValueError("entity_types must be a non-empty list of non-empty names")
    if len(set(types)) != len(types):
        raise ValueError(f"entity_types repeats a type: {types}")
    for t in types:
        if TUPLE_DELIMITER in t or RECORD_DELIMITER in t:
            raise ValueError(f"entity type {t!r} contains a record delimiter")
    return types


def _where(chunk: ChunkInput) -> str:
    return f"document {chunk.doc_id!r}, characters [{chunk.start}, {chunk.end})"


def _meter(llm: LLM, budget: Budget) -> CostMeter:
    """The cost meter of a budget with ``max_cost``; an unknown price is an error."""
    from chunkmark.costs.llm_prices import load_llm_prices, price_of, unknown_price
    from chunkmark.costs.meter import CostMeter
    from chunkmark.costs.price_files import PriceError

    table = budget.prices if budget.prices is not None else load_llm_prices()
    price = price_of(llm, table)
    if price is None:
        raise unknown_price(llm, table, PriceError)
    return CostMeter(llm, price, budget.max_cost)


def _prompt_tokens(system: str, user: str) -> int:
    """Prompt tokens of one request: ``cl100k_base`` tokens plus the chat framing."""
    from chunkmark.costs.meter import MESSAGE_TOKENS
    from chunkmark.tokenizers import count_tokens

    return sum(count_tokens([system, user], ENCODING)) + MESSAGE_TOKENS


def _cost(price: Price | None, input_tokens: int, output_tokens: int) -> float | None:
    return None if price is None else price.cost(input_tokens, output_tokens)


def _cached_answer(llm: LLM, system: str, user: str, max_tokens: int) -> str | None:
    """The answer ``llm``'s cache holds for this request (read only), or None."""
    from chunkmark.llm import BaseLLM

    if not isinstance(llm, BaseLLM):
        return None
    return llm.cached_answer(system, user, max_tokens=max_tokens)


# --- the oracle -------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _alias_pattern(alias: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(alias) + r"(?!\w)")


def names_in(entity: Entity, text: str) -> list[tuple[int, str]]:
    """``(position, alias)`` of each of the entity's aliases occurring in ``text`` as whole
    words (see the module docs), by first position, longest first at one position."""
    found: list[tuple[int, int, str]] = []
    for alias in dict.fromkeys(entity.aliases):
        # A plain substring test first: most aliases of a document are not in a given chunk.
        hit = _alias_pattern(alias).search(text) if alias and alias in text else None
        if hit is not None:
            found.append((hit.start(), -len(alias), alias))
    return [(position, alias) for position, _, alias in sorted(found)]


class CooccurrenceExtractor:
    """The gold relations whose ends are both named in the chunk (see the module docs)."""

    def __init__(self, relations: Sequence[Relation]) -> None:
        self._by_doc: dict[str, list[Relation]] = {}
        for relation in relations:
            self._by_doc.setdefault(relation.doc_id, []).append(relation)
        self._matchers: dict[str, tuple[tuple[Entity, ...], EntityMatcher]] = {}

    @property
    def name(self) -> str:
        return "cooccurrence"

    def identity(self) -> dict[str, Any]:
        return {"extractor": "cooccurrence", "version": VERSION}

    def extract(self, chunks: Sequence[ChunkInput]) -> list[Extraction]:
        """One :class:`Extraction` per chunk, in order (no model: nothing is counted as a call;
        a chunk's records depend on its document, so equal texts are not merged)."""
        return [self._one(chunk) for chunk in chunks]

    def _one(self, chunk: ChunkInput) -> Extraction:
        matcher = self._matcher(chunk)
        named: dict[str, tuple[str, Entity]] = {}
        positions: dict[str, int] = {}
        for entity in chunk.entities:
            for position, alias in names_in(entity, chunk.text):
                if matcher.match(alias, chunk.start, chunk.end) == entity.id:
                    named[entity.id] = (alias, entity)
                    positions[entity.id] = position
                    break
        order = sorted(named, key=lambda entity_id: (positions[entity_id], entity_id))
        entities = tuple(ExtractedEntity(named[i][0], named[i][1].type) for i in order)
        relations = tuple(
            ExtractedRelation(named[r.head][0], named[r.tail][0], r.label)
            for r in self._by_doc.get(chunk.doc_id, ())
            if r.head != r.tail and r.head in named and r.tail in named
        )
        return Extraction(entities=entities, relations=relations)

    def _matcher(self, chunk: ChunkInput) -> EntityMatcher:
        """The matcher of the chunk's document, built once per document."""
        stored = self._matchers.get(chunk.doc_id)
        if stored is None or stored[0] != chunk.entities:
            stored = (chunk.entities, EntityMatcher(chunk.entities))
            self._matchers[chunk.doc_id] = stored
        return stored[1]


# --- registry ------------------------------------------------------------------------------------


def _canonical_llm(values: dict[str, Any]) -> dict[str, Any]:
    """The LLM spec checked; entity types stripped and checked."""
    from chunkmark.llm import LLMS

    try:
        LLMS.resolve(values["llm"])
    except SpecError as exc:
        raise ValueError(f"llm {values['llm']!r} is not valid: {exc.problem}") from None
    return {**values, "entity_types": tuple(_check_types(values["entity_types"]))}


def _identity_llm(values: dict[str, Any]) -> dict[str, Any]:
    """The LLM spec without its transport parameters (timeout, retries, concurrency)."""
    from chunkmark.llm import identity_spec

    return {**values, "llm": identity_spec(values["llm"])}


@EXTRACTORS.register(
    "llm",
    calls_llm=True,
    needs=("context", "budget"),
    canonical=_canonical_llm,
    identity=_identity_llm,
)
def llm_extractor(
    llm: str = DEFAULT_LLM,
    gleanings: Gleanings = 0,
    max_tokens: int = ANSWER_TOKENS,
    entity_types: tuple[str, ...] = DEFAULT_ENTITY_TYPES,
    prompt: PromptVersion = "v1",
    *,
    context: LLMSource | None = None,
    budget: Budget | None = None,
) -> LLMExtractor:
    """An LLM writes entity and relationship records for each distinct chunk text.

    Args:
        llm: the LLM spec (see ``chunkmark.llm``).
        gleanings: extra rounds asking for missed records (0 to 2), stopped early when a
            round adds nothing.
        max_tokens: the longest answer asked for, per call.
        entity_types: the entity types the prompt allows (default the Re-DocRED types).
        prompt: the prompt version shipped in the package.
    """
    if context is None:
        from chunkmark.llm import build_llm

        client: LLM = build_llm(llm)
    else:
        client = context.llm(llm)
    return LLMExtractor(
        client,
        gleanings=gleanings,
        max_tokens=max_tokens,
        entity_types=entity_types,
        prompt=prompt,
        budget=budget,
    )


@EXTRACTORS.register("cooccurrence", needs=("relations",))
def cooccurrence(*, relations: Sequence[Relation] | None = None) -> CooccurrenceExtractor:
    """The oracle: each gold relation whose head and tail are both named in the chunk."""
    if relations is None:
        raise ValueError(
            "the cooccurrence extractor reads the gold relations: build it with "
            "EXTRACTORS.build('cooccurrence', relations=relation_set.relations)"
        )
    return CooccurrenceExtractor(relations)
