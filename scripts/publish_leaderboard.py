"""Publish a finished suite run as the project's leaderboard: copy what the leaderboard reads
into leaderboard/default-suite and regenerate leaderboard/leaderboard.md and .html from it.

Only ``suite.json`` and each set's ``results.parquet``, ``summary.csv`` and ``manifest.json`` are
copied (``chunkmark suite leaderboard`` reads nothing else; the cells' chunk and ranking files
stay behind), and two of them are made smaller without changing what the leaderboard reads:
``results.parquet`` is written again with zstd (the same table, checked before it is kept) and
``summary.csv`` keeps its rows over all questions (``scope`` all; the per-document rows, which
the leaderboard does not read, follow from ``results.parquet``). A run with a failed cell is
refused: the board would rank an incomplete grid.

Usage: python scripts/publish_leaderboard.py SUITE_DIR [--to leaderboard]
(then `make leaderboard` regenerates the page from the committed results alone).
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = "default-suite"  # the page is titled by its folder
SET_FILES = ("results.parquet", "summary.csv", "manifest.json")


def publish(suite_dir: Path, to: Path) -> list[Path]:
    """Copy the files of ``suite_dir`` the leaderboard reads into ``to/default-suite``; returns them."""
    suite = json.loads((suite_dir / "suite.json").read_text(encoding="utf-8"))
    results = to / FOLDER
    if results.exists():
        shutil.rmtree(results)
    results.mkdir(parents=True)
    copied = [results / "suite.json"]
    shutil.copyfile(suite_dir / "suite.json", copied[0])
    for each in suite["sets"]:
        folder = suite_dir / each["folder"]
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        if manifest.get("failures"):
            raise SystemExit(
                f"{folder / 'manifest.json'}: {len(manifest['failures'])} failed cells; rerun "
                f"`chunkmark suite run` into {suite_dir} until every cell is done."
            )
        target = results / each["folder"]
        target.mkdir()
        shutil.copyfile(folder / "manifest.json", target / "manifest.json")
        _recompress(folder / "results.parquet", target / "results.parquet")
        _summary_over_all_questions(folder / "summary.csv", target / "summary.csv")
        copied += [target / name for name in SET_FILES]
    return copied


def _recompress(source: Path, target: Path) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(source)
    pq.write_table(table, target, compression="zstd", compression_level=19)
    if not pq.read_table(target).equals(table):
        raise SystemExit(f"{target}: the recompressed table differs from {source}")


def _summary_over_all_questions(source: Path, target: Path) -> None:
    with source.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields = list(reader.fieldnames or [])
        rows = [row for row in reader if row["scope"] == "all"]
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite_dir", type=Path)
    parser.add_argument("--to", type=Path, default=Path("leaderboard"))
    args = parser.parse_args(argv)
    copied = publish(args.suite_dir, ROOT / args.to)
    print(f"copied {len(copied)} files into {args.to / FOLDER}")
    # run from the project root with relative paths: the page names the command that made it
    subprocess.run(
        [sys.executable, "-m", "chunkmark", "suite", "leaderboard", str(args.to / FOLDER),
         "--out", str(args.to)],
        cwd=ROOT,
        check=True,
    )  # fmt: skip


if __name__ == "__main__":
    main()
