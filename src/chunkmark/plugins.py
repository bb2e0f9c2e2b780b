"""Plugin packages: installed packages that add components through the ``chunkmark`` entry points.

A plugin declares, in its ``pyproject.toml``::

    [project.entry-points.chunkmark]
    halves = "chunkmark_halves"

and the module it names registers its components on import with the public registries'
``register`` decorators, exactly as a built-in module does (``CHUNKERS.register``,
``EMBEDDERS.register``, ``METRICS.register``, ``RETRIEVAL.register``, ...).

Discovery is lazy and happens once per process: the first time a registry is asked for a name
it does not know, or lists its entries (``chunkmark chunkers``, the scorer reading the metric
catalog), every entry point of the group is imported, sorted by name. ``import chunkmark``
imports no plugin. A plugin that fails to import registers nothing (what it registered before the error is
removed) and is one line naming it, its entry point and the error: a warning on stderr when a registry lists its entries, or part of the error raised when
a component nobody registered is asked for; never a traceback, never a silent absence.

A name is never taken from its first holder: a built-in keeps its name whatever the plugins
register (a spec means the same on every machine with the same chunkmark), and of two plugins
registering one name the first by entry-point name keeps it; the other registration is ignored
with a warning naming both.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

GROUP = "chunkmark"


@dataclass(frozen=True)
class Plugin:
    """One entry point of the ``chunkmark`` group and the package that declares it."""

    name: str
    value: str
    package: str | None = None
    version: str | None = None

    @property
    def origin(self) -> str:
        """What listings show as a component's origin: the package (else the entry point)."""
        return self.package or self.name

    def describe(self) -> str:
        where = f", package {self.package} {self.version or ''}".rstrip() if self.package else ""
        return f"plugin {self.name!r} (entry point `{self.name} = {self.value}`{where})"

    def uninstall(self) -> str:
        return f"`pip uninstall {self.package}`" if self.package else "uninstall it"


@dataclass(frozen=True)
class PluginFailure:
    """A plugin whose module raised when imported."""

    plugin: Plugin
    error: str

    def line(self) -> str:
        return f"{self.plugin.describe()} failed to load: {self.error}"

    def fix(self) -> str:
        return f"fix or reinstall it, or {self.plugin.uninstall()}"


class _State:
    def __init__(self) -> None:
        self.started = False  # set by the thread that imports the plugins, before it does
        self.done = False
        self.loading: Plugin | None = None
        self.loaded: list[Plugin] = []
        self.failures: list[PluginFailure] = []
        # warnings not shown yet, with the failure each one reports (None: a clash)
        self.notes: list[tuple[str, PluginFailure | None]] = []
        self.lock = threading.RLock()


_state = _State()
# Each registry's way to drop what a plugin registered (a plugin that fails registers nothing).
_drops: list[weakref.WeakMethod[Callable[[Plugin], None]]] = []


def track(drop: Callable[[Plugin], None]) -> None:
    """Called by each registry as it is made: ``drop(plugin)`` removes every component
    ``plugin`` registered in it (a bound method, held weakly)."""
    _drops.append(weakref.WeakMethod(drop))


def discover() -> None:
    """Import every plugin once (later calls return at once; a call made while a plugin is being
    imported, by that plugin, returns too). Failures are recorded, never raised."""
    state = _state
    if state.done:
        return
    with state.lock:  # other threads wait here until every plugin is imported
        if state.started:
            return
        state.started = True
        try:
            for entry_point in _entry_points():
                _load(entry_point)
        finally:
            state.done = True


def _entry_points() -> list[Any]:
    from importlib.metadata import entry_points

    found = {(ep.name, ep.value): ep for ep in entry_points(group=GROUP)}
    return [found[key] for key in sorted(found)]


def _load(entry_point: Any) -> None:
    dist = getattr(entry_point, "dist", None)
    plugin = Plugin(
        entry_point.name,
        entry_point.value,
        getattr(dist, "name", None),
        getattr(dist, "version", None),
    )
    with _loading(plugin):
        try:
            entry_point.load()
        except Exception as exc:  # any error of a third-party import is the plugin's failure
            failure = PluginFailure(plugin, _one_line(exc))
            for ref in _drops:
                drop = ref()
                if drop is not None:
                    drop(plugin)
            _state.failures.append(failure)
            note = f"{failure.line()}; its components are unavailable. Fix: {failure.fix()}."
            _state.notes.append((note, failure))
            return
    _state.loaded.append(plugin)


@contextmanager
def _loading(plugin: Plugin) -> Iterator[None]:
    before = _state.loading
    _state.loading = plugin
    try:
        yield
    finally:
        _state.loading = before


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def loading() -> Plugin | None:
    """The plugin whose module is being imported now (registrations made now are its own)."""
    return _state.loading


def loaded() -> tuple[Plugin, ...]:
    """The plugins imported so far, in load order."""
    return tuple(_state.loaded)


def failures() -> tuple[PluginFailure, ...]:
    """The plugins that failed to import."""
    return tuple(_state.failures)


def versions() -> dict[str, str]:
    """Package and version of every plugin loaded (for a run's manifest)."""
    return {p.package: p.version or "" for p in _state.loaded if p.package}


def may_register(kind: str, name: str, held: Plugin | None, plugin: Plugin | None) -> bool:
    """The rule for a ``kind`` ``name`` already held by ``held`` and registered again by
    ``plugin`` (either None for chunkmark's own code): whether the new registration replaces
    it. Chunkmark's own code always gets its name (a plugin imported before it loses it);
    otherwise the first holder keeps it. Either way the plugin that loses is a warning; the same
    code registering a name twice is a ValueError (inside a plugin: that plugin's failure)."""
    if plugin is None and held is not None:
        _clash(kind, name, kept=None, ignored=held)
        return True
    if plugin is None or held == plugin:
        raise ValueError(f"{kind} {name!r} is registered twice")
    _clash(kind, name, kept=held, ignored=plugin)
    return False


def _clash(kind: str, name: str, kept: Plugin | None, ignored: Plugin) -> None:
    holder = "chunkmark itself" if kept is None else kept.describe()
    note = (
        f"{ignored.describe()} registers {kind} {name!r}, which {holder} already registers; "
        f"the plugin's {name!r} is ignored. Fix: rename it in {ignored.origin}."
    )
    _state.notes.append((note, None))


def announce() -> None:
    """Print the warnings not shown yet (a plugin that failed, a name registered twice), one
    line each on stderr."""
    with _state.lock:
        notes, _state.notes = _state.notes, []
    for note, _ in notes:
        print(f"warning: {note}", file=sys.stderr)


def unknown_name_fix() -> str | None:
    """For an error about a name nobody registered: the plugins that failed to load (one may be
    what provides it) and how to fix each; None when every plugin loaded. The error says it, so
    their warnings are not printed."""
    with _state.lock:
        found = list(_state.failures)
        _state.notes = [(note, failure) for note, failure in _state.notes if failure is None]
    if not found:
        return None
    return "; ".join(f"{f.line()}, and may be what provides it: {f.fix()}" for f in found) + "."
