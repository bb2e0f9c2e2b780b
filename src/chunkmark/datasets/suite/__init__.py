"""The suite's sets (:data:`SUITE_SETS`) and the converters of its human-evidence sets.

Five public sets whose evidence people marked in long documents (CUAD, QMSum, Evidence
Inference 2.0, FairytaleQA, COVID-QA; docs/suite.md describes them), each converted from raw
files pinned at a GitHub commit (:mod:`~chunkmark.datasets.suite.pinned`), each declared in its
own module and added to :data:`SUITE_SETS` here. Re-DocRED's evidence set
(:mod:`chunkmark.relations.redocred`), Chroma's general benchmark
(:mod:`chunkmark.suite.sets`) and plugins' sets are added where they are declared.
"""

from __future__ import annotations

from chunkmark.datasets.suite import covid_qa, cuad, evidence_inference, fairytaleqa, qmsum
from chunkmark.datasets.suite.base import SUITE_SETS, Preparing, Sample, SuiteSetEntry
from chunkmark.datasets.suite.manifest import read_manifest
from chunkmark.datasets.suite.pinned import (
    SetInfo,
    Sources,
    convert_set,
    converted_dir,
    fetch_raw,
    is_converted,
    local_root,
    raw_dir,
    sources,
    verify_raw,
)

__all__ = [
    "SUITE_SETS",
    "Preparing",
    "Sample",
    "SetInfo",
    "Sources",
    "SuiteSetEntry",
    "convert_set",
    "converted_dir",
    "fetch_raw",
    "is_converted",
    "local_root",
    "raw_dir",
    "read_manifest",
    "sources",
    "verify_raw",
]

# In the suite's order.
for _set in (
    cuad.CUAD,
    qmsum.QMSUM,
    evidence_inference.EVIDENCE_INFERENCE,
    fairytaleqa.FAIRYTALEQA,
    covid_qa.COVID_QA,
):
    SUITE_SETS.add(_set)
