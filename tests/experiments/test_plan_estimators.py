"""The planner asks components: a chunker that calls an LLM, defined and registered only here,
is planned by ``plan_grid`` and ``chunkmark plan`` through the RequestEstimator protocol, with
no edit to the planner; one that is no estimator is reported as unknown."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import tiktoken
from typer.testing import CliRunner

from chunkmark.chunkers import CHUNKERS, Chunk, ChunkerContext, chunk_document
from chunkmark.chunkers.base import RequestEstimator
from chunkmark.costs.budget import CostLimitError
from chunkmark.costs.meter import MESSAGE_TOKENS
from chunkmark.datasets import load_dataset
from chunkmark.datasets.model import Dataset
from chunkmark.experiments.config import ExperimentConfig, make_config
from chunkmark.experiments.plan import LLMChunkerPlan, Plan, check_budget, plan_grid
from chunkmark.llm import LLM
from chunkmark.llm.estimate import Asking, LLMUsage, Replay, Request, count_requests
from chunkmark.llm.fake import FakeLLM
from chunkmark.spans import Span

TITLED = "plan_test_titled"
OPAQUE = "plan_test_opaque"
SYSTEM = "You give a passage a title of a few words."
TITLE_TOKENS = 30
EXPERIMENTS = Path(__file__).resolve().parents[2] / "src" / "chunkmark" / "experiments"


def paragraphs(text: str) -> list[Span]:
    """The text's paragraphs (runs between blank lines), trimmed."""
    out: list[Span] = []
    start = 0
    for part in text.split("\n\n"):
        end = start + len(part)
        body = part.strip()
        if body:
            first = start + part.index(body)
            out.append(Span(first, first + len(body)))
        start = end + 2
    return out


class TitledChunker:
    """Each paragraph (or each chunk of the wrapped chunker) embedded after a title an LLM
    writes for it: one request per chunk."""

    def __init__(self, llm: LLM, inner_spec: str | None, context: ChunkerContext) -> None:
        self.llm = llm
        self.inner_spec = inner_spec
        self.inner = None if inner_spec is None else CHUNKERS.build(inner_spec, context=context)[0]

    def _spans(self, text: str) -> list[Span] | list[Chunk]:
        if self.inner is None:
            return paragraphs(text)
        return chunk_document(self.inner, "", text)

    def _requests(self, text: str, spans: Sequence[Span | Chunk]) -> list[Request]:
        return [
            Request(SYSTEM, f"Title this passage:\n{text[s.start : s.end]}", TITLE_TOKENS)
            for s in spans
        ]

    def __call__(self, text: str) -> list[Chunk]:
        spans = self._spans(text)
        out = []
        for span, r in zip(spans, self._requests(text, spans), strict=True):
            title = self.llm.complete(r.system, r.user, max_tokens=r.max_tokens)
            out.append(Chunk("", span.start, span.end, f"{title}\n\n{text[span.start : span.end]}"))
        return out

    def estimate_llm(self) -> LLM:
        return self.llm

    def estimate_wraps(self) -> str | None:
        return self.inner_spec

    def estimate_requests(
        self, text: str, chunks: Sequence[Chunk] | None, asking: Asking
    ) -> LLMUsage:
        spans = self._spans(text) if chunks is None else chunks
        return count_requests(self._requests(text, spans), asking)


class OpaqueChunker:
    """Calls an LLM and does not say what it would ask."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    def __call__(self, text: str) -> list[Span]:
        self.llm.complete(SYSTEM, text, max_tokens=5)
        return [Span(0, len(text))]


@pytest.fixture
def registered() -> Iterator[None]:
    @CHUNKERS.register(TITLED, calls_llm=True, needs=("context",))
    def titled(
        llm: str = "fake()", chunker: str | None = None, *, context: ChunkerContext
    ) -> TitledChunker:
        """Paragraphs (or another chunker's chunks) embedded after an LLM's title."""
        return TitledChunker(context.llm(llm), chunker, context)

    @CHUNKERS.register(OPAQUE, calls_llm=True, needs=("context",))
    def opaque(llm: str = "fake()", *, context: ChunkerContext) -> OpaqueChunker:
        """Whole documents, after asking an LLM something."""
        return OpaqueChunker(context.llm(llm))

    yield
    CHUNKERS.unregister(TITLED)
    CHUNKERS.unregister(OPAQUE)


@pytest.fixture(scope="module")
def demo() -> Dataset:
    return load_dataset("demo")


def config(tmp_path: Path, chunker: str) -> ExperimentConfig:
    values = {"datasets": ["demo"], "embedders": ["fake()"], "chunkers": [chunker]}
    return make_config({**values, "cache_dir": tmp_path / "cache"})


def llm_plan(plan: Plan) -> LLMChunkerPlan:
    (found,) = plan.llm_chunkers
    return found


def run(spec: str, dataset: Dataset, cache_dir: Path) -> FakeLLM:
    """Run the chunker for real (answers cached under ``cache_dir``); its LLM."""
    chunker, _ = CHUNKERS.build(spec, context=ChunkerContext(cache_dir=cache_dir))
    for doc in dataset.documents:
        chunker(doc.text)
    assert isinstance(chunker.llm, FakeLLM)
    return chunker.llm


def sent_tokens(fake: FakeLLM) -> int:
    enc = tiktoken.get_encoding("cl100k_base")
    return sum(
        len(enc.encode_ordinary(s)) + len(enc.encode_ordinary(u)) for s, u, _ in fake.prompts
    )


def test_a_chunker_defined_here_is_planned_then_replayed(
    tmp_path: Path, demo: Dataset, registered: None
) -> None:
    spec = f"{TITLED}()"
    built, _ = CHUNKERS.build(spec, context=ChunkerContext())
    assert isinstance(built, RequestEstimator)
    before = llm_plan(plan_grid(config(tmp_path, spec)))
    fake = run(spec, demo, tmp_path / "cache")
    made = fake.stats().requests
    assert made == sum(len(paragraphs(d.text)) for d in demo.documents) > 0
    assert before.known and before.calls == before.calls_max == made
    assert before.llm == "fake()" and before.model == "fake" and before.usd == 0.0
    sent = sent_tokens(fake)  # the estimate adds only the chat framing to what is sent
    assert before.input_tokens is not None
    assert sent < before.input_tokens <= sent + MESSAGE_TOKENS * made
    assert before.output_tokens == made * TITLE_TOKENS
    assert before.cached_input_tokens == 0  # not offered to the provider's prompt cache

    after = llm_plan(plan_grid(config(tmp_path, spec)))
    assert after.cached_calls == made and (after.calls, after.input_tokens) == (0, 0)


def test_a_wrapper_defined_here_is_given_its_inner_chunks(
    tmp_path: Path, demo: Dataset, registered: None
) -> None:
    spec = f"{TITLED}(chunker='recursive(size=200)')"
    plan = llm_plan(plan_grid(config(tmp_path, spec)))
    fake = run(spec, demo, tmp_path / "cache")
    inner, _ = CHUNKERS.build("recursive(size=200)")
    chunks = sum(len(chunk_document(inner, d.id, d.text)) for d in demo.documents)
    assert plan.calls == fake.stats().requests == chunks

    around_llm = f"{TITLED}(chunker=\"llm_semantic(llm='fake()')\")"
    unknown = plan_grid(config(tmp_path, around_llm))
    p = llm_plan(unknown)
    assert not p.known and p.calls is None and "calls an LLM or embeds" in p.note
    assert unknown.total_usd is None


def test_chunkmark_plan_plans_it(tmp_path: Path, registered: None) -> None:
    from chunkmark.cli import app, plan

    app._register_commands()
    if not any(c.name == "plan" for c in app.app.registered_commands):
        plan.register(app.app)
    args = ["plan", "--json", "-d", "demo", "-c", f"{TITLED}()", "-e", "fake()"]
    result = CliRunner().invoke(app.app, [*args, "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output[result.output.index("{") :])
    (p,) = found["llm_chunkers"]
    demo = load_dataset("demo")
    assert p["known"] and p["calls"] == sum(len(paragraphs(d.text)) for d in demo.documents)
    assert found["total_usd"] == 0.0


def test_a_chunker_that_does_not_say_what_it_asks_is_unknown(
    tmp_path: Path, registered: None
) -> None:
    plan = plan_grid(config(tmp_path, f"{OPAQUE}()"))
    p = llm_plan(plan)
    assert not p.known and p.calls is None and p.llm == "fake()"
    assert "cost cannot be estimated" in p.note
    assert plan.total_usd is None
    assert plan.unknown == [f"LLM calls of {CHUNKERS.short(f'{OPAQUE}()')}"]
    (cell,) = plan.cells
    assert (cell.chunks, cell.source) == (None, "unknown")
    with pytest.raises(CostLimitError, match=OPAQUE):
        check_budget(plan, 1.0)


def _chunker_imports(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("chunkmark.chunk"):
            found.add(str(node.module))
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("chunkmark.chunk")}
    return found


def _code_strings(tree: ast.AST) -> set[str]:
    """String constants other than docstrings."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    }


def test_the_planner_names_no_chunker() -> None:
    """The planner's modules import the chunker contract and the estimate protocol only (no
    chunker module, no private helper of one) and name no chunker in their code."""
    modules = sorted(EXPERIMENTS.glob("plan*.py"))
    assert len(modules) > 1
    trees = [ast.parse(m.read_text(encoding="utf-8")) for m in modules]
    imported = set().union(*(_chunker_imports(t) for t in trees))
    allowed = {"chunkmark.chunkers", "chunkmark.chunkers.base"}
    assert imported <= allowed, imported - allowed
    named = set().union(*(_code_strings(t) for t in trees))
    for name in ("llm_semantic", "documentation", "contextual", "propositions", "llm"):
        assert not any(s == name or s.startswith(f"{name}(") for s in named), name


def test_requests_known_in_full_share_a_cached_system_prompt() -> None:
    """count_requests with a provider prompt cache: per system prompt, the first request sent
    writes it and later ones read it; writes only where the provider bills them."""
    fake = FakeLLM()
    requests = [Request("a b c", "one", 10), Request("a b c", "two", 10), Request("x", "y", 10)]
    none = count_requests(requests, Asking(Replay(fake)), cache_system=True)
    assert (none.calls, none.cached_input_tokens, none.cache_write_tokens) == (3, 0, 0)
    billed = count_requests(requests, Asking(Replay(fake), (0, True)), cache_system=True)
    assert (billed.cached_input_tokens, billed.cache_write_tokens) == (3, 3 + 1)
    assert billed.cache_write_tokens_max == 3 + 3 + 1
    free = count_requests(requests, Asking(Replay(fake), (2, False)), cache_system=True)
    assert (free.cached_input_tokens, free.cache_write_tokens) == (3, 0)  # "x" is too short
    assert none.input_tokens == billed.input_tokens == none.input_tokens_max
