"""``plan_grid`` and ``check_budget``: tokens, cache holdings and dollars, computed independently
here and compared; no request, no model load, nothing written."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tiktoken

from chunkmark.chunkers import CHUNKERS, ChunkerContext, chunk_document
from chunkmark.costs.budget import CostLimitError
from chunkmark.datasets import load_dataset
from chunkmark.datasets.model import Dataset
from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache
from chunkmark.embedders.fake import FakeEmbedder
from chunkmark.errors import ConfigError
from chunkmark.experiments.chunk_store import ChunkStore, chunk_key
from chunkmark.experiments.config import ExperimentConfig, load_config, make_config
from chunkmark.experiments.plan import (
    EmbedderPlan,
    LLMChunkerPlan,
    Plan,
    check_budget,
    plan_grid,
)
from chunkmark.llm import LLMS
from chunkmark.llm.fake import FakeLLM

SMALL_PRICE = 0.02  # text-embedding-3-small in the shipped table, US dollars per million tokens
CHUNKERS_SHARING = ["fixed_tokens(size=100)", "fixed_tokens(size=100, overlap=50)"]


class CountingServer:
    """A local endpoint that counts every request it gets (and answers none usefully)."""

    def __init__(self) -> None:
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _count(self) -> None:
                server.requests += 1
                self.send_response(500)
                self.end_headers()

            do_GET = do_POST = _count

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    s = CountingServer()
    yield s
    s.close()


@pytest.fixture(scope="module")
def demo() -> Dataset:
    return load_dataset("demo")


def chunk_texts(dataset: Dataset, spec: str) -> list[str]:
    chunker, _ = CHUNKERS.build(spec, context=ChunkerContext())
    return [
        c.text(doc.text)
        for doc in dataset.documents
        for c in chunk_document(chunker, doc.id, doc.text)
    ]


def cl100k(texts: set[str]) -> int:
    enc = tiktoken.get_encoding("cl100k_base")
    return sum(len(enc.encode_ordinary(t)) for t in texts)


REMOTE_URL = "https://api.acme.example/v1"  # not this machine (a reserved name: never resolved)


def openai_spec(server_url: str, model: str = "text-embedding-3-small") -> str:
    return f"openai(model='{model}', base_url='{server_url}')"


def config(tmp_path: Path, embedders: list[str], **values: Any) -> ExperimentConfig:
    values.setdefault("chunkers", CHUNKERS_SHARING)
    values.setdefault("cache_dir", tmp_path / "cache")
    return make_config({"datasets": ["demo"], "embedders": embedders, **values})


def embedder_plan(plan: Plan, name: str) -> EmbedderPlan:
    (found,) = [e for e in plan.embedding if EMBEDDERS.resolve(e.spec).name == name]
    return found


def test_openai_tokens_and_dollars_come_without_a_request(
    tmp_path: Path, server: CountingServer, demo: Dataset
) -> None:
    plan = plan_grid(config(tmp_path, [openai_spec(server.url)]))
    texts = [set(chunk_texts(demo, spec)) for spec in CHUNKERS_SHARING]
    distinct = texts[0] | texts[1]
    questions = {q.text for q in demo.questions}
    assert len(distinct) < len(texts[0]) + len(texts[1])  # the chunkers do share texts
    tokens = cl100k(distinct) + cl100k(questions)

    e = embedder_plan(plan, "openai")
    assert server.requests == 0
    assert (e.document_texts, e.query_texts) == (len(distinct), len(questions))
    assert e.tokens_to_embed == e.document_tokens + e.query_tokens == tokens
    assert e.model == "text-embedding-3-small"
    assert e.usd == pytest.approx(tokens * SMALL_PRICE / 1e6)
    assert plan.total_usd == pytest.approx(tokens * SMALL_PRICE / 1e6)
    assert plan.n_cells == len(plan.cells) == 2
    assert {c.chunks for c in plan.cells} == {len(chunk_texts(demo, s)) for s in CHUNKERS_SHARING}
    assert not (tmp_path / "cache").exists()  # nothing written, not even an empty cache


def test_the_datasets_handed_in_are_planned_not_loaded_by_name(
    tmp_path: Path, demo: Dataset
) -> None:
    """The runner hands the datasets it loaded: the plan counts those (here two of the demo's
    documents under the demo's name), not the ones their names would load."""
    docs = demo.documents[:2]
    ids = {d.id for d in docs}
    part = Dataset("demo", docs, tuple(q for q in demo.questions if q.doc_id in ids))
    plan = plan_grid(config(tmp_path, ["fake()"]), datasets=[part])
    enc = tiktoken.get_encoding("cl100k_base")
    (found,) = plan.datasets
    assert (found.documents, found.questions) == (2, len(part.questions))
    assert 0 < len(part.questions) < len(demo.questions)
    assert found.document_tokens == sum(len(enc.encode_ordinary(d.text)) for d in docs)
    assert found.fingerprint == part.fingerprint != demo.fingerprint
    assert [c.chunks for c in plan.cells] == [len(chunk_texts(part, s)) for s in CHUNKERS_SHARING]


def test_cached_texts_are_reported_and_cost_nothing(
    tmp_path: Path, server: CountingServer, demo: Dataset
) -> None:
    cache_dir = tmp_path / "cache"
    first = chunk_texts(demo, CHUNKERS_SHARING[0])
    questions = [q.text for q in demo.questions]
    fake = CachedEmbedder(FakeEmbedder(), EmbeddingCache(cache_dir))
    fake.embed(first, kind="document")
    fake.embed(questions[:10], kind="query")
    openai_inner, _ = EMBEDDERS.build(openai_spec(server.url))
    some = sorted(set(first))[:20]
    EmbeddingCache(cache_dir).put_many(
        openai_inner.identity(), "document", some, np.ones((len(some), 4), np.float32)
    )
    stored = len(EmbeddingCache(cache_dir))

    plan = plan_grid(config(tmp_path, ["fake()", openai_spec(server.url)]))

    all_texts = set(first) | set(chunk_texts(demo, CHUNKERS_SHARING[1]))
    everything = cl100k(all_texts) + cl100k(set(questions))
    f = embedder_plan(plan, "fake")
    cached = set(first) | set(questions[:10])
    assert f.cached_texts == len(cached)
    assert f.cached_tokens == cl100k(set(first)) + cl100k(set(questions[:10]))
    assert f.tokens_to_embed == everything - f.cached_tokens
    o = embedder_plan(plan, "openai")
    assert o.cached_texts == len(some)
    assert o.tokens_to_embed == everything - cl100k(set(some))
    assert o.usd == pytest.approx((everything - cl100k(set(some))) * SMALL_PRICE / 1e6)
    assert server.requests == 0
    assert len(EmbeddingCache(cache_dir)) == stored  # read, never written
    assert not (cache_dir / "chunks").exists() and not (cache_dir / "llm.sqlite3").exists()


def test_no_cache_counts_every_call_and_reads_nothing(tmp_path: Path, demo: Dataset) -> None:
    plan = plan_grid(config(tmp_path, ["fake()"], no_cache=True))
    e = embedder_plan(plan, "fake")
    per_cell = sum(len(set(chunk_texts(demo, s))) for s in CHUNKERS_SHARING)
    assert e.document_texts == per_cell
    assert e.cached_texts is None and "no_cache" in e.cache_note


def write_experiment(path: Path, embedder: str, prices: str = "") -> Path:
    path.write_text(
        "datasets: [demo]\n"
        'chunkers: ["fixed_tokens(size=200)"]\n'
        f'embedders: ["{embedder}"]\n'
        f"cache_dir: {path.parent / 'cache'}\n" + prices,
        encoding="utf-8",
    )
    return path


def test_a_price_in_the_experiment_file_replaces_the_table(
    tmp_path: Path, server: CountingServer
) -> None:
    spec = openai_spec(server.url)
    shipped = plan_grid(load_config(write_experiment(tmp_path / "a.yaml", spec)))
    cheap = write_experiment(
        tmp_path / "b.yaml", spec, "prices:\n  embedding:\n    text-embedding-3-small: 1.5\n"
    )
    priced = plan_grid(load_config(cheap))
    tokens = embedder_plan(priced, "openai").tokens_to_embed
    assert tokens == embedder_plan(shipped, "openai").tokens_to_embed
    assert priced.total_usd == pytest.approx(tokens * 1.5 / 1e6)
    assert shipped.total_usd == pytest.approx(tokens * SMALL_PRICE / 1e6)
    assert embedder_plan(priced, "openai").price_source == "the experiment file's prices"


def test_a_model_without_a_price_is_unknown_and_the_budget_refuses(
    tmp_path: Path, server: CountingServer
) -> None:
    spec = openai_spec(REMOTE_URL, model="acme-embed-v2")  # an API: nothing is sent to it
    plan = plan_grid(load_config(write_experiment(tmp_path / "a.yaml", spec)))
    e = embedder_plan(plan, "openai")
    assert e.usd is None and e.usd_per_million is None and e.tokens_to_embed > 0
    assert plan.total_usd is None
    assert any("acme-embed-v2" in u for u in plan.unknown)
    with pytest.raises(CostLimitError) as caught:
        check_budget(plan, 100.0)
    message = str(caught.value)
    assert "\n" not in message
    assert "acme-embed-v2" in message and "prices:" in message and "embedding:" in message
    assert isinstance(caught.value, ConfigError)

    free = write_experiment(
        tmp_path / "b.yaml", spec, "prices:\n  embedding:\n    acme-embed-v2: 0\n"
    )
    priced = plan_grid(load_config(free))
    assert priced.total_usd == 0.0
    check_budget(priced, 0.0)

    # The same model served from this machine (a loopback base_url) is local: free.
    local = plan_grid(config(tmp_path, [openai_spec(server.url, model="acme-embed-v2")]))
    e = embedder_plan(local, "openai")
    assert (e.usd, e.usd_per_million, e.price_source) == (0.0, 0.0, "local: free")
    assert e.tokens_to_embed > 0 and local.total_usd == 0.0 and local.unknown == []
    check_budget(local, 0.0)
    assert server.requests == 0


def test_a_bad_prices_layout_says_how_to_write_it(tmp_path: Path) -> None:
    path = write_experiment(
        tmp_path / "a.yaml", "fake()", "prices:\n  embeddings:\n    text-embedding-3-small: 1\n"
    )
    with pytest.raises(
        ConfigError, match=r"prices.*embeddings.*Fix: Write it as 'prices: \{embedding"
    ):
        plan_grid(load_config(path))


def test_check_budget_refuses_above_the_limit_in_one_line(
    tmp_path: Path, server: CountingServer
) -> None:
    plan = plan_grid(config(tmp_path, [openai_spec(server.url)]))
    total = plan.total_usd
    assert total is not None and total > 0
    tokens = embedder_plan(plan, "openai").tokens_to_embed
    with pytest.raises(CostLimitError) as caught:
        check_budget(plan, total / 2)
    message = str(caught.value)
    assert "\n" not in message
    assert re.match(r"Estimated cost \$\S+ exceeds --max-cost \$\S+ \(", message)
    assert f"{tokens:,} tokens to embed with text-embedding-3-small" in message
    assert "Fix: Raise --max-cost" in message
    check_budget(plan, total * 2)
    check_budget(plan, total)
    check_budget(plan, None)


def test_no_model_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chunkmark.embedders.sentence_transformers import SentenceTransformerEmbedder

    def refuse(self: Any) -> Any:
        raise AssertionError("plan loaded a model")

    monkeypatch.setattr(SentenceTransformerEmbedder, "_load", refuse)
    hub = "sentence_transformers(model='acme/not-downloaded-model')"
    minilm = "sentence_transformers()"  # offline package or Hub cache: identity from files
    plan = plan_grid(config(tmp_path, [hub, minilm], chunkers=["fixed_tokens(size=200)"]))
    e = next(e for e in plan.embedding if "acme/not-downloaded-model" in e.spec)
    assert e.usd == 0.0 and e.price_source == "local: free"
    assert e.cached_texts is None and "never loads" in e.cache_note
    assert e.token_count.startswith("cl100k_base")
    assert plan.total_usd == 0.0


# --- semantic chunkers ------------------------------------------------------------------------


def test_what_a_semantic_chunker_embeds_is_what_it_really_embeds(
    tmp_path: Path, demo: Dataset
) -> None:
    spec = "kamradt_modified(avg_size=200, min_size=40)"
    cache_dir = tmp_path / "cache"
    real = CachedEmbedder(FakeEmbedder(), EmbeddingCache(cache_dir))
    chunker, _ = CHUNKERS.build(spec, context=ChunkerContext(embedder=real))
    for doc in demo.documents:
        chunker(doc.text)
    embedded = len(EmbeddingCache(cache_dir))

    plan = plan_grid(config(tmp_path, ["fake()"], chunkers=[spec]))
    e = embedder_plan(plan, "fake")
    assert e.document_texts == embedded > 0
    assert e.cached_texts == embedded  # every text it records was embedded by the real run
    assert e.estimated_tokens == plan.datasets[0].document_tokens
    assert e.estimated_for == [f"{CHUNKERS.short(spec)} on demo"]
    (cell,) = plan.cells
    assert (cell.chunks, cell.source) == (None, "unknown")


def test_stored_semantic_chunks_are_read_from_the_chunk_store(
    tmp_path: Path, demo: Dataset
) -> None:
    spec = str(CHUNKERS.resolve("cluster_semantic(max_size=200, min_size=50)"))
    cache_dir = tmp_path / "cache"
    identity = FakeEmbedder().identity()
    context = ChunkerContext(embedder=FakeEmbedder())
    chunker, _ = CHUNKERS.build(spec, context=context)
    chunks = [c for doc in demo.documents for c in chunk_document(chunker, doc.id, doc.text)]
    key = chunk_key(spec, demo.fingerprint, identity)
    ChunkStore(cache_dir).put(key, chunks, np.zeros(len(chunks), np.int64))

    plan = plan_grid(config(tmp_path, ["fake()"], chunkers=[spec]))
    (cell,) = plan.cells
    assert (cell.chunks, cell.source) == (len(chunks), "chunk store")
    e = embedder_plan(plan, "fake")
    texts = {c.text(demo.by_id[c.doc_id].text) for c in chunks}
    assert e.document_texts == len(texts) and e.estimated_tokens == 0


# --- LLM chunkers -----------------------------------------------------------------------------


def middle_cut(system: str, user: str) -> str:
    """A well-behaved model: cut in the middle of the window it is shown."""
    found = re.search(r"Pieces (\d+) to (\d+)", user)
    assert found is not None
    first, last = int(found.group(1)), int(found.group(2))
    return f"split_after: {(first + last) // 2}"


@pytest.fixture
def middle_llm() -> Iterator[str]:
    name = "plan_test_middle"

    @LLMS.register(name, needs=("cache_dir", "seed"))
    def factory(*, cache_dir: Path | None = None, seed: int = 0) -> FakeLLM:
        return FakeLLM(middle_cut, model="middle", cache_dir=cache_dir, seed=seed)

    yield f"{name}()"
    LLMS.unregister(name)


def run_llm_chunker(spec: str, dataset: Dataset, cache_dir: Path) -> int:
    """Run the chunker for real (answers cached under ``cache_dir``); the LLM calls it made."""
    chunker, _ = CHUNKERS.build(spec, context=ChunkerContext(cache_dir=cache_dir))
    for doc in dataset.documents:
        chunker(doc.text)
    return int(chunker.splitter.llm.stats().requests)


def llm_plan(plan: Plan) -> LLMChunkerPlan:
    (found,) = plan.llm_chunkers
    return found


def test_llm_calls_are_bounded_then_replayed_from_the_cache(
    tmp_path: Path, demo: Dataset, middle_llm: str
) -> None:
    spec = f'llm_semantic(llm="{middle_llm}", chunk_size=40, window_tokens=300)'
    values: dict[str, Any] = {"chunkers": [spec]}
    before = llm_plan(plan_grid(config(tmp_path, ["fake()"], **values)))
    made = run_llm_chunker(spec, demo, tmp_path / "cache")
    assert before.calls is not None and before.calls_max is not None
    assert before.calls < made <= before.calls_max  # the middle cut needs more than the fewest
    assert before.cached_calls == 0 and before.usd == 0.0  # the fake LLM is free

    after = llm_plan(plan_grid(config(tmp_path, ["fake()"], **values)))
    assert after.cached_calls == made
    assert (after.calls, after.calls_max, after.input_tokens) == (0, 0, 0)


def test_an_unanswerable_llm_is_asked_twice_per_window(tmp_path: Path, demo: Dataset) -> None:
    spec = "llm_semantic(llm='fake()', chunk_size=40, window_tokens=300)"
    values: dict[str, Any] = {"chunkers": [spec]}
    before = llm_plan(plan_grid(config(tmp_path, ["fake()"], **values)))
    with pytest.warns(UserWarning):
        made = run_llm_chunker(spec, demo, tmp_path / "cache")
    assert made == 2 * before.calls  # every window tiles, asked again after a useless answer
    after = llm_plan(plan_grid(config(tmp_path, ["fake()"], **values)))
    assert after.cached_calls == made and after.calls == 0


def test_llm_prices_come_from_the_table_or_the_experiment(tmp_path: Path) -> None:
    def plan_for(
        model: str, prices: dict[str, Any] | None = None, url: str = REMOTE_URL
    ) -> LLMChunkerPlan:
        spec = f"llm_semantic(llm=\"openai(model='{model}', base_url='{url}')\")"
        values: dict[str, Any] = {"chunkers": [spec], "prices": prices}
        return llm_plan(plan_grid(config(tmp_path, ["fake()"], **values)))

    mini = plan_for("gpt-4o-mini")
    assert mini.input_tokens and mini.output_tokens
    assert mini.usd == pytest.approx((mini.input_tokens * 0.15 + mini.output_tokens * 0.60) / 1e6)
    proxied = plan_for("gpt-4o-mini", url="http://127.0.0.1:9/v1")  # a local proxy: list price
    assert proxied.usd == mini.usd
    unknown = plan_for("acme-llm")
    assert unknown.usd is None and unknown.calls == mini.calls
    priced = plan_for("acme-llm", {"llm": {"acme-llm": {"input": 1.0, "output": 2.0}}})
    assert priced.usd == pytest.approx((mini.input_tokens * 1.0 + mini.output_tokens * 2.0) / 1e6)
    assert priced.usd_max is not None and priced.usd_max > priced.usd
    local = plan_for("acme-llm", url="http://localhost:11434/v1")  # served here: free
    assert (local.usd, local.usd_max, local.calls) == (0.0, 0.0, mini.calls)
    mine = plan_for(
        "acme-llm", {"llm": {"acme-llm": {"input": 1.0, "output": 2.0}}}, "http://[::1]:8000/v1"
    )
    assert mine.usd == priced.usd  # a price given wins over local: free


def test_documentation_without_an_llm_is_chunked(tmp_path: Path, demo: Dataset) -> None:
    spec = "documentation(max_length=800)"
    plan = plan_grid(config(tmp_path, ["fake()"], chunkers=[spec]))
    (cell,) = plan.cells
    assert (cell.chunks, cell.source) == (len(chunk_texts(demo, spec)), "chunked")
    assert plan.llm_chunkers == [] and plan.total_usd == 0.0


def test_plan_dict_is_json(tmp_path: Path) -> None:
    import json

    plan = plan_grid(config(tmp_path, ["fake()"]))
    data = json.loads(json.dumps(plan.to_dict()))
    assert data["n_cells"] == 2 and data["total_usd"] == 0.0
    assert data["retrieval"] and data["scoring"] == [
        {"excerpts": "position", "unit": "chars", "denominator": "sum"}
    ]


def test_dollars_are_written_in_cents_or_two_digits_below_a_cent() -> None:
    from chunkmark.costs.budget import usd

    assert [usd(v) for v in (0.0, 0.000001, 0.00049, 0.01, 1234.5)] == [
        "$0.00",
        "$0.000001",
        "$0.00049",
        "$0.01",
        "$1,234.50",
    ]


# --- LLM wrappers and provider prompt caching ---------------------------------------------------

CONTEXTUAL = "contextual(chunker='recursive(size=200)', llm='fake()')"
HAIKU = "anthropic(model='claude-haiku-4-5', base_url='http://127.0.0.1:9')"


def run_wrapper(spec: str, dataset: Dataset, cache_dir: Path) -> FakeLLM:
    """Run a wrapper for real over the dataset (answers cached under ``cache_dir``); its LLM."""
    chunker, _ = CHUNKERS.build(spec, context=ChunkerContext(cache_dir=cache_dir))
    for doc in dataset.documents:
        chunker(doc.text)
    llm = chunker.situate.llm if hasattr(chunker, "situate") else chunker.llm
    assert isinstance(llm, FakeLLM)
    return llm


def sent_tokens(fake: FakeLLM) -> int:
    """cl100k_base tokens of the system and user prompts of every request the fake got."""
    enc = tiktoken.get_encoding("cl100k_base")
    return sum(
        len(enc.encode_ordinary(s)) + len(enc.encode_ordinary(u)) for s, u, _ in fake.prompts
    )


def test_contextual_calls_tokens_and_cached_share_match_a_real_run(
    tmp_path: Path, demo: Dataset
) -> None:
    from chunkmark.costs.meter import MESSAGE_TOKENS

    values: dict[str, Any] = {"chunkers": [CONTEXTUAL]}
    before = llm_plan(plan_grid(config(tmp_path, ["fake()"], **values)))
    fake = run_wrapper(CONTEXTUAL, demo, tmp_path / "cache")
    made = fake.stats().requests
    assert before.known and before.calls == before.calls_max == made == len(fake.prompts)
    assert all(fake.cache_system)  # the chunker offers every document to the prompt cache
    # Stated tolerance: the estimate is the cl100k_base tokens of exactly what is sent, plus
    # the chat framing (MESSAGE_TOKENS per call), so within 2% of the prompts' own tokens.
    sent = sent_tokens(fake)
    assert before.input_tokens is not None
    assert sent < before.input_tokens <= sent + MESSAGE_TOKENS * made
    assert before.input_tokens == pytest.approx(sent, rel=0.02)
    assert before.output_tokens == made * 150  # max_context_tokens per call

    # The cached share: per document, its system prompt is written by the first request and
    # read by every later one, as the fake's (word-counting) prompt cache did in the run.
    per_document: dict[str, int] = {}
    for system, _, _ in fake.prompts:
        per_document[system] = per_document.get(system, 0) + 1
    assert len(per_document) == len(demo.documents)
    enc = tiktoken.get_encoding("cl100k_base")
    tokens = {s: len(enc.encode_ordinary(s)) for s in per_document}
    assert before.cache_write_tokens == sum(tokens.values())
    assert before.cached_input_tokens == sum((n - 1) * tokens[s] for s, n in per_document.items())
    stats = fake.stats()
    assert stats.cache_write_tokens == sum(len(s.split()) for s in per_document)
    assert stats.cached_input_tokens == sum(
        (n - 1) * len(s.split()) for s, n in per_document.items()
    )

    after = llm_plan(plan_grid(config(tmp_path, ["fake()"], **values)))
    assert after.cached_calls == made and (after.calls, after.input_tokens) == (0, 0)
    assert (after.cached_input_tokens, after.cache_write_tokens) == (0, 0)


@pytest.fixture
def propositions_llm() -> Iterator[str]:
    name = "plan_test_propositions"

    @LLMS.register(name, needs=("cache_dir", "seed"))
    def factory(*, cache_dir: Path | None = None, seed: int = 0) -> FakeLLM:
        return FakeLLM(['{"propositions": ["The"]}'], model="props", cache_dir=cache_dir)

    yield f"{name}()"
    LLMS.unregister(name)


def test_propositions_calls_match_a_real_run(
    tmp_path: Path, demo: Dataset, propositions_llm: str
) -> None:
    pytest.importorskip("rapidfuzz")
    spec = f"propositions(llm='{propositions_llm}', chunker='recursive(size=200)')"
    values: dict[str, Any] = {"chunkers": [spec]}
    before = llm_plan(plan_grid(config(tmp_path, ["fake()"], **values)))
    fake = run_wrapper(spec, demo, tmp_path / "cache")
    made = fake.stats().requests
    assert before.calls == made and before.calls_max == 2 * made  # usable answers: one each
    sent = sent_tokens(fake)
    assert before.input_tokens == pytest.approx(sent, rel=0.05)
    assert before.input_tokens_max is not None and before.input_tokens_max > 2 * sent
    assert before.cached_input_tokens == 0  # no cache_system: the short prompt is not cached
    after = llm_plan(plan_grid(config(tmp_path, ["fake()"], **values)))
    assert after.cached_calls == made and after.calls == 0


def test_unusable_propositions_are_corrected_and_replayed(tmp_path: Path, demo: Dataset) -> None:
    pytest.importorskip("rapidfuzz")
    spec = "propositions(llm='fake()', chunker='recursive(size=400)')"
    values: dict[str, Any] = {"chunkers": [spec]}
    before = llm_plan(plan_grid(config(tmp_path, ["fake()"], **values)))
    with pytest.warns(UserWarning):
        fake = run_wrapper(spec, demo, tmp_path / "cache")
    made = fake.stats().requests
    assert made == before.calls_max == 2 * (before.calls or 0)  # every chunk asked twice
    assert before.input_tokens_max is not None and before.input_tokens_max >= sent_tokens(fake)
    after = llm_plan(plan_grid(config(tmp_path, ["fake()"], **values)))
    assert after.cached_calls == made and after.calls == 0  # corrections replayed too


def test_contextual_with_anthropic_prices_the_cached_share(tmp_path: Path) -> None:
    spec = f'contextual(chunker="recursive(size=200)", llm="{HAIKU}")'
    p = llm_plan(plan_grid(config(tmp_path, ["fake()"], chunkers=[spec])))
    inp, out = p.input_tokens, p.output_tokens
    read, write = p.cached_input_tokens, p.cache_write_tokens
    assert inp and out and read and write and p.cache_write_tokens_max
    assert p.usd_per_million == {
        "input": 1.0,
        "output": 5.0,
        "cached_input": 0.1,
        "cache_write": 1.25,
    }
    hand = ((inp - read - write) * 1.0 + read * 0.1 + write * 1.25 + out * 5.0) / 1e6
    assert p.usd == pytest.approx(hand)
    assert p.usd < (inp * 1.0 + out * 5.0) / 1e6  # caching saves money here
    assert p.input_tokens_max is not None and p.output_tokens_max is not None
    worst = (
        (p.input_tokens_max - p.cache_write_tokens_max) * 1.0
        + p.cache_write_tokens_max * 1.25
        + p.output_tokens_max * 5.0
    ) / 1e6
    assert p.usd_max == pytest.approx(worst)
    overridden = llm_plan(
        plan_grid(
            config(
                tmp_path,
                ["fake()"],
                chunkers=[spec],
                prices={"llm": {"claude-haiku-4-5": {"input": 2.0, "output": 5.0}}},
            )
        )
    )  # no cache prices given: Anthropic's ratios (0.1x reads, 1.25x writes)
    assert overridden.usd_per_million == {
        "input": 2.0,
        "output": 5.0,
        "cached_input": pytest.approx(0.2),
        "cache_write": 2.5,
    }


def test_a_wrapper_around_an_llm_chunker_is_unknown(tmp_path: Path) -> None:
    spec = "contextual(chunker=\"llm_semantic(llm='fake()')\", llm='fake()')"
    plan = plan_grid(config(tmp_path, ["fake()"], chunkers=[spec]))
    p = llm_plan(plan)
    assert not p.known and p.calls is None and "calls an LLM or embeds" in p.note
    assert plan.total_usd is None


def test_plan_names_what_must_be_built_or_downloaded_and_builds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chunkmark.paths import CACHE_DIR_ENV

    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_DIR_ENV, str(cache))
    hub = "sentence_transformers(model='acme-org/not-downloaded-model')"
    plan = plan_grid(config(tmp_path, ["model2vec()", hub], chunkers=["fixed_tokens(size=200)"]))
    assert not cache.exists() or list(cache.iterdir()) == []  # nothing distilled or fetched
    steps = {EMBEDDERS.resolve(s.component).name: s.needed for s in plan.setup}
    assert set(steps) == {"model2vec", "sentence_transformers"}
    built = str(cache / "models" / "model2vec-all-MiniLM-L6-v2-pca256")
    assert f"must be distilled into {built} first" in steps["model2vec"]
    assert re.search(
        r"its [\d,]+ vocabulary tokens once: about \d+ s to \d+ min", steps["model2vec"]
    )
    assert "must be downloaded from the Hugging Face Hub first" in steps["sentence_transformers"]
    local = embedder_plan(plan, "model2vec")
    assert (local.usd, local.price_source) == (0.0, "local: free") and plan.total_usd == 0.0
    assert plan.to_dict()["setup"] == [s.model_dump() for s in plan.setup]
    from chunkmark.service.runs import plan_payload  # what the MCP tool plan_grid answers

    assert [s["needed"] for s in plan_payload(plan)["setup"]] == [s.needed for s in plan.setup]
    ready = plan_grid(config(tmp_path, ["fake()"], chunkers=["fixed_tokens(size=200)"]))
    assert ready.setup == []
