"""contextual: the wrapped chunker's spans kept exactly, contexts from headings, neighbours or
an LLM (through the local wire-format server), the answer cache, and the stats."""

from __future__ import annotations

import random
import re
import time
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkmark.chunkers import CHUNKERS, ChunkerContext, chunk_document, chunk_documents
from chunkmark.chunkers.contextual import (
    AnswerFallbackWarning,
    ContextualChunker,
    LLMContexts,
    fill,
    prompt_text,
)
from chunkmark.errors import SpecError
from chunkmark.llm import FakeLLM
from chunkmark.tokenizers import count_tokens
from llm_chunker_helpers import FakeContext, wire_server

DOC = (
    "# Guide\n\nIntro text here. It has two sentences.\n\n## Install\n\n"
    "Run pip. Then run it again! Done.\n\n### Linux\n\nUse apt. Or not.\n\n## Use\n\nCall it.\n"
)


def build(spec: str, context: ChunkerContext | None = None) -> ContextualChunker:
    chunker, _ = CHUNKERS.build(spec, context=context or ChunkerContext())
    assert isinstance(chunker, ContextualChunker)
    return chunker


def spans_of(spec: str, text: str) -> list[tuple[int, int]]:
    inner, _ = CHUNKERS.build(spec, context=ChunkerContext())
    return [(c.start, c.end) for c in chunk_document(inner, "d", text)]


def test_headings_by_hand() -> None:
    chunker = build("contextual(chunker='sentences(n=1)', method='headings')")
    chunks = chunk_document(chunker, "d", DOC)
    assert [c.embed_text for c in chunks] == [
        None,  # the title itself: no heading before it
        "Guide\n\nIntro text here.",
        "Guide\n\nIt has two sentences.",
        "Guide\n\n## Install",  # a chunk that starts with a heading: not repeated
        "Guide > Install\n\nRun pip.",
        "Guide > Install\n\nThen run it again!",
        "Guide > Install\n\nDone.",
        "Guide > Install\n\n### Linux",
        "Guide > Install > Linux\n\nUse apt.",
        "Guide > Install > Linux\n\nOr not.",
        "Guide\n\n## Use",  # the Linux and Install sections are closed
        "Guide > Use\n\nCall it.",
    ]


def test_headings_without_headings_and_before_the_first() -> None:
    chunker = build("contextual(chunker='sentences(n=1)', method='headings')")
    plain = "No headings at all. Just text."
    assert all(c.embed_text is None for c in chunk_document(chunker, "d", plain))
    text = "Preamble first.\n\n## Part ##\n\nBody."
    chunks = chunk_document(chunker, "d", text)
    assert [c.embed_text for c in chunks] == [None, None, "Part\n\nBody."]


def test_headings_in_code_fences_are_not_headings() -> None:
    text = "# Title\n\n```\n# not a heading\n```\n\nAfter the fence."
    chunker = build("contextual(chunker='sentences(n=1)', method='headings')")
    last = chunk_document(chunker, "d", text)[-1]
    assert last.embed_text == "Title\n\nAfter the fence."


def test_neighbours_by_hand() -> None:
    text = "One two three. Four five six. Seven eight nine. Ten eleven twelve."
    chunker = build("contextual(chunker='sentences(n=1)', method='neighbours', neighbour_tokens=8)")
    chunks = chunk_document(chunker, "d", text)
    # Each sentence is 4 cl100k tokens: two fit in 8, three do not.
    assert count_tokens(["One two three.", "One two three. Four five six."], "cl100k_base") == [
        4,
        8,
    ]
    assert [c.embed_text for c in chunks] == [
        "… Four five six. Seven eight nine.\n\nOne two three.",
        "One two three. … Seven eight nine. Ten eleven twelve.\n\nFour five six.",
        "One two three. Four five six. … Ten eleven twelve.\n\nSeven eight nine.",
        "Four five six. Seven eight nine. …\n\nTen eleven twelve.",
    ]


def test_neighbours_fall_back_to_words_when_a_sentence_is_too_long() -> None:
    text = "Alpha beta gamma delta epsilon zeta eta theta. Middle. Iota kappa lambda mu nu xi."
    chunker = build("contextual(chunker='sentences(n=1)', method='neighbours', neighbour_tokens=3)")
    middle = chunk_document(chunker, "d", text)[1]
    assert text[middle.start : middle.end] == "Middle."
    assert middle.embed_text is not None
    before, after = middle.embed_text.split("\n\n")[0].split(" … ")
    assert text.index(before) + len(before) == text.index("Middle.") - 1  # ends at the chunk
    assert text.startswith(after, middle.end + 1)
    assert count_tokens([before, after], "cl100k_base") == [3, 3]


@settings(max_examples=30, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(["alpha", "beta.", "gamma\n", "## Head\n", "delta\n\n", "épsilon!", "z"]),
        max_size=120,
    ),
    method=st.sampled_from(["headings", "neighbours"]),
    inner=st.sampled_from(
        ["fixed_tokens(size=7)", "sentences(n=2)", "recursive(size=12)", "heading_paragraph"]
    ),
)
def test_spans_are_the_wrapped_chunkers(words: list[str], method: str, inner: str) -> None:
    text = " ".join(words)
    chunker = build(f"contextual(chunker={inner!r}, method={method!r}, neighbour_tokens=5)")
    inner_chunker, _ = CHUNKERS.build(inner)
    plain = chunk_document(inner_chunker, "d", text)
    chunks = chunk_document(chunker, "d", text)
    assert [(c.start, c.end) for c in chunks] == [(c.start, c.end) for c in plain]
    for wrapped, own in zip(chunks, plain, strict=True):
        body = own.text(text)  # the wrapped chunker's embed text, else its span's text
        assert wrapped.embed_text is None or wrapped.embed_text.endswith("\n\n" + body)
        if wrapped.embed_text is None:
            assert wrapped.embed_text == own.embed_text


def test_stats_count_what_the_contexts_add() -> None:
    chunker = build("contextual(chunker='sentences(n=1)', method='headings')")
    chunks = chunk_document(chunker, "d", DOC)
    stats = chunker.stats()
    embeds = [c.embed_text for c in chunks if c.embed_text is not None]
    bodies = [DOC[c.start : c.end] for c in chunks if c.embed_text is not None]
    assert stats.counters["chunks"] == len(chunks)
    assert stats.counters["chunks_with_context"] == len(embeds)
    assert stats.counters["context_chars"] == sum(map(len, embeds)) - sum(map(len, bodies))
    assert stats.counters["context_tokens"] == sum(count_tokens(embeds, "cl100k_base")) - sum(
        count_tokens(bodies, "cl100k_base")
    )
    assert stats.llm is None and stats.fallbacks == 0


def test_spec_canonical_form_and_errors() -> None:
    assert str(CHUNKERS.resolve("contextual(chunker='recursive', method='headings')")) == (
        "contextual(chunker='recursive(size=400)', method='headings', llm=None, "
        "neighbour_tokens=50, max_context_tokens=150, prompt='v1', encoding='cl100k_base')"
    )
    # parameters a method does not use are at their defaults: one cell, one name
    assert CHUNKERS.resolve(
        "contextual(method='headings', neighbour_tokens=9, max_context_tokens=9)"
    ) == CHUNKERS.resolve("contextual(method='headings')")
    assert CHUNKERS.resolve("contextual").kwargs["llm"] == "openai(model='gpt-4o-mini')"
    with pytest.raises(SpecError, match="only with method='llm'"):
        CHUNKERS.resolve("contextual(method='headings', llm='fake()')")
    with pytest.raises(SpecError, match="wrapped chunker 'nope"):
        CHUNKERS.resolve("contextual(chunker='nope(size=3)')")
    with pytest.raises(SpecError, match="llm 'nope"):
        CHUNKERS.resolve("contextual(llm='nope()')")
    with pytest.raises(SpecError, match="method"):
        CHUNKERS.resolve("contextual(method='summary')")
    with pytest.raises(SpecError, match="neighbour_tokens"):
        CHUNKERS.build("contextual(method='neighbours', neighbour_tokens=0)")
    traits = CHUNKERS.entry("contextual").traits
    assert traits.calls_llm and traits.deterministic and traits.needs == ("context",)


def test_prompt_is_versioned_and_filled_in_one_pass() -> None:
    assert "{document}" in prompt_text("contextual_v1_system")
    assert "{chunk}" in prompt_text("contextual_v1_user")
    assert fill("{a} and {b} and {c}", a="{b}", b="x") == "{b} and x and {c}"


def passage(user: str) -> str:
    found = re.search(r"<passage>\n(.*)\n</passage>", user, re.DOTALL)
    assert found is not None
    return found.group(1)


def test_llm_contexts_with_fake() -> None:
    fake = FakeLLM(lambda system, user: f"  About {passage(user).split()[0]}.  ")
    context = FakeContext(fake)
    chunker = build("contextual(chunker='sentences(n=1)', llm='fake()')", context)
    text = "Cats purr. Dogs bark. Birds sing."
    chunks = chunk_document(chunker, "d", text)
    assert [c.embed_text for c in chunks] == [
        "About Cats.\n\nCats purr.",
        "About Dogs.\n\nDogs bark.",
        "About Birds.\n\nBirds sing.",
    ]
    systems = {system for system, _, _ in fake.prompts}
    assert len(systems) == 1 and text in systems.pop()  # the document: one shared prefix
    assert all(user.index("<passage>") > 0 for _, user, _ in fake.prompts)
    stats = chunker.stats()
    assert stats.counters["llm_calls"] == 3 and stats.counters["llm_requests"] == 3
    prefix = count_tokens([fake.prompts[0][0]], "cl100k_base")[0]
    assert stats.counters["prompt_prefix_tokens"] == 3 * prefix
    assert stats.counters["prompt_prefix_tokens_repeated"] == 2 * prefix
    assert stats.llm is not None and stats.llm.calls == 3


def test_empty_answer_leaves_the_chunk_without_context() -> None:
    fake = FakeLLM(["Context one.", "   ", "Context three."])
    chunker = build("contextual(chunker='sentences(n=1)', llm='fake()')", FakeContext(fake))
    with pytest.warns(AnswerFallbackWarning, match="empty context"):
        chunks = chunk_document(chunker, "d", "Ant one. Bee two. Cat three.")
    assert [c.embed_text for c in chunks] == [
        "Context one.\n\nAnt one.",
        None,
        "Context three.\n\nCat three.",
    ]
    stats = chunker.stats()
    assert stats.fallbacks == 1 and stats.error is not None


def test_requests_are_known_before_asking() -> None:
    fake = FakeLLM()
    chunker = build("contextual(chunker='sentences(n=1)', llm='fake()')", FakeContext(fake))
    requests = chunker.requests("Ant one. Bee two.")
    assert len(requests) == 2 and not fake.prompts
    assert isinstance(chunker.situate, LLMContexts)
    assert build("contextual(method='headings')").requests("Ant one. Bee two.") == []


def test_openai_wire_format_and_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    text = "Cats purr. Dogs bark. Birds sing."
    with wire_server().serve() as server:
        server.answer = lambda path, payload: (
            "Animals: " + passage(payload["messages"][-1]["content"]).split()[0]
        )
        spec = (
            f"contextual(chunker='sentences(n=1)', llm=\"openai(model='local', "
            f"base_url='{server.openai_url}')\")"
        )
        chunker = build(spec, ChunkerContext(cache_dir=tmp_path, seed=3))
        chunks = chunk_document(chunker, "d", text)
        assert [c.embed_text for c in chunks] == [
            "Animals: Cats\n\nCats purr.",
            "Animals: Dogs\n\nDogs bark.",
            "Animals: Birds\n\nBirds sing.",
        ]
        assert len(server.requests) == 3
        for request in server.requests:
            system, user = request["messages"]
            assert system["role"] == "system" and text in system["content"]
            assert user["content"].startswith("Here is a passage")  # the chunk comes last
        assert len({r["messages"][0]["content"] for r in server.requests}) == 1
        rerun = build(spec, ChunkerContext(cache_dir=tmp_path, seed=3))
        assert chunk_document(rerun, "d", text) == chunks
        assert len(server.requests) == 3  # a second run asks nothing: the LLM cache
        stats = rerun.stats()
        assert stats.llm is not None and (stats.llm.cache_hits, stats.llm.requests) == (3, 0)
        assert stats.counters["llm_requests"] == 0
        assert stats.counters["prompt_prefix_tokens"] == 0


def test_anthropic_wire_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    text = "# Zoo\n\nCats purr. Dogs bark."
    with wire_server().serve() as server:
        server.answer = lambda path, payload: "In the zoo guide."
        spec = (
            f"contextual(chunker='sentences(n=1)', llm=\"anthropic(model='local', "
            f"base_url='{server.url}')\")"
        )
        chunker = build(spec, ChunkerContext(cache_dir=tmp_path))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            chunks = chunk_document(chunker, "d", text)
        assert [c.embed_text for c in chunks][1:] == [
            "In the zoo guide.\n\nCats purr.",
            "In the zoo guide.\n\nDogs bark.",
        ]
        assert server.paths == ["/v1/messages"] * 3
        systems = [r["system"] for r in server.requests]
        flat = [s if isinstance(s, str) else "".join(b["text"] for b in s) for s in systems]
        assert len(set(flat)) == 1 and text in flat[0]


def slow_context(system: str, user: str) -> str:
    """A context after a random wait, so that answers finish in another order than asked."""
    time.sleep(random.random() * 0.01)
    return f"About {passage(user).split()[0]}."


def test_concurrent_requests_give_the_chunks_and_counts_of_one_at_a_time(
    tmp_path: Path,
) -> None:
    # "Cats purr." twice in one document: the same request, asked once (the document is in
    # the system prompt, so the same sentence in another document is another request)
    docs = [
        ("a", "Cats purr. Dogs bark. Cats purr. Birds sing. Fish swim. Owls hoot."),
        ("b", "Cows moo. Dogs bark. Bees buzz. Frogs croak. Cats purr."),
        ("c", "Dogs bark. Cats purr."),
    ]
    found = {}
    for workers in (1, 4):
        fake = FakeLLM(slow_context, concurrency=workers, cache_dir=tmp_path / f"cache{workers}")
        chunker = build("contextual(chunker='sentences(n=1)', llm='fake()')", FakeContext(fake))
        chunks = chunk_documents(chunker, docs)
        found[workers] = (chunks, chunker.stats(), fake.stats())
    assert found[4] == found[1]
    chunks, stats, llm = found[1]
    assert [c.embed_text for c in chunks[:2]] == [
        "About Cats.\n\nCats purr.",
        "About Dogs.\n\nDogs bark.",
    ]
    assert stats.counters["llm_calls"] == 13 and llm.cache_hits == 1
    assert stats.counters["llm_requests"] == llm.requests == 12


def test_transport_settings_are_no_part_of_a_chunkers_name() -> None:
    llm = "openai(model='m', base_url='http://127.0.0.1:8100/v1')"
    slow = llm[:-1] + ", timeout=600.0, max_retries=1, concurrency=8)"
    plain = f"contextual(chunker='sentences(n=1)', llm={llm!r})"
    tuned = f"contextual(chunker='sentences(n=1)', llm={slow!r})"
    assert CHUNKERS.identity(tuned) == CHUNKERS.identity(plain) == CHUNKERS.resolve(plain)
    assert CHUNKERS.resolve(tuned) != CHUNKERS.resolve(plain)  # built as asked
    chunker = build(tuned)
    client = chunker.estimate_llm()
    assert (getattr(client, "timeout", None), getattr(client, "concurrency", None)) == (600.0, 8)
    # a wrapped chunker's LLM too
    inner = f"propositions(llm={slow!r})"
    wrapper = f"contextual(chunker={inner!r}, method='headings')"
    named = str(CHUNKERS.identity(wrapper))
    assert "timeout" not in named and "concurrency" not in named and "base_url" in named


def test_a_new_concurrency_resumes_the_cell(tmp_path: Path) -> None:
    from chunkmark.experiments.runner import Results, evaluate

    def run(workers: int) -> Results:
        return evaluate(
            datasets=["demo"],
            chunkers=[f"contextual(chunker='sentences(n=8)', llm='fake(concurrency={workers})')"],
            embedders=["fake"],
            k=[1],
            out=tmp_path / "out",
            cache_dir=tmp_path / "cache",
            report=False,
        )

    first, second = run(1), run(3)
    assert (first.cells_computed, second.cells_resumed, second.cells_computed) == (1, 1, 0)
    assert first.summary == second.summary
    assert "concurrency" not in first.summary[0]["chunker"]
