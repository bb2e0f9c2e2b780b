"""Reading a recorded reference run (``benchmarks/reference/*.json``).

``benchmarks/vs_baseline.py --reference PATH --record FILE`` runs the reference implementation
(github.com/brandonstarxel/chunking_evaluation) on a set of cells and writes, per cell, its chunk
count and its k=5 means and per-question values of recall, precision, precision Omega and IoU
(fractions), with the reference commit, package versions, date and command. The scripts that
print chunkmark next to the reference read those files; no reference number is typed in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REFERENCE_DIR = Path(__file__).resolve().parent / "reference"
METRICS = ("recall", "precision", "precision_omega", "iou")


def load(name: str) -> dict[str, Any]:
    """The recorded run ``benchmarks/reference/<name>.json`` (``general8``, ``semantic``)."""
    path = REFERENCE_DIR / f"{name}.json"
    if not path.is_file():
        raise SystemExit(
            f"no recorded reference run at {path}: record one with benchmarks/vs_baseline.py "
            "--reference PATH --reference-python PY --record " + str(path)
        )
    record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return record


def table(name: str) -> dict[str, tuple[float, ...]]:
    """Per cell label: (chunks, recall, precision, precision Omega, IoU), metrics in percent."""
    return {
        label: (cell["chunks"], *(100 * cell["means"][m] for m in METRICS))
        for label, cell in load(name)["cells"].items()
    }
