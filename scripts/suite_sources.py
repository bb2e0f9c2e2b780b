"""Write the pinned source list of the suite's sets: src/chunkmark/datasets/suite/sources.json.gz.

For each set folder under DIR (default: $CHUNKMARK_SHARED_DIR/datasets/suite) it reads
SOURCE.txt ("github:OWNER/REPO @ COMMIT") and records the SHA-256 of every file the converter
reads (the rules below), as repository paths. Usage: python scripts/suite_sources.py [DIR]
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/chunkmark/datasets/suite/sources.json.gz"

# Which files of each set's copy the converter reads (regular expressions on the path).
NEEDED = {
    "cuad": r"^(LICENSE|data/CUAD_v1/(master_clauses\.csv|CUAD_v1_README\.txt|full_contract_txt/.+\.txt))$",
    "qmsum": r"^(LICENSE|data/ALL/(train|val|test)/[^/]+\.json)$",
    "evidence_inference": r"^(LICENSE|annotations/(prompts_merged\.csv|v2_annotations\.csv|README\.md|txt_files/PMC\d+\.txt))$",
    "fairytaleqa": r"^(LICENSE|data-by-train-split/(section-stories|questions)/(train|val|test)/[^/]+\.csv)$",
    "covid_qa": r"^(LICENSE|data/question-answering/200423_covidQA\.json)$",
}


def main(root: Path) -> None:
    sets: dict[str, object] = {}
    for name, rule in NEEDED.items():
        folder = root / name
        match = re.match(r"github:(\S+)\s*@\s*([0-9a-f]{40})", (folder / "SOURCE.txt").read_text())
        if match is None:
            raise SystemExit(f"{folder / 'SOURCE.txt'} does not say 'github:OWNER/REPO @ COMMIT'")
        files = {}
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder).as_posix()
            if path.is_file() and re.match(rule, relative):
                files[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
        sets[name] = {"repository": match.group(1), "commit": match.group(2), "files": files}
        print(f"{name}: {len(files)} files")
    data = json.dumps(sets, indent=0, sort_keys=True).encode()
    OUT.write_bytes(gzip.compress(data, mtime=0))
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    default = Path(os.environ.get("CHUNKMARK_SHARED_DIR", "../shared")) / "datasets/suite"
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
