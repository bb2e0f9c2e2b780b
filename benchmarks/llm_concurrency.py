"""The LLM features one request at a time and with concurrent requests, side by side in one run,
against a local OpenAI-compatible server with a fixed latency.

    .venv/bin/python benchmarks/llm_concurrency.py [--latency 0.2] [--workers 8] \\
        [--features generate,contextual,propositions,relations,answers] [--out DIR] [--json FILE]

The script starts a server on 127.0.0.1 (a free port) in a child process: ``POST
/v1/chat/completions`` waits ``--latency`` seconds (plus up to ``--jitter`` more, drawn at
random per request, so that answers finish in another order than they were asked), then answers
with text derived only from the prompt, the way a model at temperature 0 would: a question and
its exact passage for question generation, a one-sentence context, the sentences of a chunk as
propositions, entity and relationship records, the answer to a question. It serves requests
concurrently and counts them and the most it had in flight at once (``GET /stats``).

The data is made up and written to ``OUT/data``: ``--documents`` documents of ``--facts``
numbered sentences each (``Fact 3-7: the mill near the hill measures 194 metres.``), one question
per sentence with its reference answer (``194 metres``), and gold entities and relations, so the
one folder is a corpus, a dataset with reference answers and a relation set. Each feature runs
twice, with an empty answer cache each time: with ``concurrency=1`` in the LLM spec, then with
``concurrency=WORKERS``:

- ``generate``: ``synth generate`` of ``--questions`` questions (the slots of one document in
  order, documents concurrently);
- ``contextual``: a grid of ``contextual(chunker='recursive(size=100, overlap=0)', method='llm')``
  with the fake embedder;
- ``propositions``: a grid of ``propositions(chunker='recursive(size=100, overlap=0)')``;
- ``relations``: ``relations run`` with ``recursive(size=100, overlap=0)`` and the LLM extractor;
- ``answers``: a grid of two chunkers with ``answers:`` (``--answer-questions`` questions,
  each answered from each cell and from the whole document).

For each it prints the requests the server received, wall and CPU seconds (user + system, of
this process; the server runs in its own) of each run, the ratio of the wall times, the most
requests the server had in flight, and whether every file the two runs wrote is byte-identical
(compared by sha256; a run's ``manifest.json`` and its ``cells/*.parquet`` are compared without
their clock readings, when they were written and how long each step took, and without the
run's own output and cache folders, which differ by construction). Before anything is timed,
each feature runs once on two tiny documents, so that neither timed run pays for what a
process does once (imports, loading the token encoding, the SDK's first request).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FEATURES = ("generate", "contextual", "propositions", "relations", "answers")
NOUNS = ("bridge", "tower", "market", "school", "harbour", "library", "mill", "station")
PLACES = ("the river", "the old road", "the north gate", "the hill", "the square")
FACT = re.compile(r"Fact (\d+)-(\d+): the (\w+) near ([a-z ]+?) measures (\d+) metres\.")
CHUNKER = "recursive(size=100, overlap=0)"
# Clock readings, and where a run wrote its files and cache: they differ between any two runs.
VOLATILE = frozenset(
    {"created", "timings", "seconds", "wall", "model_seconds", "model_seconds_attributed"}
    | {"out", "cache_dir"}
)


# --- the made-up data ---------------------------------------------------------------------------


def fact(doc: int, i: int) -> tuple[str, str, str, int]:
    """(sentence, noun, place, metres) of fact ``i`` of document ``doc``."""
    noun = NOUNS[(doc * 7 + i) % len(NOUNS)]
    place = PLACES[(doc * 3 + i) % len(PLACES)]
    metres = 100 + 13 * i + doc
    return f"Fact {doc}-{i}: the {noun} near {place} measures {metres} metres.", noun, place, metres


def write_data(folder: Path, documents: int, facts: int) -> Path:
    """The documents, questions with reference answers, entities and relations (module docs)."""
    from chunkmark.datasets.jsonl import write_jsonl
    from chunkmark.datasets.model import Dataset, Document, Question
    from chunkmark.relations.model import Entity, Relation, write_relation_files
    from chunkmark.spans import Span

    if facts > 40:
        raise SystemExit("--facts is at most 40 (a document repeats no noun-place pair)")
    docs, questions, entities, relations = [], [], [], []
    for d in range(documents):
        doc_id = f"doc{d:02d}"
        lines, spans, pos = [], [], 0
        rows = [fact(d, i) for i in range(facts)]
        for i, (sentence, *_rest) in enumerate(rows):
            sep = "\n" if i and i % 4 == 0 else (" " if i else "")
            pos += len(sep)
            lines.append(sep + sentence)
            spans.append(Span(pos, pos + len(sentence)))
            pos += len(sentence)
        text = "".join(lines) + "\n"
        docs.append(Document(doc_id, text))
        ids: dict[str, str] = {}
        for name, kind in [(n, "MISC") for n in NOUNS] + [(p, "LOC") for p in PLACES]:
            mentions = tuple(
                Span(m.start(), m.end()) for m in re.finditer(rf"\b{re.escape(name)}\b", text)
            )
            if mentions:
                ids[name] = f"{doc_id}-e{len(ids)}"
                entities.append(Entity(ids[name], doc_id, kind, (name,), mentions))
        for i, ((_, noun, place, metres), span) in enumerate(zip(rows, spans, strict=True)):
            rid = f"{doc_id}-r{i:02d}"
            relations.append(
                Relation(
                    rid, doc_id, ids[noun], ids[place], "P276", "near", (span,), "evidence", True
                )
            )
            questions.append(
                Question(
                    rid,
                    f"How long is the {noun} near {place} (fact {d}-{i})?",
                    doc_id,
                    (span,),
                    {"answers": [f"{metres} metres"]},
                )
            )
    write_jsonl(Dataset("facts", tuple(docs), tuple(questions)), folder)
    write_relation_files(folder, entities, relations)
    return folder


# --- the model: answers derived from the prompt only -------------------------------------------


def respond(system: str, user: str) -> str:
    """What the model answers (module docs)."""
    if "Break this text into propositions" in user:
        chunk = _between(user, "<text>\n", "\n</text>")
        return json.dumps({"propositions": [m.group(0) for m in FACT.finditer(chunk)]})
    if "situate this passage" in user:
        labels = [f"{m.group(1)}-{m.group(2)}" for m in FACT.finditer(user)]
        total = len(FACT.findall(_between(system, "<document>\n", "\n</document>")))
        return f"Facts {', '.join(labels) or 'none'} of a list of {total} measurements."
    if "Write the entity and relationship records" in user:
        records = []
        for m in FACT.finditer(_between(user, "<passage>\n", "\n</passage>")):
            noun, place = m.group(3), m.group(4)
            records += [
                f'("entity"<|>{noun}<|>MISC<|>A {noun}.)',
                f'("entity"<|>{place}<|>LOC<|>A place.)',
                f'("relationship"<|>{noun}<|>{place}<|>near<|>The {noun} is near {place}.<|>8)',
            ]
        return "##\n".join([*records, "<|COMPLETE|>"])
    if system.startswith("You answer a question"):
        wanted = re.search(r"\(fact (\d+-\d+)\)", user)
        if wanted:
            found = re.search(rf"Fact {wanted.group(1)}: [^.]* measures (\d+) metres", user)
            if found:
                return f"{found.group(1)} metres"
        return "unanswerable"
    if "<text>\n" in user:  # question generation
        window = _between(user, "<text>\n", "\n</text>")
        asked = user.split("were already asked", 1)[1] if "were already asked" in user else ""
        used = set(re.findall(r"fact (\d+-\d+)", asked))
        for m in FACT.finditer(window):
            label = f"{m.group(1)}-{m.group(2)}"
            if label not in used:
                question = f"How many metres does the {m.group(3)} of fact {label} measure?"
                return json.dumps({"question": question, "passages": [m.group(0)]})
        return json.dumps({"question": "What is left?", "passages": []})
    return "no answer"


def _between(text: str, start: str, end: str) -> str:
    if start not in text:
        return ""
    return text.split(start, 1)[1].split(end, 1)[0]


# --- the server ---------------------------------------------------------------------------------


@dataclass
class ServerState:
    latency: float
    jitter: float
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0


def handler(state: ServerState, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep connections open, as an API does
        disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms stall

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            with lock:
                body = {"requests": state.requests, "max_in_flight": state.max_in_flight}
            self._send(200, body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            payload = json.loads(self.rfile.read(length) or b"{}")
            if self.path == "/reset":
                with lock:
                    state.requests = state.max_in_flight = 0
                self._send(200, {})
                return
            with lock:
                state.requests += 1
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            try:
                time.sleep(state.latency + state.jitter * random.random())
                messages = payload.get("messages", [])
                system = "".join(str(m["content"]) for m in messages if m["role"] == "system")
                user = "".join(str(m["content"]) for m in messages if m["role"] == "user")
                text = respond(system, user)
            finally:
                with lock:
                    state.in_flight -= 1
            prompt = len(system.split()) + len(user.split())
            self._send(
                200,
                {
                    "id": "chatcmpl-bench",
                    "object": "chat.completion",
                    "created": 0,
                    "model": payload.get("model", "bench"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": prompt,
                        "completion_tokens": len(text.split()),
                        "total_tokens": prompt + len(text.split()),
                    },
                },
            )

    return Handler


def serve(latency: float, jitter: float, port: int = 0) -> ThreadingHTTPServer:
    """The server, started in a thread of this process (the benchmark runs it in a child)."""
    state = ServerState(latency, jitter)
    httpd = ThreadingHTTPServer(("127.0.0.1", port), handler(state, threading.Lock()))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True).start()
    return httpd


@contextmanager
def server_process(latency: float, jitter: float) -> Iterator[str]:
    """A child process running the server; yields its base URL (``http://127.0.0.1:PORT``)."""
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--latency", str(latency), "--jitter", str(jitter)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        child.terminate()
        child.wait(timeout=30)


def server_stats(url: str, reset: bool = False) -> dict[str, int]:
    if reset:
        request = urllib.request.Request(url + "/reset", data=b"{}", method="POST")
        urllib.request.urlopen(request, timeout=30).read()
        return {}
    with urllib.request.urlopen(url + "/stats", timeout=30) as response:
        found: dict[str, int] = json.loads(response.read())
    return found


# --- the features -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    data: Path
    documents: int
    questions: int
    answer_questions: int


def llm_spec(url: str, workers: int) -> str:
    return f"openai(model='bench', base_url='{url}/v1', timeout=120.0, concurrency={workers})"


def grid(setup: Setup, out: Path, cache: Path, chunkers: list[str], **extra: Any) -> None:
    from chunkmark.answers.analysis import answer_analyses
    from chunkmark.experiments.config import make_config
    from chunkmark.experiments.runner import evaluate

    config = make_config(
        {
            "datasets": [str(setup.data)],
            "chunkers": chunkers,
            "embedders": ["fake"],
            "k": [3],
            "out": out,
            "cache_dir": cache,
            "report": False,
            **extra,
        }
    )
    evaluate(config, analyses=answer_analyses(config))


def run_generate(setup: Setup, spec: str, out: Path, cache: Path) -> None:
    from chunkmark.llm import build_llm
    from chunkmark.synth.generate import generate

    llm = build_llm(spec, cache_dir=cache, seed=0)
    report = generate(setup.data, llm, out, questions=setup.questions, window_chars=4000)
    if report.accepted != setup.questions:
        raise SystemExit(f"generate: {report.accepted} of {setup.questions} questions accepted")


def run_contextual(setup: Setup, spec: str, out: Path, cache: Path) -> None:
    chunker = f"contextual(chunker={CHUNKER!r}, method='llm', llm={spec!r})"
    grid(setup, out, cache, [chunker])


def run_propositions(setup: Setup, spec: str, out: Path, cache: Path) -> None:
    grid(setup, out, cache, [f"propositions(llm={spec!r}, chunker={CHUNKER!r})"])


def run_relations(setup: Setup, spec: str, out: Path, cache: Path) -> None:
    from chunkmark.experiments.config import make_config
    from chunkmark.relations.runner import ExtractorSetup, run_relations

    config = make_config(
        {
            "chunkers": [CHUNKER],
            "embedders": ["fake"],
            "k": [3],
            "out": out,
            "cache_dir": cache,
            "report": False,
        }
    )
    run_relations(setup.data, config, ExtractorSetup(spec=f"llm(llm={spec!r})", cache_dir=cache))


def run_answers(setup: Setup, spec: str, out: Path, cache: Path) -> None:
    answers = {"llm": spec, "questions": setup.answer_questions, "baseline": True}
    grid(setup, out, cache, [CHUNKER, "fixed_tokens(size=150, overlap=0)"], answers=answers)


RUNNERS: dict[str, Callable[[Setup, str, Path, Path], None]] = {
    "generate": run_generate,
    "contextual": run_contextual,
    "propositions": run_propositions,
    "relations": run_relations,
    "answers": run_answers,
}


# --- measuring and comparing --------------------------------------------------------------------


@dataclass
class Timed:
    requests: int
    max_in_flight: int
    wall: float
    cpu: float
    hashes: dict[str, str]


def warm_up(url: str, features: list[str], folder: Path) -> None:
    """Run each feature once on two tiny documents before anything is timed, so that neither
    timed run pays for what is done once per process (imports, the token encoding, the SDK's
    first request)."""
    tiny = Setup(write_data(folder / "data", 2, 4), 2, 2, 2)
    for feature in features:
        timed(feature, tiny, url, 1, folder / feature)


def cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def timed(feature: str, setup: Setup, url: str, workers: int, folder: Path) -> Timed:
    if folder.exists():
        shutil.rmtree(folder)
    out, cache = folder / "out", folder / "cache"
    cache.mkdir(parents=True)
    server_stats(url, reset=True)
    cpu, start = cpu_seconds(), time.perf_counter()
    RUNNERS[feature](setup, llm_spec(url, workers), out, cache)
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    found = server_stats(url)
    return Timed(found["requests"], found["max_in_flight"], wall, cpu, file_hashes(out))


def file_hashes(out: Path) -> dict[str, str]:
    """sha256 of every file under ``out``: of its bytes, except for the files that hold clock
    readings, a grid's ``manifest.json`` and its ``cells/*.parquet`` (rows, plus the cell's
    facts as metadata), which are hashed without those readings and the run's folders."""
    import pyarrow.parquet as pq

    hashes = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        name = str(path.relative_to(out))
        data = path.read_bytes()
        if name == "manifest.json" and b'"timings"' in data:
            data = b"json:" + _canonical(json.loads(data))
        elif name.startswith("cells/") and path.suffix == ".parquet":
            table = pq.read_table(path)
            meta = {k.decode(): json.loads(v) for k, v in (table.schema.metadata or {}).items()}
            rows = table.replace_schema_metadata(None).to_pydict()
            data = b"parquet:" + _canonical({"rows": rows, "metadata": meta})
        hashes[name] = hashlib.sha256(data).hexdigest()
    return hashes


def _canonical(value: Any) -> bytes:
    return json.dumps(_without(value), sort_keys=True, default=str).encode()


def _without(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_without(v) for v in value]
    return value


def differing(one: dict[str, str], other: dict[str, str]) -> list[str]:
    return sorted(k for k in set(one) | set(other) if one.get(k) != other.get(k))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per request")
    parser.add_argument("--jitter", type=float, default=0.0, help="up to this many more, random")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--features", default=",".join(FEATURES))
    parser.add_argument("--documents", type=int, default=16)
    parser.add_argument("--facts", type=int, default=24, help="sentences per document (<= 40)")
    parser.add_argument("--questions", type=int, default=48, help="questions to generate")
    parser.add_argument("--answer-questions", type=int, default=32)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "llm_concurrency")
    parser.add_argument("--json", type=Path, default=None, help="write the numbers here too")
    parser.add_argument(
        "--no-warm-up", action="store_true", help="skip the untimed first run (for tests)"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        httpd = serve(args.latency, args.jitter)
        print(httpd.server_address[1], flush=True)
        threading.Event().wait()
        return 0
    features = [f.strip() for f in args.features.split(",") if f.strip()]
    unknown = sorted(set(features) - set(FEATURES))
    if unknown:
        parser.error(f"unknown feature {unknown[0]!r}; use {', '.join(FEATURES)}")
    data = args.out / "data"
    if data.exists():
        shutil.rmtree(data)
    setup = Setup(
        write_data(data, args.documents, args.facts),
        args.documents,
        args.questions,
        args.answer_questions,
    )
    print(
        f"latency {args.latency:g} s (+ up to {args.jitter:g} s), {args.workers} workers, "
        f"{args.documents} documents x {args.facts} facts"
    )
    header = (
        f"{'feature':<13}{'requests':>9}{'wall 1':>9}{'cpu 1':>8}{'wall N':>9}{'cpu N':>8}"
        f"{'calls*lat/N':>12}{'ratio':>8}{'in flight':>11}  identical"
    )
    print(header)
    numbers: dict[str, Any] = {
        "latency": args.latency,
        "jitter": args.jitter,
        "workers": args.workers,
        "features": {},
    }
    ok = True
    with server_process(args.latency, args.jitter) as url:
        if not args.no_warm_up:
            warm_up(url, features, args.out / "warm-up")
        for feature in features:
            one = timed(feature, setup, url, 1, args.out / feature / "one")
            many = timed(feature, setup, url, args.workers, args.out / feature / "many")
            diff = differing(one.hashes, many.hashes)
            same = not diff and one.requests == many.requests
            ok = ok and same and many.max_in_flight <= args.workers and one.max_in_flight == 1
            floor = one.requests * args.latency / args.workers
            print(
                f"{feature:<13}{one.requests:>9}{one.wall:>9.2f}{one.cpu:>8.2f}"
                f"{many.wall:>9.2f}{many.cpu:>8.2f}{floor:>12.2f}{one.wall / many.wall:>7.1f}x"
                f"{f'{one.max_in_flight} / {many.max_in_flight}':>11}  "
                + (f"yes ({len(one.hashes)} files)" if same else f"NO: {', '.join(diff[:5])}"),
                flush=True,
            )
            numbers["features"][feature] = {
                "requests": [one.requests, many.requests],
                "wall_seconds": [round(one.wall, 3), round(many.wall, 3)],
                "cpu_seconds": [round(one.cpu, 3), round(many.cpu, 3)],
                "ratio": round(one.wall / many.wall, 2),
                "max_in_flight": [one.max_in_flight, many.max_in_flight],
                "files": len(one.hashes),
                "identical": same,
                "differing": diff,
            }
    print(
        "wall/cpu 1: one request at a time; wall/cpu N: N workers (seconds; cpu is this "
        "process's user + system); calls*lat/N: requests x latency / N; ratio: wall 1 / wall N; "
        "in flight: the most requests the server held at once, 1 / N"
    )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(numbers, indent=2) + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main())
