"""Add the cells of another suite run over the same sets (e.g. one more embedder, run with
``chunkmark suite run -e SPEC``) to a published board folder, so the board ranks them beside the
cells already there.

For every set of SUITE_DIR that the board folder has, the set's cells are appended to the board's
``results.parquet`` (zstd, checked after writing), ``summary.csv`` (its rows over all questions,
as ``scripts/publish_leaderboard.py`` keeps them) and ``manifest.json`` (the cells, with their
index times and tokens embedded; the embedders' identities and stats; the run's versions and
timings under ``added_runs``, so the provenance of each part stays). ``suite.json`` lists the
added embedders. Refused, with nothing written for that set: a set whose dataset fingerprint
differs from the board's (another sample), a run with failed cells, or a cell the board already
has. Sets of SUITE_DIR the board lacks are named and skipped; the board's other sets keep what
they had, so a cell added to only some sets is shown per set and left out of the ranking
across sets (the leaderboard says how many).

Usage: python scripts/add_to_board.py SUITE_DIR [--to leaderboard/default-suite]
(then `make leaderboard` regenerates the page from the committed results alone).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def add(suite_dir: Path, board: Path) -> list[str]:
    """Merge every set of ``suite_dir`` into ``board``; returns one line per set."""
    suite = json.loads((suite_dir / "suite.json").read_text(encoding="utf-8"))
    board_suite = json.loads((board / "suite.json").read_text(encoding="utf-8"))
    folders = {s["name"]: s["folder"] for s in board_suite["sets"]}
    lines: list[str] = []
    added: list[str] = []
    for each in suite["sets"]:
        if each["name"] not in folders:
            lines.append(f"{each['name']}: not a set of {board}; skipped")
            continue
        source, target = suite_dir / each["folder"], board / folders[each["name"]]
        cells, embedders = _merge_set(source, target)
        added += [e for e in embedders if e not in added]
        lines.append(f"{each['name']}: {cells} cells added from {source}")
    known = board_suite.setdefault("embedders", [])
    known += [e for e in added if e not in known]
    text = json.dumps(board_suite, indent=2, ensure_ascii=False) + "\n"
    (board / "suite.json").write_text(text, encoding="utf-8")
    return lines


def _merge_set(source: Path, target: Path) -> tuple[int, list[str]]:
    new = _manifest(source)
    old = _manifest(target)
    if new.get("failures"):
        raise SystemExit(
            f"{source / 'manifest.json'}: {len(new['failures'])} failed cells; rerun "
            "`chunkmark suite run` into its suite folder until every cell is done."
        )
    prints_new = {d["fingerprint"] for d in new["datasets"]}
    prints_old = {d["fingerprint"] for d in old["datasets"]}
    if prints_new != prints_old:
        raise SystemExit(
            f"{source}: its dataset (fingerprint {sorted(prints_new)}) is not the board's "
            f"({sorted(prints_old)} in {target}); run the same sample (`--docs`, `--seed`)."
        )
    have = {(c["chunker"], c["embedder"]) for c in old["cells"]}
    clash = [c for c in new["cells"] if (c["chunker"], c["embedder"]) in have]
    if clash:
        raise SystemExit(
            f"{target}: already holds {clash[0]['chunker']} x {clash[0]['embedder']} "
            f"(and {len(clash) - 1} more cells of {source}); nothing of that set was added."
        )
    _append_results(source / "results.parquet", target / "results.parquet")
    _append_summary(source / "summary.csv", target / "summary.csv")
    old["cells"] += new["cells"]
    old["embedding"] = {**(old.get("embedding") or {}), **(new.get("embedding") or {})}
    config = old.setdefault("config", {})
    config["embedders"] = list(config.get("embedders") or [])
    config["embedders"] += [e for e in new["config"]["embedders"] if e not in config["embedders"]]
    old.setdefault("added_runs", []).append(
        {
            "created": new.get("created"),
            "versions": new.get("versions"),
            "timings": new.get("timings"),
            "out": (new.get("config") or {}).get("out"),
            "embedders": new["config"]["embedders"],
        }
    )
    text = json.dumps(old, indent=2, ensure_ascii=False) + "\n"
    (target / "manifest.json").write_text(text, encoding="utf-8")
    return len(new["cells"]), list(new["config"]["embedders"])


def _manifest(folder: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    return value


def _append_results(source: Path, target: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    old, new = pq.read_table(target), pq.read_table(source)
    table = pa.concat_tables([old, new.select(old.schema.names).cast(old.schema)])
    pq.write_table(table, target, compression="zstd", compression_level=19)
    if not pq.read_table(target).equals(table):
        raise SystemExit(f"{target}: the table written differs from the merged one")


def _append_summary(source: Path, target: Path) -> None:
    with target.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields = list(reader.fieldnames or [])
        rows = list(reader)
    with source.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if list(reader.fieldnames or []) != fields:
            raise SystemExit(f"{source}: its columns are not those of {target}")
        rows += [row for row in reader if row["scope"] == "all"]
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite_dir", type=Path)
    parser.add_argument("--to", type=Path, default=ROOT / "leaderboard" / "default-suite")
    args = parser.parse_args(argv)
    for line in add(args.suite_dir, args.to):
        print(line)


if __name__ == "__main__":
    main()
