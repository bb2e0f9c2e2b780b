"""Third-party loading noise kept off the terminal, in the Python API as on the command line.

Loading a transformer draws transformers' weight-loading progress bar and may log a "LOAD
REPORT" table; distilling a model2vec model draws a progress bar per batch of its vocabulary.
None of them says anything wrong with the model, and a library writing them on stderr buries
what the caller prints. :func:`quiet_loading` switches them off while a model loads or is
built; a load report that names a missing or mismatched weight (the model is not the one
trained) still shows.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import sys
from collections.abc import Iterator
from typing import Any

_REPORTING_LOGGERS = ("transformers.modeling_utils",)


class UnusedKeysOnly(logging.Filter):
    """Drops transformers' weight-loading report when it lists only checkpoint keys the model
    does not use (all-MiniLM-L6-v2's ``embeddings.position_ids``, harmless); a report of a
    missing or mismatched weight, which means the model is not the one trained, still shows."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "LOAD REPORT" not in message:
            return True
        return any(word in message for word in ("MISSING", "MISMATCH", "CONVERSION"))


@contextlib.contextmanager
def quiet_loading(*bar_modules: str) -> Iterator[None]:
    """While a model loads: no weight-loading progress bar, no load report that lists only
    unused keys, and no ``tqdm`` bar drawn by the modules named in ``bar_modules`` (modules
    that call ``tqdm(...)`` themselves with no way to switch it off, such as
    ``model2vec.distill.inference``)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(_no_transformers_bar())
        quiet = UnusedKeysOnly()
        for name in _REPORTING_LOGGERS:
            logger = logging.getLogger(name)
            logger.addFilter(quiet)
            stack.callback(logger.removeFilter, quiet)
        for module in bar_modules:
            stack.enter_context(_no_tqdm_in(module))
        yield


@contextlib.contextmanager
def _no_transformers_bar() -> Iterator[None]:
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:  # no transformers: nothing of it to silence
        yield
        return
    hf_logging: Any = transformers_logging  # its progress-bar switches are untyped
    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bar:
            hf_logging.enable_progress_bar()


@contextlib.contextmanager
def _no_tqdm_in(name: str) -> Iterator[None]:
    """``module.tqdm`` replaced by a bar that draws nothing, for the duration."""
    try:
        module = sys.modules.get(name) or importlib.import_module(name)
    except ImportError:
        yield
        return
    drawn = getattr(module, "tqdm", None)
    if drawn is None:
        yield
        return
    module.tqdm = functools.partial(drawn, disable=True)  # type: ignore[attr-defined]
    try:
        yield
    finally:
        module.tqdm = drawn  # type: ignore[attr-defined]
