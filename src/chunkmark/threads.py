"""How OpenMP threads wait for work in the processes chunkmark runs models in.

torch's CPU kernels run on OpenMP (GNU libgomp in the Linux wheels). Between two parallel
regions libgomp's idle threads *spin* by default (300,000 polls, ``GOMP_SPINCOUNT``) before they
sleep. On a machine whose cores are also busy with other work, a spinning thread holds the core
its partner needs, so parallel regions wait on descheduled threads and the spinning burns CPU
time that does nothing: on a shared 2-core machine the same all-MiniLM-L6-v2 vectors cost
several times the CPU and wall time for short questions, and about a third more CPU for
256-token chunks (``benchmarks/native_vs_server.py`` measures both side by side). A
sentence-transformers server in another process escaped this by accident: it encodes in a
request thread, so libgomp manages two thread teams, counts more threads than cores and
throttles its spinning to 100 polls.

:func:`passive_openmp` asks OpenMP runtimes loaded afterwards to sleep at once
(``OMP_WAIT_POLICY=PASSIVE``, read by libgomp and Intel's libiomp when they load). The command
line calls it first thing, and the model-loading code calls it before it imports torch. A
setting of the user's own (``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT`` or ``KMP_BLOCKTIME`` in the
environment) is left alone, and a runtime that is already loaded (torch imported before
chunkmark's first model load) keeps what it read then.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

# Environment variables that set how long an idle OpenMP thread spins: the standard one, GNU
# libgomp's and Intel libiomp's. Any of them set means the user chose.
WAIT_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


def passive_openmp(environ: MutableMapping[str, str] | None = None) -> bool:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` in ``environ`` (default: this process's environment)
    unless one of :data:`WAIT_SETTINGS` is already there; returns whether it set it.

    Takes effect for OpenMP runtimes loaded after the call (torch's, on ``import torch``) and
    for child processes."""
    env = os.environ if environ is None else environ
    if any(name in env for name in WAIT_SETTINGS):
        return False
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    return True
