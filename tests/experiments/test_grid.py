"""Grids inside specs, and the experiment file's keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkmark.chunkers import CHUNKERS
from chunkmark.errors import ConfigError, SpecError
from chunkmark.experiments.config import load_config, make_config
from chunkmark.experiments.grid import Range, expand_specs, parse_grid


def _sizes(specs: tuple[str, ...]) -> list[tuple[int, int]]:
    out = []
    for s in specs:
        kwargs = CHUNKERS.resolve(s).kwargs
        out.append((kwargs["size"], kwargs["overlap"]))
    return out


def test_lists_expand_as_a_product_first_parameter_slowest() -> None:
    specs = expand_specs(["fixed_tokens(size=[200, 400, 800], overlap=[0, 0.25])"], CHUNKERS)
    assert _sizes(specs) == [(200, 0), (200, 50), (400, 0), (400, 100), (800, 0), (800, 200)]


def test_zip_pairs_lists() -> None:
    specs = expand_specs(["zip(fixed_tokens(size=[200, 800], overlap=[0, 400]))"], CHUNKERS)
    assert _sizes(specs) == [(200, 0), (800, 400)]


def test_zip_of_unequal_lists_names_the_lengths() -> None:
    with pytest.raises(SpecError, match="size: 2, overlap: 3"):
        expand_specs(["zip(fixed_tokens(size=[200, 800], overlap=[0, 1, 2]))"], CHUNKERS)


def test_a_fraction_and_its_token_count_are_one_cell() -> None:
    specs = expand_specs(
        ["fixed_tokens(size=400, overlap=0.25)", "fixed_tokens(size=400, overlap=100)"], CHUNKERS
    )
    assert len(specs) == 1
    assert "overlap=100" in specs[0]


def test_a_parameter_that_takes_a_list_is_not_a_grid() -> None:
    one = expand_specs(['recursive(separators=["\\n\\n", " "])'], CHUNKERS)
    assert len(one) == 1
    two = expand_specs(['recursive(separators=[["\\n\\n"], [" "]])'], CHUNKERS)
    assert len(two) == 2


def test_positional_values_grid_too() -> None:
    assert _sizes(expand_specs(["fixed_tokens([100, 300])"], CHUNKERS)) == [(100, 0), (300, 0)]


def test_ranges_are_for_tune() -> None:
    grid = parse_grid("fixed_tokens(size=range(100, 300, 100), overlap=range(0, 0.5))", CHUNKERS)
    ranges = dict(grid.ranges)
    assert ranges["size"] == Range(100, 300, 100, integer=True)
    assert ranges["size"].values() == [100, 200, 300]
    assert not ranges["overlap"].integer
    with pytest.raises(SpecError, match="chunkmark tune"):
        grid.expand(CHUNKERS)
    with pytest.raises(SpecError, match="continuous"):
        ranges["overlap"].values()


def test_float_step_range_values() -> None:
    assert Range(0, 0.5, 0.1, integer=False).values() == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]


def test_config_expands_and_rejects_ranges() -> None:
    config = make_config({"chunkers": ["fixed_tokens(size=[200, 400])"], "datasets": ["demo"]})
    assert len(config.chunkers) == 2
    with pytest.raises(SpecError, match="chunkmark tune"):
        make_config({"chunkers": ["fixed_tokens(size=range(100, 200))"]})


def test_default_retrieval_is_top_k_at_every_k() -> None:
    config = make_config({"k": "1,5,min"})
    assert config.retrieval_specs() == ("top_k(k=1)", "top_k(k=5)", "top_k(k='min')")


def test_retrieval_grids_expand() -> None:
    config = make_config(
        {"retrieval": ["top_k(k=[1, 5])", "token_budget(tokens=[256, 1024])", "bm25(k=5)"]}
    )
    specs = config.retrieval_specs()
    assert specs[:2] == ("top_k(k=1)", "top_k(k=5)")
    assert specs[2:4] == ("token_budget(tokens=256)", "token_budget(tokens=1024)")
    assert specs[4].startswith("bm25(k=5")


def test_k_and_retrieval_together_are_refused() -> None:
    with pytest.raises(ConfigError, match="not both"):
        make_config({"k": "5", "retrieval": ["top_k(k=5)"]})


def test_one_dataset_or_a_list() -> None:
    assert make_config({"dataset": "demo"}).datasets == ("demo",)
    assert make_config({"datasets": ["demo", "other"]}).datasets == ("demo", "other")


def test_scoring_grid() -> None:
    config = make_config({"scoring": {"excerpts": ["position", "text"], "unit": "tokens"}})
    assert (
        [s.columns() for s in config.scoring.scorings()]
        == config.scoring.combinations()
        == [
            {"excerpts": "position", "unit": "tokens", "denominator": "sum"},
            {"excerpts": "text", "unit": "tokens", "denominator": "sum"},
        ]
    )
    with pytest.raises(ConfigError, match="scoring"):
        make_config({"scoring": {"excerpts": "anywhere"}})


def test_unknown_key_names_key_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("datasets: [demo]\nchunkers:\n  - fixed_tokens(size=200)\nretreival: []\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "'retreival'" in message
    assert str(path) in message
    assert "line 4" in message
    assert "Did you mean 'retrieval'" in message


def test_bad_value_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("datasets: [demo]\n\nchunkers:\n  - fixed_tokens(size=[200, 'x'])\n")
    with pytest.raises(SpecError, match=r"exp.yaml, line 3"):
        load_config(path)


def test_cli_override_of_k_replaces_the_files_retrieval(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("retrieval: ['token_budget(tokens=512)']\n")
    assert load_config(path).retrieval_specs() == ("token_budget(tokens=512)",)
    assert load_config(path, {"k": "3"}).retrieval_specs() == ("top_k(k=3)",)


def test_a_bad_spec_in_a_file_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("datasets: [demo]\nretrieval:\n  - top_k(k=5)\n  - nosuch(k=1)\n")
    with pytest.raises(SpecError, match=r"Unknown retrieval 'nosuch'.*exp.yaml, line 2"):
        load_config(path)
