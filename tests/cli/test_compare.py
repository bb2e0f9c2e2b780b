"""``chunkmark compare`` on real runs: the numbers equal the library's, the verdict follows them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

import chunkmark
from chunkmark.chunkers import CHUNKERS
from chunkmark.embedders import EMBEDDERS
from chunkmark.metrics.paired import compare_paired
from chunkmark.metrics.selection import questions_needed

SMALL = "fixed_tokens(size=40, overlap=0)"
LARGE = "fixed_tokens(size=400, overlap=0)"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "run"
    chunkmark.evaluate(
        dataset="demo",
        chunkers=[SMALL, LARGE],
        embedders=["fake()", "fake(seed=1)"],
        k=[1, 5],
        out=out,
        no_cache=True,
    )
    return out


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chunkmark", "compare", *args], capture_output=True, text=True
    )


def test_json_equals_the_library_on_the_same_questions(run_dir: Path) -> None:
    done = cli(str(run_dir), "--a", SMALL, "--b", LARGE, "--pick-embedder", "fake()", "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    cols = pq.read_table(run_dir / "results.parquet").to_pydict()
    values = {}
    embedder = str(EMBEDDERS.resolve("fake()"))
    for chunker in (SMALL, LARGE):
        name = str(CHUNKERS.resolve(chunker))
        cells = zip(cols["chunker"], cols["embedder"], cols["k"], strict=True)
        rows = [i for i, cell in enumerate(cells) if cell == (name, embedder, "5")]
        values[chunker] = np.array([cols["iou"][i] for i in rows])
    want = compare_paired(values[SMALL], values[LARGE])
    assert got["k"] == "5" and got["retrieval"] == "top_k(k=5)" and got["n"] == 64
    assert got["difference"] == pytest.approx(want.difference, abs=1e-15)
    assert got["p_permutation"] == want.p_permutation
    assert got["p_ttest"] == pytest.approx(want.p_ttest, abs=1e-12)
    assert (got["wins"], got["ties"], got["losses"]) == (want.wins, want.ties, want.losses)
    # Small chunks retrieve far fewer unneeded characters: IoU is clearly higher.
    assert got["difference"] > 0 and got["p_permutation"] < 0.01
    assert got["verdict"].startswith("A is better than B on IoU")
    # The questions a paired t-test needs for 80% power at this difference: the library's.
    needed = got["questions_needed"]
    assert needed == questions_needed(values[SMALL], values[LARGE]).to_dict()
    assert needed["n"] is not None and 2 <= needed["n"] < 64  # already separated on 64


def test_a_cell_against_itself_is_a_tie(run_dir: Path) -> None:
    done = cli(
        str(run_dir), "--a", SMALL, "--b", SMALL, "--pick-embedder", "fake()", "--pick-k", "1"
    )
    assert done.returncode == 0, done.stderr
    assert "no detectable difference" in done.stdout and "p = 1" in done.stdout
    assert "no realistic number of questions would separate A and B" in " ".join(
        done.stdout.split()
    )


def test_ambiguous_or_unknown_cells_are_one_line_errors(run_dir: Path) -> None:
    done = cli(str(run_dir), "--a", SMALL, "--b", LARGE)
    assert done.returncode == 2
    assert "matches 2 cells" in done.stderr and "--pick-embedder" in done.stderr
    assert "Traceback" not in done.stderr
    done = cli(
        str(run_dir), "--a", "recursive(size=100)", "--b", LARGE, "--pick-embedder", "fake()"
    )
    assert done.returncode == 2 and "names no cell" in done.stderr
    done = cli(str(run_dir), "--a", SMALL, "--b", LARGE, "--metric", "nope")
    assert done.returncode == 2 and "Unknown metric 'nope'" in done.stderr


# --- results of the current schema (written here, not by the runner) -----------------------

BM25 = "bm25(k=5, method='lucene', k1=1.5, b=0.75)"
SCORINGS = {"default": ("position", "chars", "sum"), "tokens": ("position", "tokens", "sum")}


@pytest.fixture(scope="module")
def settings_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[Any, np.ndarray]]:
    """results.parquet of two cells at top_k(k=5), top_k(k=1) and bm25(k=5), scored two ways;
    returns the folder and every (chunker, retrieval, scoring) -> iou values."""
    out = tmp_path_factory.mktemp("settings") / "run"
    out.mkdir()
    rng = np.random.default_rng(3)
    chunkers = [str(CHUNKERS.resolve(SMALL)), str(CHUNKERS.resolve(LARGE))]
    embedder = str(EMBEDDERS.resolve("fake()"))
    rows, values = [], {}
    for chunker in chunkers:
        for retrieval, k in (("top_k(k=5)", "5"), ("top_k(k=1)", "1"), (BM25, "5")):
            for name, (excerpts, unit, denominator) in SCORINGS.items():
                iou = rng.uniform(0, 1, 20)
                values[(chunker, retrieval, name)] = iou
                for i, v in enumerate(iou):
                    rows.append(
                        {
                            "dataset": "demo",
                            "chunker": chunker,
                            "embedder": embedder,
                            "retrieval": retrieval,
                            "excerpts": excerpts,
                            "unit": unit,
                            "denominator": denominator,
                            "k": k,
                            "question_id": f"q{i}",
                            "doc_id": "d",
                            "k_used": int(k),
                            "retrieved_tokens": 100,
                            "iou": float(v),
                        }
                    )
    pq.write_table(pa.Table.from_pylist(rows), out / "results.parquet")
    return out, values


def test_a_retrieval_setting_and_scoring_are_compared(
    settings_dir: tuple[Path, dict[Any, np.ndarray]],
) -> None:
    run, values = settings_dir
    small, large = str(CHUNKERS.resolve(SMALL)), str(CHUNKERS.resolve(LARGE))
    cases = [
        ([], ("top_k(k=5)", "default")),
        (["--pick-k", "1"], ("top_k(k=1)", "default")),
        (["--pick-retrieval", "bm25(k=5)"], (BM25, "default")),
        (["--pick-retrieval", "bm25(k=5)", "--pick-unit", "tokens"], (BM25, "tokens")),
    ]
    for extra, (retrieval, scoring) in cases:
        done = cli(str(run), "--a", SMALL, "--b", LARGE, "--json", *extra)
        assert done.returncode == 0, done.stderr
        got = json.loads(done.stdout)
        assert got["retrieval"] == retrieval and got["n"] == 20
        assert tuple(got["scoring"].values()) == SCORINGS[scoring]
        want = compare_paired(
            values[(small, retrieval, scoring)], values[(large, retrieval, scoring)]
        )
        assert got["difference"] == pytest.approx(want.difference, abs=1e-15)
        assert got["p_permutation"] == want.p_permutation
    done = cli(str(run), "--a", SMALL, "--b", LARGE, "--pick-retrieval", "top_k(k=7)")
    assert done.returncode == 2 and "top_k(k=7) is not in the runs" in done.stderr
    done = cli(str(run), "--a", SMALL, "--b", LARGE, "--pick-denominator", "union")
    assert done.returncode == 2 and "no rows scored with" in done.stderr
    assert "--pick-denominator" in done.stderr


def test_results_without_the_new_columns_are_top_k(tmp_path: Path) -> None:
    run = tmp_path / "old"
    run.mkdir()
    chunkers = [str(CHUNKERS.resolve(SMALL)), str(CHUNKERS.resolve(LARGE))]
    rows = [
        {
            "dataset": "demo",
            "chunker": chunker,
            "embedder": "fake()",
            "k": k,
            "question_id": f"q{i}",
            "iou": (i + 1) / 10 + (0.5 if chunker == chunkers[0] and k == "min" else 0),
        }
        for chunker in chunkers
        for k in ("5", "min")
        for i in range(5)
    ]
    pq.write_table(pa.Table.from_pylist(rows), run / "results.parquet")
    done = cli(str(run), "--a", SMALL, "--b", LARGE, "--pick-k", "min", "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["retrieval"] == "top_k(k='min')" and got["k"] == "min"
    assert got["difference"] == pytest.approx(0.5) and got["wins"] == 5
    assert got["scoring"] == {"excerpts": "position", "unit": "chars", "denominator": "sum"}


def _one_question_run(tmp_path: Path, values: dict[str, float]) -> Path:
    run = tmp_path / "one"
    run.mkdir()
    rows = [
        {"dataset": "demo", "chunker": str(CHUNKERS.resolve(spec)), "embedder": "fake()"}
        | {"k": "5", "question_id": "q0", "iou": v}
        for spec, v in values.items()
    ]
    pq.write_table(pa.Table.from_pylist(rows), run / "results.parquet")
    return run


def test_one_question_prints_n_a_and_is_never_significant(tmp_path: Path) -> None:
    run = _one_question_run(tmp_path, {SMALL: 0.5, LARGE: 0.3})
    done = cli(str(run), "--a", SMALL, "--b", LARGE, "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["n"] == 1 and got["p_ttest"] is None and got["p_permutation"] == 1.0
    done = cli(str(run), "--a", SMALL, "--b", LARGE)
    text = " ".join(done.stdout.split())  # as read, whatever the terminal's width
    assert "t-test p = n/a" in text and "1 paired question " in text
    assert "1 question: no test on so few can reach p < 0.05" in text
    assert "A is better" not in text


def test_a_nan_value_means_cannot_tell(tmp_path: Path) -> None:
    run = _one_question_run(tmp_path, {SMALL: float("nan"), LARGE: 0.3})
    done = cli(str(run), "--a", SMALL, "--b", LARGE)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "p = n/a" in text and "verdict: cannot tell" in text


def test_too_few_permutations_are_refused(run_dir: Path) -> None:
    done = cli(
        str(run_dir),
        "--a",
        SMALL,
        "--b",
        LARGE,
        "--pick-embedder",
        "fake()",
        "--permutations",
        "999",
    )
    assert done.returncode == 2
    assert "999 sign flips are too few" in done.stderr and "at least 1,000" in done.stderr
    report = subprocess.run(
        [sys.executable, "-m", "chunkmark", "report", str(run_dir), "--permutations", "10"],
        capture_output=True,
        text=True,
    )
    assert report.returncode == 2 and "10 sign flips are too few" in report.stderr


def _fifteen_question_run(tmp_path: Path, a: list[float], b: list[float]) -> Path:
    run = tmp_path / "fifteen"
    run.mkdir()
    rows = [
        {"dataset": "demo", "chunker": str(CHUNKERS.resolve(spec)), "embedder": "fake()"}
        | {"k": "5", "question_id": f"q{i}", "recall": v}
        for spec, values in ((SMALL, a), (LARGE, b))
        for i, v in enumerate(values)
    ]
    pq.write_table(pa.Table.from_pylist(rows), run / "results.parquet")
    return run


def exact_sign_flip_p(d: np.ndarray) -> float:
    """Two-sided sign-flip p-value over all 2^n sign vectors (no sampling)."""
    signs = np.array(list(np.ndindex(*([2] * len(d))))) * 2 - 1
    means = np.abs(signs @ d) / len(d)
    return float((means >= abs(d.mean()) - 1e-12).mean())


def test_a_five_to_nothing_win_on_15_questions_is_inconclusive_not_tied(tmp_path: Path) -> None:
    """Fault: A won 5-0 (10 ties) on 15 questions, the interval [+13.33, +60.00] excluded zero,
    and compare said "treat A and B as tied"."""
    a, b = [1.0] * 5 + [0.0] * 10, [0.0] * 15
    run = _fifteen_question_run(tmp_path, a, b)
    done = cli(str(run), "--a", SMALL, "--b", LARGE, "--metric", "recall", "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    d = np.array(a) - np.array(b)
    exact = exact_sign_flip_p(d)
    assert exact == 2 / 32  # only the 5 questions that differ can flip: 2 of 2^5 reach it
    assert got["p_permutation"] == pytest.approx(exact, abs=0.01)  # 10,000 flips: sd 0.0024
    assert got["ci_low"] > 0 and (got["wins"], got["ties"], got["losses"]) == (5, 10, 0)
    # The questions a paired t-test needs, by hand from the paired sd: more than 15.
    sd = float(np.std(d, ddof=1))
    n = got["questions_needed"]["n"]
    assert got["questions_needed"]["sd"] == pytest.approx(sd)

    def power(m: int) -> float:
        crit = stats.t.ppf(0.975, m - 1)
        nc = d.mean() / sd * np.sqrt(m)
        return float(stats.nct.sf(crit, m - 1, nc) + stats.nct.cdf(-crit, m - 1, nc))

    assert power(n) >= 0.8 > power(n - 1) and n > 15
    verdict = got["verdict"]
    assert verdict.startswith("inconclusive on recall") and "tied" not in verdict.split(".")[0]
    assert "excludes zero" in verdict and f"about {n} paired questions are needed" in verdict
    assert (
        "there are 15" in verdict and "; only 5 of the 15 questions differ, and no test" in verdict
    )
    text = " ".join(cli(str(run), "--a", SMALL, "--b", LARGE, "--metric", "recall").stdout.split())
    assert "verdict: inconclusive on recall" in text and "treat A and B as tied" not in text


def test_two_retrieval_settings_of_one_cell_are_compared(
    settings_dir: tuple[Path, dict[Any, np.ndarray]],
) -> None:
    """Fault: `--a 'bm25(k=5)' --b 'top_k(k=5)'` "names no cell"; two settings of one chunking
    could not be compared."""
    run, values = settings_dir
    small = str(CHUNKERS.resolve(SMALL))
    done = cli(str(run), "--a", "bm25(k=5)", "--b", "top_k(k=5)", "--pick-chunker", SMALL, "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    a, b = values[(small, BM25, "default")], values[(small, "top_k(k=5)", "default")]
    assert got["a"]["retrieval"] == BM25 and got["b"]["retrieval"] == "top_k(k=5)"
    assert got["a"]["chunker"] == got["b"]["chunker"] == small and got["n"] == 20
    assert got["difference"] == pytest.approx(float(np.mean(a - b)), abs=1e-12)
    assert (got["wins"], got["losses"]) == (int((a > b).sum()), int((a < b).sum()))
    # Another scoring, the same way; and the printed table names the settings.
    done = cli(
        str(run), "--a", "bm25(k=5)", "--b", "top_k(k=1)", "--pick-chunker", SMALL,
        "--pick-unit", "tokens", "--json",
    )  # fmt: skip
    got = json.loads(done.stdout)
    want = values[(small, BM25, "tokens")] - values[(small, "top_k(k=1)", "tokens")]
    assert got["difference"] == pytest.approx(float(np.mean(want)), abs=1e-12)
    done = cli(str(run), "--a", "bm25(k=5)", "--b", "top_k(k=5)", "--pick-chunker", SMALL)
    text = " ".join(done.stdout.split())  # as read, whatever the terminal's width
    assert "at two retrieval settings" in text and "bm25(k=5)" in text and "top_k(k=5)" in text
    # Two cells hold both settings: pin one; a setting and --pick-retrieval do not mix.
    done = cli(str(run), "--a", "bm25(k=5)", "--b", "top_k(k=5)")
    assert done.returncode == 2 and "2 cells of dataset 'demo' hold both" in done.stderr
    assert "--pick-chunker" in done.stderr
    done = cli(
        str(run), "--a", "bm25(k=5)", "--b", "top_k(k=5)", "--pick-chunker", SMALL,
        "--pick-k", "1",
    )  # fmt: skip
    assert done.returncode == 2 and "nothing to pick" in done.stderr
