"""``chunkmark run`` over a synthetic corpus of about 1 GB: the CLI's own path (embedding cache,
chunk store, report), the peak memory of its process tree, seconds per phase, and a corpus
whose chunk texts are all distinct.

The corpus repeats the five corpora of Chroma's general benchmark, every copy perturbed: a
seeded 10% of its ASCII letters and digits are replaced by other letters of the same case or
other digits, which keeps every character offset (so excerpt spans stay valid). Perturbation
alone leaves equal chunks where a stretch has few letters or digits, so every copy is also
*tagged*: every 128th character starts a tag, ``¤`` and a base-62 number naming the copy and
the position, written over the characters there (``¤`` appears nowhere else: the base text's
are replaced by ``£``), and a line is appended to each copy ending in a word of its own that
cl100k encodes as one token. A chunk that holds a whole tag is the only chunk with that tag at
that place in its text; a chunk without one is a document's last chunk, which ends in its
document's own word. So no two chunks have the same text, and the script checks it: it reads
every chunk back from the run's chunk store and counts the texts seen before (by a 128-bit
digest). 1,000 questions are drawn from the benchmark's, each moved to a random copy of its
corpus; their excerpts are read from the copy.

The corpus is written in Chroma's layout to a temporary folder (or ``--workdir``), then two
commands run, each in a child process:

    chunkmark run --dataset CORPUS --chunker 'fixed_tokens(size=256)'
        --embedder 'fake(dimension=64, max_words=32)' --k 1,5,10
        --out RUN --cache-dir CACHE --no-report
    chunkmark report RUN --out RUN

the run with its embedding cache and chunk store in CACHE, the report (``--no-report`` here
leaves it out) as its own command so that its time and memory are its own. The embedder is
``fake``: words hashed into 64 dimensions in Python, reading each chunk's first 32 words as a
model reads its window; a neural model on two CPU cores would take days over 1 GB, and the
phases around the model are what this measures.

It prints the machine's CPU, the corpus, each command's seconds and peak resident memory (its
process tree's, from ``/proc`` every 0.2 s), the run's phase seconds from its manifest (the
run's totals and the cell's own phases) and each phase's peak resident memory (the run's
process samples its own every 0.1 s and names the phase its timer is in: the child runs
chunkmark's command line through this script, which only adds that sampler), what the report
did (written and its size, or why not), the number of chunks and of duplicate chunk texts, mean recall and precision at each k
(near zero by design: every answer has hundreds of perturbed copies, and only the question's
own copy counts), the cache folder's size, and the peak over both commands (sampled, and the
largest single process's ``ru_maxrss``).

    nice -n 10 .venv/bin/python benchmarks/scale.py [--size-mb 1024]
        [--data ../shared/datasets/chroma_general] [--workdir DIR] [--questions 1000]
        [--dimension 64] [--max-words 32] [--seed 0] [--no-report]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PERTURB_RATE = 0.10
TAG_EVERY = 128  # characters between tag starts
TAG_MARK = "\u00a4"  # ¤, written only as a tag's first character
TAG_MARK_STANDIN = "\u00a3"  # £ replaces the base text's own ¤ (same UTF-8 size)
DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
CHUNKER = "fixed_tokens(size=256)"
DEPTHS = (1, 5, 10)
GB = 1024**3


def perturb(text: str, rng: np.random.Generator) -> str:
    """``text`` with a share of its ASCII letters and digits replaced by other letters of the
    same case or other digits (same length in characters and in UTF-8 bytes)."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).copy()
    for first, count in ((ord("a"), 26), (ord("A"), 26), (ord("0"), 10)):
        found = np.flatnonzero((codes >= first) & (codes < first + count))
        chosen = found[rng.random(len(found)) < PERTURB_RATE]
        shift = rng.integers(1, count, size=len(chosen), dtype=np.uint32)
        codes[chosen] = (codes[chosen] - first + shift) % count + first
    return codes.tobytes().decode("utf-32-le")


def tag_width(copies: int, longest: int) -> int:
    """Base-62 digits that number every (copy, tag position) of the corpus."""
    return max(1, math.ceil(math.log(copies * (longest // TAG_EVERY + 1) + 1, len(DIGITS))))


def tag(text: str, copy: int, longest: int, width: int) -> str:
    """``text`` with a tag over the characters at every ``TAG_EVERY``-th position: ``¤`` and
    ``width`` base-62 digits of ``copy * slots + position // TAG_EVERY`` (one number per copy
    and place, so two tags are equal only at the same place of the same copy). Tags that
    would run past the end are left out. Same length in characters."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).copy()
    codes[codes == ord(TAG_MARK)] = ord(TAG_MARK_STANDIN)
    starts = np.arange(0, max(0, len(codes) - width), TAG_EVERY, dtype=np.int64)
    values = copy * (longest // TAG_EVERY + 1) + starts // TAG_EVERY
    alphabet = np.frombuffer(DIGITS.encode("utf-32-le"), dtype=np.uint32)
    codes[starts] = ord(TAG_MARK)
    for place in range(width, 0, -1):
        values, digit = np.divmod(values, len(DIGITS))
        codes[starts + place] = alphabet[digit]
    return codes.tobytes().decode("utf-32-le")


def ending_words(n: int) -> list[str]:
    """``n`` distinct words (a space and ASCII letters) that cl100k encodes as one token each,
    also after a line break: the last token of each copy, so its last chunk is its own."""
    from chunkmark.tokenizers import get_encoding

    enc = get_encoding("cl100k_base")
    words = []
    for token in range(enc.n_vocab):
        try:
            raw = enc.decode_single_token_bytes(token)
        except KeyError:
            continue
        if len(raw) >= 5 and raw[:1] == b" " and raw[1:].isalpha() and raw.isascii():
            word = raw.decode()
            if enc.encode_ordinary("\n" + word)[-1] == token:
                words.append(word)
    if len(words) < n:
        raise SystemExit(f"cl100k has {len(words)} one-token words; {n} copies need one each")
    return sorted(words)[:n]


@dataclass
class Plan:
    """Which copies of which base documents make the corpus, and where each question goes."""

    copies: list[tuple[int, int]]  # (round, base document index), in writing order
    questions: list[tuple[int, int]] = field(default_factory=list)  # (base question, copy)


def plan_corpus(base: Any, size_bytes: int, n_questions: int, seed: int) -> Plan:
    sizes = [len(d.text.encode("utf-8")) for d in base.documents]
    copies: list[tuple[int, int]] = []
    total = 0
    for r in range(max(1, math.ceil(size_bytes / sum(sizes))) + 1):
        for i, size in enumerate(sizes):
            if total >= size_bytes and copies:
                break
            copies.append((r, i))
            total += size
    plan = Plan(copies)
    rng = np.random.default_rng(seed)
    doc_index = {d.id: i for i, d in enumerate(base.documents)}
    copies_of: dict[int, list[int]] = {}
    for c, (_, i) in enumerate(copies):
        copies_of.setdefault(i, []).append(c)
    usable = [
        q for q, question in enumerate(base.questions) if doc_index[question.doc_id] in copies_of
    ]
    for q in rng.choice(usable, size=n_questions, replace=n_questions > len(usable)).tolist():
        options = copies_of[doc_index[base.questions[q].doc_id]]
        plan.questions.append((q, options[int(rng.integers(len(options)))]))
    return plan


def write_corpus(base: Any, plan: Plan, folder: Path, seed: int) -> int:
    """Write the tagged copies and the questions in Chroma's layout; the corpus's UTF-8 bytes."""
    corpora = folder / "corpora"
    corpora.mkdir(parents=True, exist_ok=True)
    asked: dict[int, list[int]] = {}
    for n, (_, copy) in enumerate(plan.questions):
        asked.setdefault(copy, []).append(n)
    rows: list[list[str] | None] = [None] * len(plan.questions)
    longest = max(len(d.text) for d in base.documents)
    width = tag_width(len(plan.copies), longest)
    words = ending_words(len(plan.copies))
    written = 0
    for copy, (r, i) in enumerate(plan.copies):
        doc = base.documents[i]
        name = f"{doc.id}-{r:05d}"
        text = perturb(doc.text, np.random.default_rng([seed, r, i]))
        text = tag(text, copy, longest, width) + "\n" + words[copy]
        data = text.encode("utf-8")
        (corpora / f"{name}.md").write_bytes(data)
        written += len(data)
        for n in asked.get(copy, []):
            question = base.questions[plan.questions[n][0]]
            refs = [
                {"content": text[s.start : s.end], "start_index": s.start, "end_index": s.end}
                for s in question.excerpts
            ]
            rows[n] = [question.text, json.dumps(refs), name]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["question", "references", "corpus_id"])
    writer.writerows(row for row in rows if row is not None)
    (folder / "questions_df.csv").write_text(buffer.getvalue(), encoding="utf-8")
    return written


class TreeMemory:
    """Peak resident memory of a process and its descendants (summed), sampled from /proc."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        self.pid = pid
        self.every = every
        self.peak = 0
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def tree_rss(self) -> int:
        parents: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                parents[int(entry)] = int(fields[1])
        tree, grew = {self.pid}, True
        while grew:
            found = {p for p, parent in parents.items() if parent in tree} - tree
            tree |= found
            grew = bool(found)
        total = 0
        for pid in tree:
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * self._page
            except OSError:
                continue
        return total

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, self.tree_rss())

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_child(command: list[str]) -> dict[str, Any]:
    """A child process: its exit status, seconds, output and the peak memory of its tree."""
    began = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with TreeMemory(child.pid) as memory:
        output, _ = child.communicate()
    return {
        "status": child.returncode,
        "seconds": time.perf_counter() - began,
        "tree_peak": memory.peak,
        "output": output,
    }


def chunkmark(*args: str) -> list[str]:
    return [sys.executable, "-m", "chunkmark", *args]


PHASE_CHILD = "--phase-memory-to"


def phase_child(path: Path, args: list[str]) -> None:
    """Run chunkmark's command line with ``args`` in this process and write the peak resident
    memory of each timed phase (the innermost ``PhaseTimer`` phase running when sampled,
    ``-`` outside every phase) to ``path`` as JSON, in the order the phases first ran."""
    import runpy
    from contextlib import contextmanager

    from chunkmark import timing

    page = os.sysconf("SC_PAGE_SIZE")
    running: list[str] = []
    peaks: dict[str, int] = {}

    def sample() -> None:
        with open("/proc/self/statm") as f:
            resident = int(f.read().split()[1]) * page
        phase = running[-1] if running else "-"
        peaks[phase] = max(peaks.get(phase, 0), resident)

    def loop() -> None:
        while True:
            sample()
            time.sleep(0.1)

    timed = timing.PhaseTimer.__call__

    @contextmanager
    def observed(self: timing.PhaseTimer, phase: str) -> Any:
        running.append(phase)
        sample()
        try:
            with timed(self, phase):
                yield
        finally:
            sample()
            running.pop()

    timing.PhaseTimer.__call__ = observed  # type: ignore[method-assign]
    threading.Thread(target=loop, daemon=True).start()
    sys.argv = ["chunkmark", *args]
    try:
        runpy.run_module("chunkmark", run_name="__main__")  # python -m chunkmark
    finally:
        sample()
        path.write_text(json.dumps(peaks))


def run_command(corpus: Path, out: Path, cache: Path, embedder: str, memory: Path) -> list[str]:
    """The run, without its report (that is a second command, measured on its own), with
    each phase's peak memory written to ``memory``."""
    args = [
        "run",
        "--dataset",
        str(corpus),
        "--chunker",
        CHUNKER,
        "--embedder",
        embedder,
        "--k",
        ",".join(str(k) for k in DEPTHS),
        "--out",
        str(out),
        "--cache-dir",
        str(cache),
        "--no-report",
    ]
    return [sys.executable, str(Path(__file__).resolve()), PHASE_CHILD, str(memory), *args]


def duplicate_texts(corpus: Path, cache: Path) -> tuple[int, int]:
    """(chunks, chunks whose text equals an earlier chunk's), from the run's chunk store."""
    import pyarrow.parquet as pq

    (stored,) = sorted((cache / "chunks").glob("*.parquet"))
    table = pq.read_table(stored, columns=["doc_id", "start", "end"]).to_pydict()
    order = np.argsort(np.asarray(table["doc_id"], dtype=object), kind="stable")
    seen: set[bytes] = set()
    current, text = None, ""
    for i in order.tolist():
        doc = table["doc_id"][i]
        if doc != current:
            current = doc
            text = (corpus / "corpora" / f"{doc}.md").read_text(encoding="utf-8")
        piece = text[table["start"][i] : table["end"][i]]
        seen.add(hashlib.blake2b(piece.encode("utf-8", "surrogatepass"), digest_size=16).digest())
    return len(order), len(order) - len(seen)


def mean_scores(out: Path) -> dict[str, tuple[float, float]]:
    """Mean recall and precision per retrieval setting (default scoring), from results."""
    import pyarrow.parquet as pq

    cols = pq.read_table(out / "results.parquet", columns=["retrieval", "recall", "precision"])
    data = cols.to_pydict()
    settings = np.asarray(data["retrieval"])
    scores = {}
    for spec in dict.fromkeys(data["retrieval"]):
        rows = settings == spec
        recall = float(np.asarray(data["recall"], dtype=float)[rows].mean())
        precision = float(np.asarray(data["precision"], dtype=float)[rows].mean())
        scores[spec] = (recall, precision)
    return scores


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [PHASE_CHILD]:
        phase_child(Path(argv[1]), argv[2:])
        return
    default_data = Path(os.environ.get("CHUNKMARK_SHARED_DIR", ROOT.parent / "shared"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=1024.0)
    parser.add_argument("--data", type=Path, default=default_data / "datasets/chroma_general")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--dimension", type=int, default=64)
    parser.add_argument("--max-words", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args(argv)

    from chunkmark.datasets import load_dataset

    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="chunkmark-scale-") as tmp:
        folder = (args.workdir or Path(tmp)) / "scale"
        if folder.exists() and any(folder.iterdir()):
            sys.exit(f"{folder} is not empty: pass another --workdir")
        corpus, out, cache = folder / "corpus", folder / "run", folder / "cache"
        began = time.perf_counter()
        base = load_dataset(args.data)
        plan = plan_corpus(base, int(args.size_mb * 2**20), args.questions, args.seed)
        written = write_corpus(base, plan, corpus, args.seed)
        del base
        generate = time.perf_counter() - began
        embedder = f"fake(dimension={args.dimension}, max_words={args.max_words})"
        print(f"scale: chunkmark run, {CHUNKER} x {embedder}, k = {DEPTHS}")
        print(
            f"corpus: {len(plan.copies)} documents, {written / 2**20:.1f} MB, "
            f"{len(plan.questions)} questions (generated in {generate:.1f} s)"
        )
        memory = folder / "phase_memory.json"
        run = run_child(run_command(corpus, out, cache, embedder, memory))
        if run["status"] != 0:
            print(run["output"])
            sys.exit(f"chunkmark run exited with status {run['status']}")
        manifest = json.loads((out / "manifest.json").read_text())
        (cell,) = manifest["cells"]
        print(f"chunkmark run: {run['seconds']:.1f} s, peak RSS {run['tree_peak'] / GB:.2f} GB")
        for phase, seconds in manifest["timings"].items():
            print(f"  run phase {phase}: {seconds:.1f} s")
        for phase, seconds in cell.get("timings", {}).items():
            print(f"  cell phase {phase}: {seconds:.1f} s")
        for phase, resident in json.loads(memory.read_text()).items():
            print(f"  peak RSS in {phase}: {resident / GB:.2f} GB")
        peak = run["tree_peak"]
        if not args.no_report:
            report = run_child(chunkmark("report", str(out), "--out", str(out)))
            page = out / "report.html"
            peak = max(peak, report["tree_peak"])
            if report["status"] == 0 and page.is_file():
                what = f"written, {page.stat().st_size / 1e6:.1f} MB"
            else:
                last = report["output"].strip().splitlines()[-3:]
                what = f"not written (exit status {report['status']}: {' '.join(last)})"
            print(
                f"chunkmark report: {report['seconds']:.1f} s, "
                f"peak RSS {report['tree_peak'] / GB:.2f} GB, {what}"
            )
        chunks, duplicates = duplicate_texts(corpus, cache)
        print(f"chunks: {chunks:,} ({duplicates} duplicate texts)")
        for spec, (recall, precision) in mean_scores(out).items():
            print(f"{spec}: recall {recall:.3f}, precision {precision:.4f}")
        cache_bytes = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
        print(f"cache folder: {cache_bytes / GB:.2f} GB on disk")
        largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        print(
            f"peak RSS: {peak / GB:.2f} GB (a command's process tree, sampled), "
            f"{largest / GB:.2f} GB (largest process, ru_maxrss)"
        )


if __name__ == "__main__":
    main()
