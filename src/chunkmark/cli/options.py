"""Every option more than one command takes, declared once here (one spelling, one help text),
and how the grid options override the experiment file.

The grammar the commands follow:

- the experiment file is the first positional argument, EXPERIMENT (``run``, ``plan``, ``tune``,
  ``chunkers diagnose``, ``relations run``);
- ``-d/-c/-e/-r/--k`` add to a grid; the options that *select* rows of finished runs
  (``compare``, ``report``, ``tune``) are spelled ``--pick-...``;
- ``--out`` is always a folder;
- ``--max-cost``, ``--cache-dir``/``--no-cache``, ``--json``, ``-q/--quiet``, ``--prices`` and
  ``--permutations`` mean the same thing wherever they appear;
- options taken together (the grid, ``--cache-dir``/``--no-cache``, ``--max-cost``/``--prices``)
  are a :class:`Flags` group, one parameter of the commands that take them (:func:`grouped`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from chunkmark.experiments.config import DEFAULT_DATASET, ExperimentConfig

EXPERIMENT_HELP = "Experiment YAML (keys: datasets, chunkers, embedders, retrieval, ...)."
ConfigFile = Annotated[
    Path | None,
    typer.Argument(metavar="[EXPERIMENT]", help=EXPERIMENT_HELP, show_default=False),
]
Datasets = Annotated[
    list[str] | None,
    typer.Option(
        "--dataset",
        "-d",
        help="Dataset folder (Chroma or JSONL layout), or a built-in name: demo, chroma-general; "
        f"repeatable; replaces the experiment file's datasets. [default: {DEFAULT_DATASET}]",
    ),
]
DatasetArg = Annotated[
    str,
    typer.Argument(
        help="A dataset folder (Chroma or JSONL layout) or a built-in name: demo, chroma-general.",
        show_default=False,
    ),
]
Chunkers = Annotated[
    list[str] | None,
    typer.Option(
        "--chunker",
        "-c",
        help="Chunker spec, repeatable; a list is a grid, e.g. 'fixed_tokens(size=[200, 400], "
        "overlap=0)'; replaces the experiment file's chunkers.",
    ),
]
Embedders = Annotated[
    list[str] | None,
    typer.Option(
        "--embedder",
        "-e",
        help="Embedder spec, repeatable, e.g. 'sentence_transformers(model=\"all-MiniLM-L6-v2\")'; "
        "replaces the experiment file's embedders.",
    ),
]
Depths = Annotated[
    str | None,
    typer.Option(
        help="Depths of the default top_k retrieval: positive integers and/or 'min'; replaces the "
        "experiment file's k. [default: 1,3,5,10,min]"
    ),
]
Retrieval = Annotated[
    list[str] | None,
    typer.Option(
        "--retrieval",
        "-r",
        help="Retrieval setting spec, repeatable, e.g. 'token_budget(tokens=[512, 1024])' or "
        "'hybrid(fusion=\"rrf\", k=5)' (see `chunkmark retrieval`); replaces the experiment "
        "file's retrieval. [default: top_k at every --k]",
    ),
]
CacheDir = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        help="Cache folder (embeddings, chunks, LLM answers). [default: $CHUNKMARK_CACHE_DIR or "
        "the user cache folder]",
        show_default=False,
    ),
]
NoCache = Annotated[
    bool,
    typer.Option(
        "--no-cache", help="Neither read nor write the caches (embeddings, chunks, LLM answers)."
    ),
]
MaxCost = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        min=0,
        help="Spending limit in US dollars: where the whole cost is estimated first (plan, run, "
        "relations), exit with status 2 when the estimate exceeds it; paid work (a request, a "
        "trial) that would take the cost past it is not started. See `chunkmark plan`.",
        show_default=False,
    ),
]
FromDir = Annotated[
    Path | None,
    typer.Option(
        "--from",
        help="Convert from a local copy of the raw files instead of downloading: a folder "
        "holding one folder per set (e.g. cuad/, qmsum/), or one set's own folder.",
        show_default=False,
    ),
]
Json = Annotated[
    bool, typer.Option("--json", help="Print JSON on stdout instead of tables and text.")
]
Quiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="Print only the results, no progress lines.")
]
Prices = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        help="Price file (YAML or JSON, US dollars per 1M tokens; under 'models:', 'NAME: 0.02' "
        "for an embedding model, 'NAME: {input: 0.15, output: 0.60}' for an LLM) whose entries "
        "replace or add to the shipped price tables (and the experiment's prices:) wherever a "
        "cost is estimated. Components that run on this machine cost 0 unless priced here "
        "(docs/plan.md).",
        show_default=False,
    ),
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
        "--permutations",
        help="Sign flips of each randomisation test (at least 1,000).",
        callback=_enough_permutations,
    ),
]
RunOut = Annotated[
    Path | None, typer.Option(help="Results folder. [default: results/run-DATE-TIME]")
]
BootstrapSeed = Annotated[
    int | None, typer.Option(help="Seed for bootstrap intervals. [default: 0]")
]
NoReport = Annotated[bool, typer.Option("--no-report", help="Do not write OUT/report.html.")]


Force = Annotated[bool, typer.Option("--force", help="Write into a non-empty --out folder.")]


def out_folder(help: str, *short: str) -> Any:
    """The required ``--out`` of a command that writes one folder; ``help`` says what goes in."""
    return typer.Option("--out", *short, help=help, show_default=False)


def check_out_folder(out: Path, force: bool, what: str) -> None:
    """Refuse an ``--out`` that is a file, or a folder with files in it unless ``--force``;
    ``what`` names what would be written there."""
    from chunkmark.errors import DatasetError

    if out.exists() and not out.is_dir():
        raise DatasetError(f"--out {out} is a file.", f"Give a folder for {what}.")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise DatasetError(
            f"--out {out} is not empty.", "Give a new or empty folder, or add --force."
        )


def _share(value: float) -> float:
    if not 0.0 < value <= 1.0:
        raise typer.BadParameter(f"{value:g} is not a share: use a number in (0, 1], e.g. 0.9.")
    return value


MinPBest = Annotated[
    float,
    typer.Option(
        "--min-p-best",
        help="Name a single winner only when its P(best) (its share of bootstrap resamples of "
        "the questions in which it is best) is at least this and no cell is tied with it; "
        "otherwise the recommendation is the tied group, chosen from on cost.",
        callback=_share,
    ),
]

Runs = Annotated[
    list[Path], typer.Argument(help="Results folders of `chunkmark run` (one or more).")
]
DrawSeed = Annotated[int, typer.Option(help="Seed of the permutation and bootstrap draws.")]

# --- selecting rows of finished runs (compare, report, tune): never a grid flag -----------------

PickRetrieval = Annotated[
    str | None,
    typer.Option(
        "--pick-retrieval",
        help="The retrieval setting read, a spec of the runs' settings: 'top_k(k=10)', "
        "'token_budget(tokens=1024)', 'bm25(k=5)' (parameters left out take their defaults). "
        "[default: top_k(k=5), else the first top_k setting]",
        show_default=False,
    ),
]
# --- what the run's recommendation reads (run; recommend: in the experiment file) --------------

RecommendMetric = Annotated[
    str | None,
    typer.Option(
        "--metric",
        help="The metric the recommendation reads (recommend.metric in the experiment file). "
        "[default: recall at a token_budget(...) setting, else iou]",
        show_default=False,
    ),
]
RecommendRetrieval = Annotated[
    str | None,
    typer.Option(
        "--pick-retrieval",
        help="The retrieval setting the recommendation reads, one of the grid's "
        "(recommend.retrieval in the experiment file); it adds nothing to the grid. "
        "[default: the first token_budget(...) setting, else top_k(k=5)]",
        show_default=False,
    ),
]


PickDataset = Annotated[
    str | None,
    typer.Option(
        "--pick-dataset", help="The dataset, when the runs hold several.", show_default=False
    ),
]
PickK = Annotated[
    str | None,
    typer.Option(
        "--pick-k",
        help="Short for --pick-retrieval 'top_k(k=K)' (a number or min).",
        show_default=False,
    ),
]


# --- groups of options that commands take together ------------------------------------------


class Flags:
    """A group of options that commands take together: a frozen dataclass whose fields are
    annotated with their options, and a command's parameter annotated with the group stands
    for them all (see :func:`grouped`)."""

    def settings(self) -> dict[str, Any]:
        """The options by their field names, which are the experiment's (and an extractor's)
        names for these settings."""
        return dict(vars(self))


@dataclass(frozen=True)
class CacheFlags(Flags):
    """``--cache-dir`` and ``--no-cache``."""

    cache_dir: CacheDir = None
    no_cache: NoCache = False


@dataclass(frozen=True)
class SpendFlags(Flags):
    """``--max-cost`` and ``--prices``."""

    max_cost: MaxCost = None
    price_file: Prices = None


@dataclass(frozen=True)
class GridFlags(Flags):
    """EXPERIMENT and the options that add to its grid (``run``, ``plan``)."""

    config_file: ConfigFile = None
    dataset: Datasets = None
    chunker: Chunkers = None
    embedder: Embedders = None
    k: Depths = None
    retrieval: Retrieval = None

    def config(self, **settings: Any) -> ExperimentConfig:
        """The experiment with this grid and ``settings`` (:meth:`Grid.config`)."""
        from chunkmark.service.runs import Grid

        flags = (self.dataset, self.chunker, self.embedder, self.retrieval, self.k)
        return Grid(*flags, self.config_file).config(**settings)


def grouped(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` as typer reads it: each parameter annotated with a :class:`Flags` group
    stands for the group's options, in its place (``--help`` lists them there), and
    ``command`` is called with the group built from them. ``command`` takes its parameters
    by keyword (``*`` first), so that a group may stand between options with defaults."""
    shown: list[inspect.Parameter] = []
    groups: dict[str, type[Flags]] = {}
    for param in inspect.signature(command, eval_str=True).parameters.values():
        group = param.annotation
        if isinstance(group, type) and issubclass(group, Flags):
            groups[param.name] = group
            spread = inspect.signature(group, eval_str=True).parameters.values()
            shown += [each.replace(kind=param.kind) for each in spread]
        else:
            shown.append(param)

    @functools.wraps(command)
    def with_groups(**given: Any) -> None:
        for name, group in groups.items():
            own = inspect.signature(group).parameters
            given[name] = group(**{each: given.pop(each) for each in own})
        command(**given)

    with_groups.__signature__ = inspect.Signature(shown)  # type: ignore[attr-defined]
    with_groups.__annotations__ = {param.name: param.annotation for param in shown}
    return with_groups


def help_text(text: str | None) -> str:
    """A docstring as command help: each paragraph on one line, so the terminal's width (not
    the source's line breaks) decides where lines end."""
    paragraphs = inspect.cleandoc(text or "").split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)
