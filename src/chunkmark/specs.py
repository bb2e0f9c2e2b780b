"""Component specs: ``name(param=value, ...)`` strings <-> (name, params), and registries.

Spec strings are parsed with :mod:`ast` into literals only (numbers, strings, booleans, None,
lists/tuples of those, and dicts of those such as ``options={'keep_separator': True}``); a bare
word is the string it spells (``top_k(k=min)`` is ``top_k(k='min')``, as ``--k 5,min`` reads
it); nothing is ever evaluated. Every component (chunker, embedder) is a
factory registered by name; :meth:`Registry.build` validates parameters against the factory's
signature and types, and returns the component with its canonical spec.

Registries also hold the components of plugin packages (:mod:`chunkmark.plugins`): the first
time a registry is asked for a name it does not know, or lists its entries, the installed
plugins are imported (once per process) and register like built-ins.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import pydantic

from chunkmark import plugins
from chunkmark.errors import ChunkmarkError, SpecError
from chunkmark.plugins import Plugin

T = TypeVar("T")
ParamValue = Any


@dataclass(frozen=True)
class Spec:
    """A component name and its parameters, hashable and printable."""

    name: str
    params: tuple[tuple[str, ParamValue], ...] = ()

    @property
    def kwargs(self) -> dict[str, ParamValue]:
        return {k: _thaw(v) for k, v in self.params}

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={_format_value(v)}" for k, v in self.params)
        return f"{self.name}({inner})"

    @classmethod
    def of(cls, name: str, **params: ParamValue) -> Spec:
        return cls(name, tuple((k, _freeze(v)) for k, v in params.items()))


class FrozenDict(tuple[tuple[Any, ParamValue], ...]):
    """A dict parameter frozen for hashing: its ``(key, value)`` pairs, sorted by key.

    It is a tuple, so specs stay hashable and comparable; being its own type, it thaws back to
    a dict (not a list) and prints as a dict literal.
    """

    __slots__ = ()


def _freeze(value: ParamValue) -> ParamValue:
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, dict):
        pairs = sorted(value.items(), key=lambda kv: (str(kv[0]), repr(kv[0])))
        return FrozenDict((k, _freeze(v)) for k, v in pairs)
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: ParamValue) -> ParamValue:
    if isinstance(value, FrozenDict):
        return {k: _thaw(v) for k, v in value}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


def _format_value(value: ParamValue) -> str:
    if isinstance(value, FrozenDict):
        return "{" + ", ".join(f"{k!r}: {_format_value(v)}" for k, v in value) + "}"
    if isinstance(value, tuple):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    if isinstance(value, str):
        return repr(value)
    return repr(value)


def parse_spec(text: str) -> tuple[str, tuple[ParamValue, ...], dict[str, ParamValue]]:
    """Parse ``name`` or ``name(a, b=1, c="x")`` into (name, positional args, keyword args).

    Raises :class:`SpecError` for anything that is not a plain call with literal arguments.
    """
    source = text.strip()
    hint = "Write it as name(param=value, ...), e.g. fixed_tokens(size=200, overlap=0)."
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
        raise SpecError(f"Cannot parse spec {text!r}.", hint) from None
    if isinstance(node, ast.Name):
        return node.id, (), {}
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise SpecError(f"Cannot parse spec {text!r}: expected a component name.", hint)
    try:
        args = tuple(literal(a) for a in node.args)
        kwargs: dict[str, ParamValue] = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise SpecError(f"Spec {text!r} uses '**', which is not allowed.", hint)
            kwargs[kw.arg] = literal(kw.value)
    except ValueError:
        raise SpecError(
            f"Spec {text!r} has a parameter value that is not a literal.",
            "Use numbers, quoted strings, True/False/None, or lists or dicts of those.",
        ) from None
    return node.func.id, args, kwargs


def literal(node: ast.expr) -> ParamValue:
    """A spec parameter's value: :func:`ast.literal_eval`'s, where a bare word (a name, at any
    depth: ``k=min``, ``['a', b]``) is the string it spells (ValueError for anything else)."""
    return ast.literal_eval(_BareWords().visit(node))


class _BareWords(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.expr:
        return ast.copy_location(ast.Constant(node.id), node)


@functools.lru_cache(maxsize=512)
def _signature(factory: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(factory, eval_str=True)


@dataclass(frozen=True)
class Traits:
    """What a component is, declared when it registers; the runner reads these, never guesses.

    - ``embeds``: it embeds text while it works (a semantic chunker), so its output depends on
      the embedder it is given as well as on its spec;
    - ``calls_llm``: it calls an LLM (its output may depend on the endpoint's availability);
    - ``deterministic``: the same spec and input always give the same output;
    - ``needs``: the dependencies the caller of :meth:`Registry.build` must supply, by name
      (e.g. ``("context",)``); each is a keyword-only parameter of the factory, never a spec
      parameter.
    """

    embeds: bool = False
    calls_llm: bool = False
    deterministic: bool = True
    needs: tuple[str, ...] = ()

    @property
    def reusable(self) -> bool:
        """Whether its output may be stored and reused: deterministic, and no LLM involved."""
        return self.deterministic and not self.calls_llm

    def labels(self) -> list[str]:
        """Short words for listings: ``embeds``, ``calls an LLM``, ``nondeterministic``."""
        out = []
        if self.embeds:
            out.append("embeds")
        if self.calls_llm:
            out.append("calls an LLM")
        if not self.deterministic:
            out.append("nondeterministic")
        return out


Canonicalise = Callable[[dict[str, ParamValue]], dict[str, ParamValue]]
# The parameters that name a component's results, from its canonical ones: those that cannot
# change its output (how an LLM it calls is reached: timeout, retries, concurrency) left out.
IdentityOf = Callable[[dict[str, ParamValue]], dict[str, ParamValue]]
# What one spec's component is, from its canonical parameters (a wrapper is what it wraps).
TraitsOf = Callable[[dict[str, ParamValue]], Traits]


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    factory: Callable[..., T]
    summary: str
    traits: Traits = Traits()
    canonical: Canonicalise | None = None
    traits_of: TraitsOf | None = None
    plugin: Plugin | None = None  # the plugin that registered it; None for chunkmark's own
    identity_of: IdentityOf | None = None
    # The short form keeps the first parameter at its default when it names the component (a
    # size, a model); False where it is a detail (paragraphs' min_tokens).
    short_keeps_first: bool = True
    # Parameters whose values are specs of another registry (a setting's ranker): the short
    # form writes them short too (Registry.minimal).
    nested: tuple[tuple[str, Registry[Any]], ...] = ()

    @property
    def origin(self) -> str | None:
        """The package of the plugin that registered it (None: chunkmark or code it imports)."""
        return None if self.plugin is None else self.plugin.origin

    def parameters(self) -> list[inspect.Parameter]:
        """The spec parameters: everything but the declared dependencies."""
        needs = self.traits.needs
        return [p for p in self.signature().parameters.values() if p.name not in needs]

    def dependencies(self) -> list[str]:
        """The declared dependencies: supplied by the caller of :meth:`Registry.build`."""
        return list(self.traits.needs)

    def signature(self) -> inspect.Signature:
        return _signature(self.factory)


class Registry(Generic[T]):
    """Named factories of one kind of component (``chunker``, ``embedder``)."""

    def __init__(self, kind: str, command: str | None = None) -> None:
        self.kind = kind
        self.command = command or f"{kind}s"  # the CLI command that lists the entries
        use = "Use one of: {known} (see `chunkmark " + self.command + "`)."
        self._entries: Catalog[Entry[T]] = Catalog(kind, fix=use, by_name=True)

    def register(
        self,
        name: str,
        *,
        embeds: bool = False,
        calls_llm: bool = False,
        deterministic: bool = True,
        needs: tuple[str, ...] = (),
        canonical: Canonicalise | None = None,
        traits_of: TraitsOf | None = None,
        identity: IdentityOf | None = None,
        short_keeps_first: bool = True,
        nested: dict[str, Registry[Any]] | None = None,
    ) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Register a factory under ``name``, declaring what it is (see :class:`Traits`).

        Every keyword-only parameter of the factory must be declared in ``needs`` and every
        name in ``needs`` must be a keyword-only parameter: a dependency is never inferred.
        ``canonical`` maps validated parameters to the canonical ones when two spellings mean
        the same component (``overlap=0.25`` of ``size=400`` is ``overlap=100``); it raises
        ValueError for values it cannot accept. ``traits_of`` gives one spec's traits from its
        canonical parameters when they depend on them (a wrapper that calls an LLM for one
        method only, or inherits its inner chunker's traits); the declared ones are the name's
        (listings, ``needs``). Read a spec's traits with :meth:`traits`. ``short_keeps_first``:
        whether :meth:`short` shows the first parameter at its default (see :class:`Entry`);
        ``nested``: the parameters that hold a spec of another registry (``{"ranker":
        RETRIEVERS}``), written in their minimal form by :meth:`short`.
        """
        traits = Traits(embeds, calls_llm, deterministic, tuple(needs))

        def decorate(factory: Callable[..., T]) -> Callable[..., T]:
            _check_needs(self.kind, name, factory, traits.needs)
            summary = plain_summary(inspect.getdoc(factory) or "")
            self._entries.add(
                Entry(
                    name,
                    factory,
                    summary,
                    traits,
                    canonical,
                    traits_of,
                    plugins.loading(),
                    identity,
                    short_keeps_first,
                    tuple((nested or {}).items()),
                )
            )
            return factory

        return decorate

    def unregister(self, name: str) -> None:
        """Remove an entry (for tests and plugins that register components temporarily)."""
        self._entries.unregister(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry[T]]:
        """Every entry, plugins' included, by name."""
        return iter(self._entries.values())

    def entry(self, name: str) -> Entry[T]:
        return self._entries[name]

    def traits(self, spec: str | Spec) -> Traits:
        """What this spec's component is: its entry's ``traits_of`` of the canonical
        parameters, or the traits the name was registered with."""
        resolved = self.resolve(spec)
        entry = self.entry(resolved.name)
        if entry.traits_of is None:
            return entry.traits
        found = entry.traits_of(dict(resolved.kwargs))
        return Traits(found.embeds, found.calls_llm, found.deterministic, entry.traits.needs)

    def identity(self, spec: str | Spec) -> Spec:
        """The spec that names this component's results (a cell's id, the chunker column):
        its canonical spec, less what its entry's ``identity`` says cannot change its output
        (``contextual(llm="openai(model='m', timeout=600.0)")`` is named as with
        ``llm="openai(model='m')"``). The canonical spec (:meth:`resolve`) keeps everything,
        so that the component is built as asked."""
        resolved = self.resolve(spec)
        entry = self.entry(resolved.name)
        if entry.identity_of is None:
            return resolved
        return Spec.of(resolved.name, **entry.identity_of(dict(resolved.kwargs)))

    def resolve(self, spec: str | Spec) -> Spec:
        """Canonical spec: every parameter bound by name, defaults filled in, types validated."""
        if isinstance(spec, Spec):
            name, args, kwargs = spec.name, (), spec.kwargs
        else:
            name, args, kwargs = parse_spec(spec)
        entry = self.entry(name)
        sig = entry.signature().replace(parameters=entry.parameters())
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            valid = ", ".join(p.name for p in sig.parameters.values())
            raise SpecError(
                f"Bad parameters for {self.kind} {name!r}: {exc}.", f"Valid parameters: {valid}."
            ) from None
        bound.apply_defaults()
        values = self._validate(entry, dict(bound.arguments))
        if entry.canonical is not None:
            try:
                values = entry.canonical(values)
            except ValueError as exc:
                raise SpecError(
                    f"Bad {self.kind} spec {text_of(spec)}: {exc}.", _fix_for(self.command)
                ) from None
        return Spec.of(name, **values)

    def short(self, spec: str | Spec) -> str:
        """For display: the first parameter (unless its entry says it is a detail), then only
        those that differ from their defaults."""
        canonical = self.resolve(spec)
        entry = self.entry(canonical.name)
        defaults = {p.name: _freeze(p.default) for p in entry.parameters()}
        first = 0 if entry.short_keeps_first else -1
        kept = tuple(
            (k, v)
            for i, (k, v) in enumerate(canonical.params)
            if i == first or defaults.get(k, inspect.Parameter.empty) != v
        )
        inner = dict(entry.nested)
        kept = tuple(
            (k, inner[k].minimal(v) if k in inner and isinstance(v, str) else v) for k, v in kept
        )
        return str(Spec(canonical.name, kept))

    def minimal(self, spec: str | Spec) -> str:
        """The spec with only the parameters that differ from their defaults (``hybrid()``):
        how a spec nested in another one's parameter is shown."""
        canonical = self.resolve(spec)
        defaults = {p.name: _freeze(p.default) for p in self.entry(canonical.name).parameters()}
        kept = tuple(
            (k, v) for k, v in canonical.params if defaults.get(k, inspect.Parameter.empty) != v
        )
        return str(Spec(canonical.name, kept))

    def build(self, spec: str | Spec, **dependencies: Any) -> tuple[T, Spec]:
        """Build the component a spec names; returns it with its canonical spec.

        ``dependencies`` (e.g. ``context=ChunkerContext(...)``) are passed to factories that
        declare them as keyword-only parameters and ignored by the others; they are never part
        of the spec.
        """
        canonical = self.resolve(spec)
        entry = self.entry(canonical.name)
        wanted = {k: v for k, v in dependencies.items() if k in entry.dependencies()}
        try:
            component = entry.factory(**canonical.kwargs, **wanted)
        except (ValueError, TypeError) as exc:
            raise SpecError(
                f"Bad {self.kind} spec {canonical}: {exc}", _fix_for(self.command)
            ) from None
        return component, canonical

    def _validate(self, entry: Entry[T], values: dict[str, ParamValue]) -> dict[str, ParamValue]:
        model = _params_model(entry.name, entry.factory)
        fields = model.model_fields
        try:
            validated = model(**values)
        except pydantic.ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            raise SpecError(
                f"Bad value for {self.kind} {entry.name!r} parameter {where!r}: "
                f"{err['msg']} (got {err.get('input')!r}).",
                _fix_for(self.command),
            ) from None
        return {name: getattr(validated, name) for name in fields}


_ROLE = re.compile(r":[a-z]+:`~?(?:[\w]+\.)*?([^`.]*)`")  # :func:`name`, :class:`~a.b.Name`
_LITERAL = re.compile(r"``(.*?)``|`([^`]*)`")


def plain_summary(doc: str) -> str:
    """A docstring's first paragraph as listings and clients show it: one line, its markup
    read as the words it marks (``code`` and :func:`name` become code and name)."""
    first = " ".join(doc.split("\n\n")[0].split())
    first = _ROLE.sub(lambda m: m.group(1), first)
    return _LITERAL.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), first)


def _check_needs(kind: str, name: str, factory: Callable[..., Any], needs: tuple[str, ...]) -> None:
    keyword_only = {
        p.name for p in _signature(factory).parameters.values() if p.kind is p.KEYWORD_ONLY
    }
    if set(needs) != keyword_only:
        raise ValueError(
            f"{kind} {name!r}: its keyword-only parameters {sorted(keyword_only)} must be "
            f"exactly the dependencies it declares, needs={sorted(needs)}"
        )


@functools.lru_cache(maxsize=512)
def _params_model(name: str, factory: Callable[..., Any]) -> type[pydantic.BaseModel]:
    """The pydantic model validating a factory's spec parameters (built once per factory)."""
    fields: dict[str, Any] = {}
    for p in _signature(factory).parameters.values():
        if p.kind is p.KEYWORD_ONLY:
            continue
        annotation = p.annotation if p.annotation is not inspect.Parameter.empty else Any
        fields[p.name] = (annotation, ...)
    model: type[pydantic.BaseModel] = pydantic.create_model(
        f"{name}_params",
        __config__=pydantic.ConfigDict(extra="forbid", strict=False, arbitrary_types_allowed=True),
        **fields,
    )
    return model


class Named(Protocol):
    """What a catalog holds: anything with a name."""

    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Named)


class Catalog(Generic[N]):
    """Named declarations that are not built from specs: the vector stores the audit reads, the
    suite's sets, the suite's grids. Chunkmark's modules and plugin packages add to a catalog
    with the rules of :class:`Registry` (see :mod:`chunkmark.plugins`): the plugins are imported
    the first time a catalog lists its entries or is asked for a name it does not hold; a
    built-in name is never taken; a plugin that fails to import adds nothing. Entries are listed
    in the order they were added, so the built-ins keep their order and the plugins' follow.

    An unknown name raises ``error`` with ``problem`` (``{kind}``, ``{name}``) and ``fix``
    (``{known}``: the names) as its message.
    """

    def __init__(
        self,
        kind: str,
        *,
        error: type[ChunkmarkError] = SpecError,
        problem: str = "Unknown {kind} {name!r}.",
        fix: str = "Use one of: {known}.",
        by_name: bool = False,
    ) -> None:
        self.kind = kind
        self._error = (error, problem, fix)
        self._by_name = by_name  # listed by name, not in the order added
        self._items: dict[str, tuple[N, Plugin | None]] = {}
        plugins.track(self._drop)

    def _drop(self, plugin: Plugin) -> None:
        self._items = {k: v for k, v in self._items.items() if v[1] != plugin}

    def add(self, item: N) -> N:
        """Add ``item`` under its name (a plugin's is ignored, with a warning, when the name is
        taken); returns ``item``."""
        name = item.name
        plugin = plugins.loading()
        held = self._items.get(name)
        if held is None or plugins.may_register(self.kind, name, held[1], plugin):
            self._items[name] = (item, plugin)
        return item

    def unregister(self, name: str) -> None:
        """Remove an entry (for tests)."""
        self._items.pop(name, None)

    def __contains__(self, name: object) -> bool:
        if name not in self._items:
            plugins.discover()
        found = name in self._items
        if found:  # an unknown name's error says what failed to load instead
            plugins.announce()
        return found

    def __getitem__(self, name: str) -> N:
        if name not in self:
            error, problem, use = self._error
            use = use.format(known=", ".join(self._names()))
            broken = plugins.unknown_name_fix()
            fix = f"{broken} Otherwise {use[0].lower()}{use[1:]}" if broken else use
            raise error(problem.format(kind=self.kind, name=name), fix)
        return self._items[name][0]

    def __iter__(self) -> Iterator[str]:
        """Every name, the plugins' included, in the order they were added (or by name)."""
        plugins.discover()
        plugins.announce()
        return iter(self._names())

    def _names(self) -> list[str]:
        return sorted(self._items) if self._by_name else list(self._items)

    def values(self) -> list[N]:
        """Every entry, in the order of :meth:`__iter__`."""
        return [self._items[name][0] for name in self]

    def origin(self, name: str) -> str | None:
        """The package of the plugin that added ``name`` (None: chunkmark's own)."""
        self[name]
        plugin = self._items[name][1]
        return None if plugin is None else plugin.origin


_KINDS = {
    "chunker": ("chunkmark.chunkers", "CHUNKERS"),
    "embedder": ("chunkmark.embedders", "EMBEDDERS"),
    "retrieval": ("chunkmark.retrieval", "RETRIEVAL"),
}


def registry_of(kind: str) -> Registry[Any]:
    """The registry of ``kind``: ``chunker``, ``embedder`` or ``retrieval`` (settings)."""
    import importlib

    module, name = _KINDS[kind]
    found: Registry[Any] = getattr(importlib.import_module(module), name)
    return found


def short(kind: str, spec: str | Spec) -> str:
    """``spec`` as tables show it (:meth:`Registry.short`); ``kind`` as :func:`registry_of`."""
    return registry_of(kind).short(spec)


def canonical_spec(kind: str, spec: str | Spec) -> str:
    """The one form every spelling of a ``kind`` spec shares, as runs store it (a cell's chunker
    and embedder, a retrieval setting): parameters by name and in order, defaults written out,
    canonical values (an overlap fraction as tokens), less what cannot change the results
    (:meth:`Registry.identity`). Every command that matches a spec it is given against a run's
    (export, compare, gate, report, the MCP tools) compares these. SpecError when it names no
    component."""
    return str(registry_of(kind).identity(spec))


def canonical_or_none(kind: str, spec: str | Spec) -> str | None:
    """:func:`canonical_spec`, or None for a spec that does not resolve (one written by another
    version of chunkmark, or not a ``kind`` spec at all)."""
    try:
        return canonical_spec(kind, spec)
    except (SpecError, ValueError):
        return None


def text_of(spec: str | Spec) -> str:
    """A spec as the user wrote it (a string) or as it prints."""
    return spec if isinstance(spec, str) else str(spec)


def _fix_for(command: str) -> str:
    return f"See `chunkmark {command}` for the parameters and their types."


def class_factory(
    cls: Callable[..., T],
    *,
    exclude: tuple[str, ...] = (),
    needs: tuple[str, ...] = (),
    defaults: Mapping[str, ParamValue] | None = None,
) -> Callable[..., T]:
    """A factory for :meth:`Registry.register` read off a class: its ``__init__`` parameters
    (minus ``exclude``, which must have defaults: hooks such as a test's ``sleep``) become the
    spec parameters, in their order, with their types and defaults, and its docstring is the
    factory's. A component whose class is its declaration registers as
    ``EMBEDDERS.register("fake")(class_factory(FakeEmbedder))``: its parameters are written once.
    ``needs`` stay keyword-only (the registry hands them over: declare them in ``register`` as
    well); ``defaults`` replace the class's own, for a class whose parameters several
    components share (each provider's model and key variable over one client class).
    """
    declared = [p for p in _signature(cls).parameters.values() if p.name not in exclude]
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in declared):
        raise ValueError(f"{cls!r}: a class declaring spec parameters cannot take *args/**kwargs")
    given = defaults or {}
    params = [
        p.replace(
            kind=p.KEYWORD_ONLY if p.name in needs else p.POSITIONAL_OR_KEYWORD,
            default=given.get(p.name, p.default),
        )
        for p in declared
    ]

    def factory(**values: ParamValue) -> T:
        return cls(**values)

    factory.__signature__ = inspect.Signature(params, return_annotation=cls)  # type: ignore[attr-defined]
    factory.__name__ = factory.__qualname__ = getattr(cls, "__name__", "factory")
    factory.__module__ = getattr(cls, "__module__", __name__)
    factory.__doc__ = inspect.getdoc(cls)
    factory.__wrapped_class__ = cls  # type: ignore[attr-defined]
    return factory
