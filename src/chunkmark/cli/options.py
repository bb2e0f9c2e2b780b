"""Options shared by the commands that read an experiment (``run``, ``plan``, ``tune``), and how
their values override the experiment file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from chunkmark.errors import ConfigError
from chunkmark.experiments.config import (
    DEFAULT_DATASET,
    ExperimentConfig,
    load_config,
    make_config,
    parse_k,
)

ConfigFile = Annotated[
    Path | None,
    typer.Argument(help="Experiment YAML (keys: datasets, chunkers, embedders, retrieval, ...)."),
]
Datasets = Annotated[
    list[str] | None,
    typer.Option(
        "--dataset",
        "-d",
        help="Dataset folder (Chroma or JSONL layout), or a built-in name: demo, chroma-general; "
        f"repeatable. [default: {DEFAULT_DATASET}]",
    ),
]
Chunkers = Annotated[
    list[str] | None,
    typer.Option(
        "--chunker",
        "-c",
        help="Chunker spec, repeatable; a list is a grid, e.g. 'fixed_tokens(size=[200, 400], overlap=0)'.",
    ),
]
Embedders = Annotated[
    list[str] | None,
    typer.Option(
        "--embedder",
        "-e",
        help="Embedder spec, repeatable, e.g. 'sentence_transformers(model=\"all-MiniLM-L6-v2\")'.",
    ),
]
Depths = Annotated[
    str | None,
    typer.Option(
        help="Depths of the default top_k retrieval: positive integers and/or 'min'. [default: 1,3,5,10,min]"
    ),
]
Retrieval = Annotated[
    list[str] | None,
    typer.Option(
        "--retrieval",
        "-r",
        help="Retrieval setting spec, repeatable, e.g. 'token_budget(tokens=[512, 1024])' or "
        "'hybrid(fusion=\"rrf\", k=5)' (see `chunkmark retrieval`). [default: top_k at every --k]",
    ),
]
PickK = Annotated[
    str | None,
    typer.Option(help="Short for --retrieval 'top_k(k=K)' (a number or min).", show_default=False),
]
CacheDir = Annotated[
    Path | None,
    typer.Option(help="Cache folder. [default: $CHUNKMARK_CACHE_DIR or the user cache dir]"),
]
NoCache = Annotated[
    bool, typer.Option("--no-cache", help="Do not read or write the embedding cache.")
]


def _enough_permutations(value: int) -> int:
    from chunkmark.metrics.paired import MIN_PRINTED_PERMUTATIONS

    if value < MIN_PRINTED_PERMUTATIONS:
        raise typer.BadParameter(
            f"{value:,} sign flips are too few for a p-value worth printing (it cannot go below "
            f"1/({value:,} + 1)); use at least {MIN_PRINTED_PERMUTATIONS:,}."
        )
    return value


Permutations = Annotated[
    int,
    typer.Option(
        help="Sign flips of each randomisation test (at least 1,000).",
        callback=_enough_permutations,
    ),
]
NoReport = Annotated[bool, typer.Option("--no-report", help="Do not write OUT/report.html.")]


def help_text(text: str | None) -> str:
    """A docstring as command help: each paragraph on one line, so the terminal's width (not
    the source's line breaks) decides where lines end."""
    import inspect

    paragraphs = inspect.cleandoc(text or "").split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def experiment(
    config_file: Path | None, no_cache: bool = False, **overrides: Any
) -> ExperimentConfig:
    """The experiment file (or the defaults) with the options given on the command line: a
    ``None`` or empty option leaves the file's value."""
    given = {k: v for k, v in overrides.items() if v is not None and v != [] and v != {}}
    if "k" in given and "retrieval" in given:
        raise ConfigError(
            "--k cannot be combined with --retrieval: --k sets the depths of the default "
            "top_k retrieval, and --retrieval replaces that default.",
            f"Give the depths as one more --retrieval: --retrieval '{top_k_spec(given['k'])}'.",
        )
    if no_cache:
        given["no_cache"] = True
    return load_config(config_file, given) if config_file else make_config(given)


def top_k_spec(k: str) -> str:
    """The ``top_k`` retrieval spec of ``--k`` values, to write in single quotes on a command
    line: ``5`` -> ``top_k(k=5)``, ``1,min`` -> ``top_k(k=[1, "min"])``."""
    values = [f'"{v}"' if isinstance(v, str) else str(v) for v in parse_k(k)]
    return f"top_k(k={values[0]})" if len(values) == 1 else f"top_k(k=[{', '.join(values)}])"
