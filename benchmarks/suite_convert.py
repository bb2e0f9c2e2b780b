"""Convert every set of the suite in full and print, per set: documents, questions kept and
dropped by reason, mean document length, and how the evidence was placed.

The five human-evidence sets are converted from the raw copies under
``$CHUNKMARK_SHARED_DIR/datasets/suite`` (each checked against its pinned SHA-256),
Re-DocRED's evidence-backed relations from ``$CHUNKMARK_SHARED_DIR/datasets/redocred``, and
Chroma's general set is read from ``$CHUNKMARK_SHARED_DIR/datasets/chroma_general``. Converted
folders go to a temporary folder (or ``--out``) and are read back by chunkmark's loader, which
checks ``document[start:end] == text`` for every excerpt.

    .venv/bin/python benchmarks/suite_convert.py [--shared ../shared] [--out DIR]

"placed" counts evidence pieces (a clause, an annotator's evidence, an answer, a turn range, a
section) that were looked for, and the columns after it the share placed each way (exact: the
text as given, or offsets the text confirms; normalised: after whitespace normalisation;
structural: a turn range, section or sentence ids; repaired: near a wrongly stated offset) or not
at all. Evidence set aside on purpose (rejected by a set's verifier, relations without evidence)
is not looked for. "first of several": clauses placed at the first of several occurrences.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from chunkmark.datasets import load_dataset, suite
from chunkmark.datasets.jsonl import load_jsonl, write_jsonl
from chunkmark.relations.redocred import evidence_dataset

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    default = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=default)
    parser.add_argument("--out", type=Path, default=None)
    pinned = [e.name for e in suite.SUITE_SETS.values() if isinstance(e, suite.SetInfo)]
    every = [*pinned, "redocred-evidence", "chroma-general"]
    parser.add_argument("--sets", default=",".join(every), help="comma-separated, of these")
    parser.add_argument(
        "--smoke", action="store_true", help="covid_qa and chroma-general only: seconds"
    )
    args = parser.parse_args()
    names = ["covid_qa", "chroma-general"] if args.smoke else args.sets.split(",")
    unknown = sorted(set(names) - set(every))
    if unknown:
        parser.error(f"unknown sets {', '.join(unknown)}; choose from {', '.join(every)}")
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        rows = [
            convert(name, args.shared / "datasets/suite", out) for name in pinned if name in names
        ]
        if "redocred-evidence" in names:
            rows.append(redocred(args.shared / "datasets/redocred/test_revised.json", out))
        if "chroma-general" in names:
            rows.append(chroma(args.shared / "datasets/chroma_general"))
    print_table(rows)


def convert(name: str, root: Path, out: Path) -> dict[str, Any]:
    start = time.perf_counter()
    dataset, manifest = suite.convert_set(name, root / name, out=out / name)
    evidence = manifest["evidence"]
    return {
        "set": name,
        "documents": len(dataset.documents),
        "raw": manifest["questions"]["raw"],
        "kept": len(dataset.questions),
        "dropped": manifest["questions"]["dropped"],
        "mean_chars": manifest["mean_document_chars"],
        "placed": evidence["placed"],
        "not_placed": sum(evidence["not_placed"].values()),
        "first_of_several": evidence["first_of_several"],
        "seconds": time.perf_counter() - start,
    }


def redocred(source: Path, out: Path) -> dict[str, Any]:
    start = time.perf_counter()
    dataset, counts = evidence_dataset(source)
    write_jsonl(dataset, out / "redocred-evidence")
    loaded = load_jsonl(out / "redocred-evidence")
    assert loaded.fingerprint == dataset.fingerprint
    excerpts = sum(len(q.excerpts) for q in loaded.questions)
    return {
        "set": "redocred-evidence",
        "documents": len(loaded.documents),
        "raw": counts["questions"],
        "kept": len(loaded.questions),
        "dropped": {},
        "mean_chars": statistics.fmean(len(d.text) for d in loaded.documents),
        "placed": {"exact": 0, "normalised": 0, "structural": excerpts, "repaired": 0, "elided": 0},
        "not_placed": 0,
        "first_of_several": 0,
        "seconds": time.perf_counter() - start,
    }


def chroma(folder: Path) -> dict[str, Any]:
    start = time.perf_counter()
    dataset = load_dataset(folder)
    excerpts = sum(len(q.excerpts) for q in dataset.questions)
    return {
        "set": "chroma-general",
        "documents": len(dataset.documents),
        "raw": len(dataset.questions),
        "kept": len(dataset.questions),
        "dropped": {},
        "mean_chars": statistics.fmean(len(d.text) for d in dataset.documents),
        "placed": {"exact": excerpts, "normalised": 0, "structural": 0, "repaired": 0, "elided": 0},
        "not_placed": 0,
        "first_of_several": 0,
        "seconds": time.perf_counter() - start,
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        "| set | documents | questions raw | kept | dropped (by reason) | mean doc chars "
        "| evidence looked for | exact | normalised | structural | repaired | elided | not placed "
        "| first of several | seconds |"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for r in rows:
        p = r["placed"]
        looked = sum(p.values()) + r["not_placed"]
        dropped = "; ".join(f"{k}: {v}" for k, v in r["dropped"].items()) or "0"

        def share(n: int, looked: int = looked) -> str:
            return f"{100 * n / looked:.1f}%"

        print(
            f"| {r['set']} | {r['documents']:,} | {r['raw']:,} | {r['kept']:,} | {dropped} "
            f"| {r['mean_chars']:,.0f} | {looked:,} | {share(p['exact'])} "
            f"| {share(p['normalised'])} | {share(p['structural'])} | {share(p['repaired'])} "
            f"| {share(p['elided'])} "
            f"| {share(r['not_placed'])} | {r['first_of_several']:,} | {r['seconds']:.1f} |"
        )
    print(
        f"total: {len(rows)} sets, {sum(r['documents'] for r in rows):,} documents, "
        f"{sum(r['kept'] for r in rows):,} questions kept of {sum(r['raw'] for r in rows):,}"
    )


if __name__ == "__main__":
    main()
