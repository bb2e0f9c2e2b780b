"""A chunker that kills the Ray worker running it, once: for the executor's worker-death tests.

Ray workers import this module through the test cluster's ``worker_process_setup_hook``
(``tests/experiments/test_ray.py``), the driver through pytest.
"""

from __future__ import annotations

import os
from typing import Any

from chunkmark.chunkers import CHUNKERS
from chunkmark.specs import Spec


def register() -> None:
    """Worker setup hook: importing this module registered the chunker."""


@CHUNKERS.register("crash_once")
def crash_once(flag: str, size: int = 100) -> Any:
    """fixed_tokens(size=size), except that the first process to claim the file ``flag``
    (by renaming it) dies on the spot, like a worker killed by the system."""
    inner, _ = CHUNKERS.build(Spec.of("fixed_tokens", size=size))

    def chunk(text: str) -> Any:
        try:
            os.rename(flag, flag + ".taken")
        except FileNotFoundError:
            return inner(text)
        os._exit(1)

    return chunk
