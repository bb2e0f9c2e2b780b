"""A newcomer's afternoon, as the README tells it, in fresh processes on a clean cache, with no
network and no LLM: documents of their own (markdown, HTML, a man page) imported, fifteen
hand-written questions whose offsets are found in the imported text, validated, a grid run with
model2vec, BM25 and hybrid under --max-cost, the report, compare, gate against the run itself,
export to a Chroma collection and an audit of it, and the leaderboard's grid on the set.

Every command must exit 0, and the checks after each step read what it wrote: the run's cells
and settings in summary.csv, a gate of the run against itself passing, the audit's manifest
without failures, and the suite folder holding the set.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

DOCS = {
    "compost.md": """# Composting at home

## Greens and browns

A compost pile needs greens (grass clippings, vegetable scraps, coffee grounds) and browns
(dry leaves, straw, shredded cardboard). Aim for about three parts browns to one part greens
by volume; too many greens make the pile wet and smelly.

## Turning

Turn the pile every two weeks with a garden fork. Turning adds air, which the microbes need
to break the material down, and moves the cooler outside into the hot centre.

## When it is ready

Finished compost is dark, crumbly and smells of earth. It usually takes three to six months
in a pile that is turned regularly, and up to a year in one that is left alone.
""",
    "bees.md": """# Keeping bees

## Choosing a site

Place the hive where it gets morning sun and shelter from the wind. The entrance should face
away from paths people use, so the flight line of the bees does not cross them.

## Inspections

Inspect the colony every seven to ten days in spring and early summer. Look for eggs, which
show the queen was laying within the last three days, and for queen cells, which mean the
colony may be preparing to swarm.

## Honey

Take honey only from frames that are at least three quarters capped with wax. Uncapped honey
holds too much water and can ferment in the jar.
""",
    "tomatoes.html": """<!DOCTYPE html>
<html><head><title>Growing tomatoes</title></head>
<body>
<h1>Growing tomatoes</h1>
<h2>Sowing</h2>
<p>Sow tomato seeds indoors six to eight weeks before the last expected frost, a quarter of an
inch deep in seed compost kept at about 21 degrees Celsius.</p>
<h2>Watering</h2>
<p>Water deeply and regularly at the base of the plant. Irregular watering causes blossom end
rot, a dark sunken patch at the bottom of the fruit.</p>
<h2>Support</h2>
<p>Cordon varieties need a stake or string and their side shoots pinched out; bush varieties
can sprawl and need no pinching.</p>
</body></html>
""",
    "rainbarrel.html": """<!DOCTYPE html>
<html><head><title>Rain barrels</title></head>
<body>
<h1>Rain barrels</h1>
<p>Connect the barrel to a downpipe with a diverter kit, which sends the overflow back to the
drain when the barrel is full.</p>
<p>Cover the barrel with a lid or fine mesh so mosquitoes cannot lay eggs in the water, and
empty and rinse it once a year in late autumn.</p>
</body></html>
""",
    "gardenctl.txt": """GARDENCTL(1)                 User Commands                 GARDENCTL(1)

NAME
       gardenctl - control the garden irrigation timer

SYNOPSIS
       gardenctl [--zone N] [--minutes M] start|stop|status

DESCRIPTION
       gardenctl starts and stops watering on the irrigation timer. Each
       zone is watered for the number of minutes given with --minutes, 15
       by default.

OPTIONS
       --zone N
              Water zone N only. Zones are numbered from 1; without this
              option every zone is watered in turn.

       --dry-run
              Print what would be watered without opening any valve.

EXIT STATUS
       0 on success, 2 when the timer cannot be reached.
""",
}

# (question, document stem, a passage of that document that answers it)
QUESTIONS = [
    (
        "What ratio of browns to greens should a compost pile have?",
        "compost",
        "three parts browns to one part greens",
    ),
    ("How often should I turn the compost pile?", "compost", "Turn the pile every two weeks"),
    ("How long does compost take to be ready?", "compost", "three to six months"),
    ("What does finished compost look like?", "compost", "dark, crumbly and smells of earth"),
    ("Where should a beehive be placed?", "bees", "morning sun and shelter from the wind"),
    ("How often should a bee colony be inspected?", "bees", "every seven to ten days"),
    ("What do queen cells in a hive mean?", "bees", "the\ncolony may be preparing to swarm"),
    ("When is honey ready to take from a frame?", "bees", "three quarters capped with wax"),
    (
        "When should tomato seeds be sown?",
        "tomatoes",
        "six to eight weeks before the last expected frost",
    ),
    ("What causes blossom end rot on tomatoes?", "tomatoes", "Irregular watering causes blossom"),
    (
        "Do bush tomatoes need their side shoots pinched out?",
        "tomatoes",
        "bush varieties\ncan sprawl and need no pinching",
    ),
    (
        "How do I stop mosquitoes breeding in a rain barrel?",
        "rainbarrel",
        "so mosquitoes cannot lay eggs in the water",
    ),
    (
        "What happens when the rain barrel is full?",
        "rainbarrel",
        "sends the overflow back to the\ndrain",
    ),
    ("How long does gardenctl water each zone by default?", "gardenctl", "15\n       by default"),
    (
        "What exit status does gardenctl give when the timer cannot be reached?",
        "gardenctl",
        "2 when the timer cannot be reached",
    ),
]

CHUNKERS = ["fixed_tokens(size=64)", "recursive(size=128)", "paragraphs()"]
SETTINGS = [
    "token_budget(tokens=256)",
    "token_budget(tokens=256, ranker='bm25()')",
    "token_budget(tokens=256, ranker='hybrid()')",
]


def chunkmark(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``chunkmark ARGS`` in a fresh process, as a user types it; it must exit 0."""
    done = subprocess.run(
        [sys.executable, "-m", "chunkmark", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, (args, done.stdout[-3000:], done.stderr[-3000:])
    return done


def place(text: str, passage: str) -> tuple[int, int]:
    """Where ``passage`` is in ``text``, once and only once, whitespace runs matched loosely
    (the converter may rewrap lines): what a newcomer's ten-line helper script would do."""
    import re

    pattern = r"\s+".join(re.escape(word) for word in passage.split())
    found = [m.span() for m in re.finditer(pattern, text)]
    assert len(found) == 1, (passage, found)
    return found[0]


def test_a_newcomers_afternoon_runs_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("markitdown")
    pytest.importorskip("model2vec")
    pytest.importorskip("chromadb")
    env = dict(os.environ)
    env.update(
        CHUNKMARK_CACHE_DIR=str(tmp_path / "cache"),  # a clean machine: nothing cached
        HF_HUB_OFFLINE="1",
        COLUMNS="160",
    )
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env.pop(proxy, None)
    docs = tmp_path / "my-docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")

    # 1. import the documents
    chunkmark("datasets", "import", str(docs), "--out", "garden", env=env, cwd=tmp_path)
    corpus = tmp_path / "garden"
    converted = {p.stem: p for p in sorted((corpus / "corpora").iterdir())}  # .md, .txt
    assert sorted(converted) == sorted(Path(n).stem for n in DOCS)

    # 2. fifteen questions written by hand, in chunkmark's JSONL layout
    with (corpus / "documents.jsonl").open("w", encoding="utf-8") as handle:
        for stem, path in converted.items():
            rel = path.relative_to(corpus).as_posix()
            handle.write(json.dumps({"id": stem, "path": rel}) + "\n")
    with (corpus / "questions.jsonl").open("w", encoding="utf-8") as handle:
        for i, (question, stem, passage) in enumerate(QUESTIONS):
            text = converted[stem].read_text(encoding="utf-8")
            start, end = place(text, passage)
            excerpt = {"start": start, "end": end, "text": text[start:end]}
            row = {"id": f"q{i}", "question": question, "doc_id": stem, "excerpts": [excerpt]}
            handle.write(json.dumps(row) + "\n")
    validated = chunkmark("datasets", "validate", "garden", env=env, cwd=tmp_path)
    assert "15" in validated.stdout + validated.stderr

    # 3. a small grid: model2vec, BM25 and hybrid at a token budget, under --max-cost
    grid = [a for c in CHUNKERS for a in ("-c", c)] + [a for r in SETTINGS for a in ("-r", r)]
    ran = chunkmark(
        "run", "-d", "garden", *grid, "-e", "model2vec()", "--max-cost", "1",
        "--out", "results/garden", env=env, cwd=tmp_path,
    )  # fmt: skip
    out = tmp_path / "results" / "garden"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["failures"] == []
    with (out / "summary.csv").open(encoding="utf-8", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["scope"] == "all"]
    assert {r["chunker"].split("(")[0] for r in rows} == {"fixed_tokens", "recursive", "paragraphs"}
    assert len({r["retrieval"] for r in rows}) == 3
    assert all(r["n_questions"] == "15" for r in rows)
    assert "recall" in ran.stdout and (out / "report.html").is_file()

    # 4. the report again, compare two cells and two settings of one cell, gate against itself
    chunkmark("report", "results/garden", "--out", "report", env=env, cwd=tmp_path)
    assert (tmp_path / "report" / "report.html").stat().st_size > 0
    chunkmark(
        "compare", "results/garden", "--a", CHUNKERS[0], "--b", CHUNKERS[1],
        "--pick-retrieval", SETTINGS[0], env=env, cwd=tmp_path,
    )  # fmt: skip
    compared = chunkmark(
        "compare", "results/garden", "--a", SETTINGS[2], "--b", SETTINGS[1],
        "--pick-chunker", CHUNKERS[1], env=env, cwd=tmp_path,
    )  # fmt: skip
    assert "verdict" in compared.stdout
    gated = chunkmark(
        "gate", "results/garden", "--baseline", "results/garden", env=env, cwd=tmp_path
    )
    assert "passed" in gated.stdout, gated.stdout

    # 5. the chosen cell into a Chroma collection, and an audit of that collection
    store = f"chroma:{tmp_path / 'store'}?collection=garden"
    chunkmark("export", "results/garden", "--cell", "best", "--to", store, env=env, cwd=tmp_path)
    chunkmark(
        "audit", store, "-d", "garden", "-e", "model2vec()", "--out", "audit",
        env=env, cwd=tmp_path,
    )  # fmt: skip
    audited = json.loads((tmp_path / "audit" / "manifest.json").read_text(encoding="utf-8"))
    assert audited["failures"] == []
    assert (tmp_path / "audit" / "audit.csv").is_file()

    # 6. the leaderboard's own grid on the set, and the board over it
    chunkmark(
        "suite", "run", "--dataset", "garden", "--grid", "fast", "--out", "suite",
        env=env, cwd=tmp_path,
    )  # fmt: skip
    suite = json.loads((tmp_path / "suite" / "suite.json").read_text(encoding="utf-8"))
    assert [s["name"] for s in suite["sets"]] == ["garden"]
    board = chunkmark("suite", "leaderboard", "suite", env=env, cwd=tmp_path)
    assert "garden" in (tmp_path / "suite" / "leaderboard.md").read_text(encoding="utf-8")
    assert board.stdout
