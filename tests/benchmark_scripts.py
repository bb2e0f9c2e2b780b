"""Load a script of ``benchmarks/`` as a module, for the tests that drive one in-process.

The scripts are not a package and must not put their folder on ``sys.path`` (its ``report.py``
would shadow the tests' ``report`` package), so each is loaded from its file, once, under its
own name (dataclasses defined in it look that name up in ``sys.modules``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/NAME.py`` as the module ``NAME`` (the same module on every call)."""
    path = BENCHMARKS / f"{name}.py"
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "") == path:
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
