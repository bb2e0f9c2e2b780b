"""Plugin packages: components registered by installed packages through the ``chunkmark`` entry
points are discovered lazily, once, and are like built-ins; a broken plugin or a name clash is
one line, never a traceback or a silent absence.

The in-process tests install fake distributions (a ``*.dist-info`` folder with
``entry_points.txt``, and the modules it names) into a folder put on ``sys.path``, which is
where :func:`importlib.metadata.entry_points` finds real ones. The last test builds a real plugin
package with setuptools, installs its wheel with pip into a fresh virtual environment and runs
the command line there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import chunkmark
from chunkmark import plugins
from chunkmark.chunkers import CHUNKERS, chunk_document
from chunkmark.errors import SpecError
from chunkmark.metrics import METRICS
from chunkmark.specs import Registry

HALVES = '''
from chunkmark.chunkers import CHUNKERS, ChunkerFn
from chunkmark.spans import Span


@CHUNKERS.register("{name}")
def halves() -> ChunkerFn:
    """Cut every document into two halves."""

    def chunk(text: str) -> list[Span]:
        middle = len(text) // 2
        return [s for s in (Span(0, middle), Span(middle, len(text))) if s.end > s.start]

    return chunk
'''

COUNTED = '''
import numpy as np

from chunkmark.metrics import METRICS, ScoreInputs


@METRICS.register("{name}", label="chunks", direction="lower")
def counted_chunks(s: ScoreInputs) -> np.ndarray:
    """Chunks counted per question."""
    return s.depth.astype(np.float64)
'''

# The names the in-process plugins register, removed after each test.
CHUNKER_NAMES = ("plug_halves", "plug_other", "plug_same", "plug_dup", "plug_reentrant")
METRIC_NAMES = ("plug_counted",)


def install(site: Path, package: str, entry_points: dict[str, str], **modules: str) -> None:
    """A fake installed distribution ``package`` 0.1 in ``site``: its metadata, its entry
    points in the ``chunkmark`` group, and its modules (name -> source)."""
    info = site / f"{package.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{plugins.GROUP}]\n{lines}")
    for module, source in modules.items():
        (site / f"{module}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` to install fake plugins into, with discovery not yet done;
    afterwards the plugins' modules and components are gone and discovery is as it was."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.setattr(plugins, "_state", plugins._State())
    monkeypatch.syspath_prepend(str(folder))
    try:
        yield folder
    finally:
        for name in CHUNKER_NAMES:
            CHUNKERS.unregister(name)
        for name in METRIC_NAMES:
            METRICS.unregister(name)
        for name, module in list(sys.modules.items()):
            if str(getattr(module, "__file__", "") or "").startswith(str(folder)):
                del sys.modules[name]


def test_plugins_load_on_the_first_unknown_name_once_and_register_like_builtins(
    site: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    halves = HALVES.format(name="plug_halves")
    counted = COUNTED.format(name="plug_counted")
    install(site, "chunkmark-plug", {"plug": "plug_halves"}, plug_halves=halves + counted)
    CHUNKERS.entry("fixed_tokens")  # a known name: nothing is discovered
    assert "recall" in METRICS
    assert plugins.loaded() == ()
    assert "plug_halves" not in sys.modules

    fn, spec = CHUNKERS.build("plug_halves")  # an unknown name: plugins are imported
    assert [p.package for p in plugins.loaded()] == ["chunkmark-plug"]
    assert str(spec) == "plug_halves()" and CHUNKERS.short(spec) == "plug_halves()"
    chunks = chunk_document(fn, "d", "abcdefg")
    assert [(c.start, c.end) for c in chunks] == [(0, 3), (3, 7)]
    entry = CHUNKERS.entry("plug_halves")
    assert entry.origin == "chunkmark-plug"
    assert entry.summary == "Cut every document into two halves."
    assert CHUNKERS.entry("fixed_tokens").origin is None
    assert "plug_halves" in [e.name for e in CHUNKERS]
    assert METRICS.names()[-1] == "plug_counted"  # after every built-in: columns keep order
    assert METRICS["plug_counted"].origin == "chunkmark-plug"
    assert len(plugins.loaded()) == 1  # discovered once: listing again imports nothing
    assert capsys.readouterr().err == ""

    results = chunkmark.evaluate(
        dataset="demo",
        chunkers=["plug_halves"],
        embedders=["fake"],
        k=[1],
        out=tmp_path / "run",
        no_cache=True,
    )
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["chunkers"] == ["plug_halves()"]
    row = results.overall()[0]
    assert row["chunker"] == "plug_halves()"
    assert row["plug_counted_mean"] == pytest.approx(1.0)  # k=1: one chunk per question


def test_a_broken_plugin_is_one_warning_line_when_listing(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install(
        site, "chunkmark-good", {"good": "plug_good"}, plug_good=HALVES.format(name="plug_halves")
    )
    broken = HALVES.format(name="plug_other") + "\nimport not_a_module_here\n"
    install(site, "chunkmark-broken", {"broken": "plug_broken"}, plug_broken=broken)

    names = [e.name for e in CHUNKERS]

    assert "plug_halves" in names
    assert "plug_other" not in names  # registered before the error, then removed
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "warning: plugin 'broken' (entry point `broken = plug_broken`, package "
        "chunkmark-broken 0.1) failed to load: ModuleNotFoundError: No module named "
        "'not_a_module_here'; its components are unavailable. Fix: fix or reinstall it, or "
        "`pip uninstall chunkmark-broken`."
    ]
    assert [f.plugin.name for f in plugins.failures()] == ["broken"]
    list(CHUNKERS)
    assert capsys.readouterr().err == ""  # said once


def test_asking_for_a_component_when_a_plugin_is_broken_names_the_plugin_and_the_fix(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install(
        site,
        "chunkmark-broken",
        {"broken": "plug_broken"},
        plug_broken="raise RuntimeError('no key\\nset')\n",
    )

    with pytest.raises(SpecError) as raised:
        CHUNKERS.resolve("plug_halves(size=3)")

    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("Unknown chunker 'plug_halves'. Fix: plugin 'broken' ")
    assert "`broken = plug_broken`" in message and "chunkmark-broken 0.1" in message
    assert "failed to load: RuntimeError: no key set, and may be what provides it" in message
    assert "`pip uninstall chunkmark-broken`" in message
    assert "Otherwise use one of: " in message and "fixed_tokens" in message
    list(CHUNKERS)
    assert capsys.readouterr().err == ""  # the error said it: no warning as well


def test_a_builtin_name_stays_the_builtin_and_the_plugin_is_warned(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    builtin = CHUNKERS.entry("fixed_tokens").factory
    recall = METRICS["recall"].compute
    source = (
        HALVES.format(name="fixed_tokens")
        + HALVES.format(name="plug_other").replace("def halves", "def other")
        + COUNTED.format(name="recall")
    )
    install(site, "chunkmark-clash", {"clash": "plug_clash"}, plug_clash=source)

    assert "plug_other" in CHUNKERS  # an unknown name: discovery

    assert CHUNKERS.entry("fixed_tokens").factory is builtin
    assert CHUNKERS.entry("fixed_tokens").origin is None
    assert METRICS["recall"].compute is recall and METRICS["recall"].origin is None
    assert CHUNKERS.entry("plug_other").origin == "chunkmark-clash"  # the rest of it loads
    err = capsys.readouterr().err.splitlines()
    plugin = "plugin 'clash' (entry point `clash = plug_clash`, package chunkmark-clash 0.1)"
    assert err == [
        f"warning: {plugin} registers chunker 'fixed_tokens', which chunkmark itself already "
        "registers; the plugin's 'fixed_tokens' is ignored. Fix: rename it in chunkmark-clash.",
        f"warning: {plugin} registers metric 'recall', which chunkmark itself already "
        "registers; the plugin's 'recall' is ignored. Fix: rename it in chunkmark-clash.",
    ]


def test_of_two_plugins_the_first_by_entry_point_name_keeps_a_name(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    same = HALVES.format(name="plug_same")
    install(site, "chunkmark-zed", {"zed": "plug_zed"}, plug_zed=same)
    install(site, "chunkmark-abc", {"abc": "plug_abc"}, plug_abc=same)

    assert CHUNKERS.entry("plug_same").origin == "chunkmark-abc"
    assert [p.name for p in plugins.loaded()] == ["abc", "zed"]
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("warning: plugin 'zed' ")
    assert "which plugin 'abc' (entry point `abc = plug_abc`, package chunkmark-abc 0.1)" in line


def test_code_imported_after_a_plugin_takes_its_name_back(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    things = "from chunkmark.specs import Registry\n\nTHINGS = Registry('thing')\n"
    plugin = "from plug_things import THINGS\n\n@THINGS.register('shared')\ndef shared() -> int:\n    return 1\n"
    install(site, "chunkmark-things", {"things": "plug_thing_plugin"}, plug_thing_plugin=plugin)
    (site / "plug_things.py").write_text(things)
    import plug_things

    registry: Registry[int] = plug_things.THINGS
    assert "shared" in registry
    assert registry.entry("shared").origin == "chunkmark-things"

    @registry.register("shared")
    def shared() -> int:
        return 2

    assert registry.build("shared")[0] == 2 and registry.entry("shared").origin is None
    assert "the plugin's 'shared' is ignored" in capsys.readouterr().err
    with pytest.raises(ValueError, match="'shared' is registered twice"):
        registry.register("shared")(shared)


def test_a_plugin_registering_a_name_twice_fails_and_one_using_registries_loads(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dup = HALVES.format(name="plug_dup") + HALVES.format(name="plug_dup")
    install(site, "chunkmark-dup", {"dup": "plug_dup"}, plug_dup=dup)
    reentrant = (
        "from chunkmark.chunkers import CHUNKERS\n"
        "KNOWN = [e.name for e in CHUNKERS]\n"
        "assert 'nothing_registers_this' not in CHUNKERS\n" + HALVES.format(name="plug_reentrant")
    )
    install(site, "chunkmark-reentrant", {"reentrant": "plug_reentrant"}, plug_reentrant=reentrant)

    names = [e.name for e in CHUNKERS]

    assert "plug_dup" not in names and "plug_reentrant" in names
    (failure,) = plugins.failures()
    assert failure.error == "ValueError: chunker 'plug_dup' is registered twice"
    assert "fixed_tokens" in sys.modules["plug_reentrant"].KNOWN
    assert capsys.readouterr().err.count("\n") == 1


# --- a real plugin package, installed with pip into a fresh virtual environment ------------------

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{package}"
version = "0.1.0"
dependencies = ["chunkmark"]

[project.entry-points.chunkmark]
{entry_points}
[tool.setuptools]
py-modules = [{modules}]
"""

LAZY = """\
import sys
import chunkmark, chunkmark.chunkers, chunkmark.embedders, chunkmark.metrics, chunkmark.retrieval
print("imported by import chunkmark:", "chunkmark_halves" in sys.modules)
from chunkmark.chunkers import CHUNKERS
print("origin of halves:", CHUNKERS.entry("halves").origin)
"""


def project(root: Path, package: str, modules: dict[str, tuple[str, str]]) -> Path:
    """A plugin project folder: pyproject.toml and its modules (module -> its entry point's
    name and its source)."""
    folder = root / package
    folder.mkdir()
    entry_points = "".join(f'{name} = "{module}"\n' for module, (name, _) in modules.items())
    names = ", ".join(f'"{module}"' for module in modules)
    toml = PYPROJECT.format(package=package, entry_points=entry_points, modules=names)
    (folder / "pyproject.toml").write_text(toml)
    for module, (_, source) in modules.items():
        (folder / f"{module}.py").write_text(source)
    return folder


def run(
    args: list[str | Path], env: dict[str, str], log: list[str], code: int = 0
) -> subprocess.CompletedProcess[str]:
    """Run a command that must exit with ``code``; it and its output are kept in ``log``."""
    started = time.perf_counter()
    done = subprocess.run(
        [str(a) for a in args], env=env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    log.append(f"$ {' '.join(map(str, args))}  ({seconds:.1f} s, exit {done.returncode})")
    log.append(done.stdout + done.stderr)
    assert done.returncode == code, "\n".join(log)
    return done


def fresh_environment(
    tmp_path: Path, *projects: Path
) -> tuple[Path, dict[str, str], list[str], list[str | Path]]:
    """The wheels of ``projects``, built offline with the setuptools of the environment running
    the tests, and a fresh virtual environment that sees chunkmark and its dependencies without
    installing them: its python, the environment variables, the log of commands run, and the
    pip command that installs one of the wheels by its project name."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env |= {
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
        "CHUNKMARK_CACHE_DIR": str(tmp_path / "cache"),
        "CHUNKMARK_LOG_DIR": str(tmp_path / "logs"),
        "COLUMNS": "200",
        "NO_COLOR": "1",
    }
    log: list[str] = []
    pip = [sys.executable, "-m", "pip"]
    wheels = tmp_path / "wheels"
    build = ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", wheels]
    run([*pip, *build, *projects], env, log)
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], env, log)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    where = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(run([python, "-c", where], env, log).stdout.strip())
    src = Path(chunkmark.__file__).resolve().parents[1]
    ours = dict.fromkeys([str(src), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "chunkmark_deps.pth").write_text("\n".join(ours) + "\n")
    install = [*pip, "--python", python, "install", "--no-deps", "--no-index", "-f", wheels]
    return python, env, log, install


@pytest.mark.integration
def test_an_installed_plugin_package_is_listed_and_chunks_from_the_command_line(
    tmp_path: Path,
) -> None:
    pytest.importorskip("setuptools", reason="the dev environment has setuptools to build with")
    source = HALVES.format(name="halves") + COUNTED.format(name="counted_chunks")
    halves = project(tmp_path, "chunkmark-halves", {"chunkmark_halves": ("halves", source)})
    broken_source = "import not_installed_here\n"
    broken = project(tmp_path, "chunkmark-broken", {"chunkmark_broken": ("broken", broken_source)})
    python, env, log, install = fresh_environment(tmp_path, halves, broken)
    run([*install, "chunkmark-halves"], env, log)

    lazy = run([python, "-c", LAZY], env, log).stdout
    assert lazy.splitlines() == [
        "imported by import chunkmark: False",
        "origin of halves: chunkmark-halves",
    ]
    listing = run([python, "-m", "chunkmark", "chunkers"], env, log)
    assert "halves" in names_listed(listing.stdout) and "fixed_tokens" in names_listed(
        listing.stdout
    )
    assert "Cut every document into two halves." in listing.stdout
    text = "The first half of this file.\nAnd here is its second half.\n"
    (tmp_path / "doc.txt").write_text(text)
    chunk = [python, "-m", "chunkmark", "chunk", "--json", tmp_path / "doc.txt", "--chunker"]
    spans = json.loads(run([*chunk, "halves()"], env, log).stdout)
    middle = len(text) // 2
    assert spans == [{"start": 0, "end": middle}, {"start": middle, "end": len(text)}]
    metrics = json.loads(run([python, "-m", "chunkmark", "metrics", "--json"], env, log).stdout)
    assert metrics[0]["name"] == "recall" and metrics[-1]["name"] == "counted_chunks"
    assert "warning" not in "\n".join(log)

    # A plugin that cannot be imported: one warning line when listing, one error line when a
    # component nobody registered is asked for; the other plugin works as before.
    run([*install, "chunkmark-broken"], env, log)
    failed = (
        "plugin 'broken' (entry point `broken = chunkmark_broken`, package chunkmark-broken "
        "0.1.0) failed to load: ModuleNotFoundError: No module named 'not_installed_here'"
    )
    listing = run([python, "-m", "chunkmark", "chunkers"], env, log)
    assert "halves" in names_listed(listing.stdout)
    assert listing.stderr.splitlines() == [
        f"warning: {failed}; its components are unavailable. Fix: fix or reinstall it, or "
        "`pip uninstall chunkmark-broken`."
    ]
    assert json.loads(run([*chunk, "halves()"], env, log).stdout) == spans
    missing = run([*chunk, "thirds()"], env, log, code=2)
    assert missing.stdout == ""
    (line,) = missing.stderr.splitlines()
    assert line.startswith(f"error: Unknown chunker 'thirds'. Fix: {failed}, and may be what")
    assert "`pip uninstall chunkmark-broken`" in line and "Traceback" not in "\n".join(log)
    print("\n".join(log))


def names_listed(table: str) -> list[str]:
    """The first column of a listing table (rich's box drawing)."""
    rows = [line.split("│") for line in table.splitlines() if line.startswith("│")]
    return [row[1].strip() for row in rows if row[1].strip()]


def test_a_plugin_chunkers_stored_chunks_are_keyed_on_its_version(site: Path) -> None:
    import hashlib

    from chunkmark.experiments.chunk_store import STORE_FORMAT, chunk_key
    from chunkmark.version import __version__

    install(
        site,
        "chunkmark-plug",
        {"plug": "plug_halves"},
        plug_halves=HALVES.format(name="plug_halves"),
    )
    CHUNKERS.entry("plug_halves")
    key = chunk_key("plug_halves()", "fp", None)
    assert key.about["plugin"] == "chunkmark-plug 0.1"
    # A built-in's key is what it was before plugins: the hash of the five parts alone.
    parts = [STORE_FORMAT, __version__, "fixed_tokens(size=9)", "fp", None]
    payload = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    builtin = chunk_key("fixed_tokens(size=9)", "fp", None)
    assert str(builtin) == hashlib.sha256(payload.encode()).hexdigest()[:32]
    assert "plugin" not in builtin.about
    # The same spec from another version of the plugin is another key.
    plain = [STORE_FORMAT, __version__, "plug_halves()", "fp", None]
    unversioned = json.dumps(plain, sort_keys=True, separators=(",", ":"))
    assert str(key) != hashlib.sha256(unversioned.encode()).hexdigest()[:32]
