from __future__ import annotations

from typing import Any

import pytest

from chunkmark.errors import SpecError
from chunkmark.specs import FrozenDict, Registry, Spec, parse_spec

REG: Registry[object] = Registry("widget")


@REG.register("window")
def window(
    size: int = 10,
    overlap: int = 0,
    seps: list[str] = ["\n"],  # noqa: B006
    mode: str = "chars",
) -> object:
    """A test widget.

    More text."""
    if overlap >= size:
        raise ValueError("overlap must be smaller than size")
    return (size, overlap, tuple(seps), mode)


def test_parse_literals_only() -> None:
    assert parse_spec("window") == ("window", (), {})
    assert parse_spec("window(3, overlap=1, seps=['a', 'b'])") == (
        "window",
        (3,),
        {"overlap": 1, "seps": ["a", "b"]},
    )
    with pytest.raises(SpecError, match="not a literal"):
        parse_spec("window(size=__import__('os'))")
    with pytest.raises(SpecError, match="Cannot parse"):
        parse_spec("window(size=")
    with pytest.raises(SpecError, match="component name"):
        parse_spec("a.b(size=1)")


def test_resolve_fills_defaults_and_round_trips() -> None:
    spec = REG.resolve("window(20)")
    assert str(spec) == "window(size=20, overlap=0, seps=['\\n'], mode='chars')"
    assert REG.resolve(str(spec)) == spec
    assert hash(spec) == hash(REG.resolve("window(size=20, overlap=0)"))
    component, canonical = REG.build(spec)
    assert component == (20, 0, ("\n",), "chars") and canonical == spec


def test_errors_name_the_problem_and_fix() -> None:
    with pytest.raises(SpecError, match=r"Unknown widget 'windw'.*Use one of: window"):
        REG.resolve("windw(size=3)")
    with pytest.raises(
        SpecError, match=r"Bad parameters.*sise.*Valid parameters: size, overlap, seps, mode"
    ):
        REG.resolve("window(sise=3)")
    with pytest.raises(SpecError, match=r"'size'.*integer"):
        REG.resolve("window(size='big')")
    with pytest.raises(SpecError, match="overlap must be smaller"):
        REG.build("window(size=2, overlap=5)")


def test_spec_of_freezes_lists() -> None:
    spec = Spec.of("window", seps=["a"])
    assert spec.params == (("seps", ("a",)),)
    assert spec.kwargs == {"seps": ["a"]}


def test_registry_lists_entries_with_summary() -> None:
    (entry,) = list(REG)
    assert entry.name == "window" and entry.summary == "A test widget."
    assert [p.name for p in entry.parameters()] == ["size", "overlap", "seps", "mode"]


def test_short_form_keeps_only_non_defaults() -> None:
    assert REG.short("window(20, mode='chars')") == "window(size=20)"
    assert REG.short("window(mode='x')") == "window(size=10, mode='x')"
    assert REG.short("window") == "window(size=10)"


def test_short_form_of_a_component_whose_first_parameter_is_a_detail() -> None:
    """The first parameter is kept at its default when it names the component (a size, a
    model); paragraphs' first one, min_tokens, is a detail: at its defaults it is paragraphs()."""
    from chunkmark.chunkers import CHUNKERS
    from chunkmark.embedders import EMBEDDERS

    assert CHUNKERS.short("paragraphs()") == "paragraphs()"
    assert (
        CHUNKERS.short("paragraphs(min_tokens=50, max_tokens=300)") == "paragraphs(max_tokens=300)"
    )
    assert CHUNKERS.short("recursive(size=400, overlap=0)") == "recursive(size=400)"
    assert EMBEDDERS.short("model2vec()") == "model2vec(model='minilm-distilled')"


# --- dict parameters ---------------------------------------------------------------------------

DICT_REG: Registry[object] = Registry("gadget")


@DICT_REG.register("gadget")
def gadget(size: int = 3, options: dict[str, Any] | None = None) -> object:
    """A test gadget with a dict of options."""
    return (size, options)


def test_dict_parameter_round_trips() -> None:
    spec = DICT_REG.resolve("gadget(options={'sep': ['\\n', ' '], 'keep': True, 'a': {'b': 1}})")
    assert str(spec) == "gadget(size=3, options={'a': {'b': 1}, 'keep': True, 'sep': ['\\n', ' ']})"
    assert DICT_REG.resolve(str(spec)) == spec
    component, _ = DICT_REG.build(spec)
    assert component == (3, {"a": {"b": 1}, "keep": True, "sep": ["\n", " "]})


def test_dict_parameter_is_frozen_sorted_and_hashable() -> None:
    one = DICT_REG.resolve("gadget(options={'b': 2, 'a': [1, 2]})")
    two = DICT_REG.resolve("gadget(options={'a': [1, 2], 'b': 2})")
    assert one == two and hash(one) == hash(two)
    frozen = dict(one.params)["options"]
    assert isinstance(frozen, FrozenDict) and frozen == (("a", (1, 2)), ("b", 2))
    assert one.kwargs["options"] == {"a": [1, 2], "b": 2}
    assert DICT_REG.resolve("gadget(options={'a': 1})") != one


def test_dict_parameter_edge_cases() -> None:
    assert str(DICT_REG.resolve("gadget(options={})")) == "gadget(size=3, options={})"
    assert DICT_REG.resolve("gadget(options={})").kwargs["options"] == {}
    assert DICT_REG.short("gadget(options=None)") == "gadget(size=3)"
    assert DICT_REG.short("gadget(options={'x': 1})") == "gadget(size=3, options={'x': 1})"
    # A list of pairs stays a list: only dicts thaw back to dicts.
    assert Spec.of("gadget", pairs=[("a", 1)]).kwargs == {"pairs": [["a", 1]]}
    with pytest.raises(SpecError, match=r"'options'.*dictionary"):
        DICT_REG.resolve("gadget(options=['a'])")


def test_traits_of_gives_each_spec_its_own_traits() -> None:
    from chunkmark.specs import Registry, Traits

    registry: Registry[object] = Registry("thing")

    @registry.register(
        "wrapper",
        calls_llm=True,
        traits_of=lambda v: Traits(calls_llm=v["method"] == "llm"),
    )
    def wrapper(method: str = "llm") -> object:
        """A wrapper that calls an LLM for one method only."""
        return object()

    @registry.register("plain")
    def plain() -> object:
        """Nothing special."""
        return object()

    assert registry.traits("wrapper()").calls_llm
    assert not registry.traits("wrapper(method='headings')").calls_llm
    assert registry.traits("wrapper(method='headings')").reusable
    assert registry.entry("wrapper").traits.calls_llm  # the name's, for listings
    assert registry.traits("plain()") == registry.entry("plain").traits


def test_contextual_without_llm_is_as_reusable_as_what_it_wraps() -> None:
    from chunkmark.chunkers import CHUNKERS

    assert CHUNKERS.traits("contextual(method='headings')").reusable
    assert CHUNKERS.traits("contextual(method='neighbours')").reusable
    assert not CHUNKERS.traits("contextual(method='llm')").reusable
    wrapped = CHUNKERS.traits(
        "contextual(chunker='cluster_semantic(max_size=200)', method='headings')"
    )
    assert wrapped.embeds and wrapped.reusable
    assert not CHUNKERS.traits("propositions()").reusable


def test_a_nested_rankers_label_stays_short_in_the_run_table() -> None:
    """A setting's ranker parameter is itself a spec: it is shown in its short form too (the
    canonical one, every default of hybrid written out, wrapped to six lines)."""
    from rich.console import Console

    from chunkmark.cli.run import results_tables
    from chunkmark.metrics import METRICS
    from chunkmark.retrieval import RETRIEVAL

    spec = str(RETRIEVAL.resolve("in_document(k=5, ranker='hybrid()')"))
    assert "rrf_k=60" in spec  # the canonical spec, as results.csv holds it
    short = RETRIEVAL.short(spec)
    assert short == "in_document(k=5, ranker='hybrid()')"
    assert RETRIEVAL.resolve(short) == RETRIEVAL.resolve(spec)  # the same setting
    row = {
        "dataset": "demo",
        "embedder": "fake()",
        "chunker": "fixed_tokens(size=400, overlap=200)",
        "retrieval": spec,
        "n_chunks": 23,
        "mean_chunk_tokens": 373.0,
        "mean_retrieved_tokens": 1866.0,
        **{f"{m.name}_mean": 0.5 for m in METRICS},
    }
    (table,) = results_tables([row])
    for width, most in ((120, 4), (160, 2)):  # the numbers take 88 columns, never wrapped
        console = Console(width=width, record=True)
        console.print(table)
        lines = console.export_text().splitlines()
        body = lines[next(i for i, line in enumerate(lines) if line.startswith("┡")) + 1 : -1]
        assert 1 <= len(body) <= most, "\n".join(lines)
