"""Each embedder's spec parameters are its class's ``__init__`` parameters, declared once."""

from __future__ import annotations

import inspect

import pytest

from chunkmark.embedders import EMBEDDERS
from chunkmark.embedders.fake import FakeEmbedder
from chunkmark.embedders.openai import EXCLUDED, OpenAIEmbedder
from chunkmark.embedders.sentence_transformers import MINILM, SentenceTransformerEmbedder
from chunkmark.errors import SpecError
from chunkmark.specs import class_factory


@pytest.mark.parametrize(
    ("name", "cls", "excluded"),
    [
        ("fake", FakeEmbedder, ()),
        ("openai", OpenAIEmbedder, EXCLUDED),
        ("sentence_transformers", SentenceTransformerEmbedder, ()),
    ],
)
def test_spec_parameters_are_the_class_parameters(
    name: str, cls: type, excluded: tuple[str, ...]
) -> None:
    declared = [
        (p.name, p.default)
        for p in inspect.signature(cls).parameters.values()
        if p.name not in excluded
    ]
    listed = [(p.name, p.default) for p in EMBEDDERS.entry(name).parameters()]
    assert listed == declared
    assert EMBEDDERS.entry(name).summary == (inspect.getdoc(cls) or "").split("\n\n")[0].replace(
        "\n", " "
    )


def test_canonical_specs_and_identities_are_kept() -> None:
    fake, spec = EMBEDDERS.build("fake(dimension=32)")
    assert str(spec) == "fake(dimension=32, seed=0, max_words=None)"
    assert fake.identity() == {"embedder": "fake", "version": 1, "dimension": 32, "seed": 0}
    st = str(EMBEDDERS.resolve("sentence_transformers"))
    assert st.startswith(f"sentence_transformers(model={MINILM!r}, batch_size=None, device='auto'")
    assert str(EMBEDDERS.resolve("openai")).startswith(
        "openai(model='text-embedding-3-small', base_url=None, dimensions=None,"
    )
    with pytest.raises(SpecError):
        EMBEDDERS.resolve("openai(sleep=0)")
    with pytest.raises(SpecError):
        EMBEDDERS.build("fake(dimension=0)")


def test_class_factory_refuses_star_parameters() -> None:
    class Loose:
        def __init__(self, *args: int) -> None: ...

    with pytest.raises(ValueError, match="args"):
        class_factory(Loose)
