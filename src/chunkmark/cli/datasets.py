"""``chunkmark datasets``: list the built-in datasets; validate, download, show, import and stitch
datasets."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table

from chunkmark.cli import listing, options
from chunkmark.datasets import Dataset, Problem, find_problems, load_dataset
from chunkmark.datasets import download as downloads
from chunkmark.datasets.demo import DEMO_NAME
from chunkmark.datasets.fix import UNPLACED, describe, fix_jsonl
from chunkmark.datasets.stitch import (
    DEFAULT_DOCS_PER_FILE,
    DEFAULT_FILES,
    DEFAULT_SEGMENT_CHARS,
    Stitched,
    stitch,
    write_stitched,
)
from chunkmark.datasets.suite import Sample
from chunkmark.datasets.validate import JSONL_QUESTIONS, detect_layout
from chunkmark.errors import DatasetError
from chunkmark.service import catalog
from chunkmark.suite import sets as suite_download
from chunkmark.synth.importing import NothingImportedError, SkippedSource, import_documents


def register(app: typer.Typer) -> None:
    """Add the ``datasets`` command group to ``app``."""
    group = typer.Typer(invoke_without_command=True, add_completion=False)
    group.callback()(datasets_group)
    group.command("validate")(validate)
    group.command("download")(download)
    group.command("list")(list_datasets)
    group.command("show")(show)
    group.command("import")(import_command)
    group.command("stitch")(stitch_command)
    app.add_typer(group, name="datasets")


def validate(
    path: options.DatasetArg,
    fix: Annotated[
        str | None,
        typer.Option(
            "--fix",
            metavar="OUT",
            help="Write a copy of the dataset (JSONL layout) to the new folder OUT with every "
            "excerpt given as text (no offsets, or offsets that do not hold it) placed where the "
            "text occurs once; texts found several times or nowhere are listed with their "
            "candidates and kept in OUT/unplaced.jsonl. The dataset itself is never changed.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """List every problem in a dataset; exit code 1 if there is any. With --fix OUT, place
    excerpts given as text first (see --fix)."""
    console = Console(soft_wrap=True, highlight=False)
    folder = _folder_of(path)
    left = 0
    if fix is not None:
        folder, left = Path(fix), _fix(console, folder, Path(fix))
    problems = find_problems(folder)
    if problems:
        console.print(_problem_table(problems, folder))
        noun = "problem" if len(problems) == 1 else "problems"
        console.print(f"{len(problems)} {noun} in {folder}")
        raise typer.Exit(code=1)
    dataset = load_dataset(folder)
    console.print(
        f"ok: {len(dataset.documents)} documents, {len(dataset.questions)} questions, "
        f"fingerprint {dataset.fingerprint}",
        highlight=False,
    )
    if left:
        raise typer.Exit(code=1)


def _fix(console: Console, folder: Path, out: Path) -> int:
    """Run ``--fix``: print what was placed and what is left; the count of questions left."""
    problems: list[Problem] = []
    layout = detect_layout(folder, problems.append)
    if layout != "jsonl":
        raise DatasetError(
            f"{problems[0].where}: {problems[0].message}"
            if problems
            else f"{folder}: --fix places the excerpts of the JSONL layout ({JSONL_QUESTIONS}).",
            problems[0].fix
            if problems
            else "Give a folder with documents.jsonl and questions.jsonl (docs/formats.md).",
        )
    fixed = fix_jsonl(folder, out)
    for item in fixed.unplaced:
        console.print(f"{JSONL_QUESTIONS}, {describe(item, fixed.texts)}", markup=False)
    console.print(
        f"placed {fixed.placed} excerpts by their text, {fixed.exact} already exact; wrote "
        f"{fixed.written} questions to {out / JSONL_QUESTIONS}"
    )
    if fixed.unplaced:
        console.print(
            f"excerpts left to place: {len(fixed.unplaced)}, in {fixed.left} question(s) kept in "
            f"{out / UNPLACED}. Fix: give each its start and end (one of the places listed), "
            f"then move the question to {JSONL_QUESTIONS}."
        )
        if not fixed.fuzzy_available:
            console.print("(pip install rapidfuzz to list the nearest match of a text not found)")
    return fixed.left


def download(
    names: Annotated[
        list[str],
        typer.Argument(
            help="The datasets to download: chroma-general, cuad, qmsum, evidence_inference, "
            "fairytaleqa, covid_qa, redocred-evidence, or suite for all seven.",
            show_default=False,
            metavar="NAME...",
        ),
    ],
    force: Annotated[
        bool, typer.Option("--force", help="Download and convert again even if ready.")
    ] = False,
    from_dir: options.FromDir = None,
    docs: Annotated[
        int | None,
        typer.Option(
            "--docs", min=1, help="Documents to draw per set (default: all).", show_default=False
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Random seed for drawing --docs.")] = 0,
) -> None:
    """Download public datasets into the cache, checking each file's SHA-256.

    The suite's sets (see docs/suite.md) are fetched at a pinned commit and converted into
    chunkmark's JSONL layout plus manifest.json (what was kept, dropped and why); --docs N draws
    N documents per set with --seed (their questions follow them) into NAME-docsN-seedS. A set
    that fails is reported in one line and the others go on; the exit code is then 1.
    """
    console = Console(soft_wrap=True, highlight=False, markup=False)
    failed = suite_download.download_many(
        names, force=force, from_dir=from_dir, sample=Sample(docs, seed), say=console.print
    )
    if failed:
        raise typer.Exit(code=1)


def datasets_group(ctx: typer.Context, as_json: options.Json = False) -> None:
    """List the built-in datasets and whether each is available.

    Its commands validate, download, show, import and stitch datasets.
    """
    if ctx.invoked_subcommand is None:
        listing.show(catalog.datasets(), as_json)


def list_datasets(as_json: options.Json = False) -> None:
    """List the built-in datasets and whether each is available (as `chunkmark datasets`)."""
    listing.show(catalog.datasets(), as_json)


def show(path: options.DatasetArg) -> None:
    """Summarise a dataset: counts, document sizes and excerpt lengths."""
    dataset = load_dataset(path)
    console = Console()
    excerpts = [len(s) for q in dataset.questions for s in q.excerpts]
    console.print(
        f"{dataset.name}: {len(dataset.documents)} documents, {len(dataset.questions)} "
        f"questions, {len(excerpts)} excerpts, fingerprint {dataset.fingerprint}",
        highlight=False,
    )
    console.print(_documents_table(dataset))
    table = Table("per question / excerpt", "min", "median", "mean", "max", title="lengths")
    rows = {
        "excerpt characters": excerpts,
        "excerpts per question": [len(q.excerpts) for q in dataset.questions],
        "question characters": [len(q.text) for q in dataset.questions],
    }
    for label, values in rows.items():
        table.add_row(label, *_summary(values))
    console.print(table)


def _sources(help: str) -> Any:
    """The SRC arguments of ``import`` and ``stitch`` (one or more); ``help`` says what each is."""
    return typer.Argument(help=help, show_default=False, metavar="SRC")


def import_command(
    sources: Annotated[
        list[str],
        _sources(
            "Document files and folders (searched recursively): .md, .markdown, .txt, .pdf, "
            ".html, .htm, .docx."
        ),
    ],
    out: Annotated[Path, options.out_folder("Folder to write corpora/ and manifest.json into.")],
    include: Annotated[
        list[str] | None,
        typer.Option(
            "--include",
            help="Only import files in folders whose relative path or name matches this glob "
            "(repeatable; case-insensitive). Without it every file is tried.",
        ),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            help="Leave out files in folders whose relative path, name or parent folder matches "
            "this glob (repeatable; case-insensitive).",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Write into a non-empty --out folder (other files there are kept)."
        ),
    ] = False,
) -> None:
    """Turn your documents (PDF, HTML, Word, markdown, text) into a corpus folder.

    Writes OUT/corpora/<id>.md (.txt for text files) and OUT/manifest.json; sources that give
    no usable text are skipped and listed with their reason.
    """
    console = Console(soft_wrap=True, highlight=False, markup=False)
    try:
        report = import_documents(
            sources,
            out,
            include=include or (),
            exclude=exclude or (),
            force=force,
            progress=console.print,
        )
    except NothingImportedError as exc:
        _print_skipped(console, exc.skipped)
        raise
    noun = "document" if len(report.imported) == 1 else "documents"
    console.print(
        f"imported {len(report.imported)} {noun} into {report.out / 'corpora'} "
        f"(manifest: {report.manifest})"
    )
    if report.foreign:
        names = ", ".join(path.name for path in report.foreign)
        console.print(
            f"note: {len(report.foreign)} other corpus files in {report.out / 'corpora'} were "
            f"not written by this import and are read as documents too: {names}"
        )
    _print_skipped(console, report.skipped)


def stitch_command(
    sources: Annotated[
        list[str],
        _sources(
            "Source datasets (folders or built-in names); each of their documents is one source."
        ),
    ],
    out: Annotated[Path, options.out_folder("Folder to write the stitched dataset into.")],
    docs_per_file: Annotated[
        int, typer.Option("--docs-per-file", help="Segments joined into each file.")
    ] = DEFAULT_DOCS_PER_FILE,
    files: Annotated[int, typer.Option("--files", help="Files to make.")] = DEFAULT_FILES,
    segment_chars: Annotated[
        str,
        typer.Option("--segment-chars", help="MIN,MAX characters per segment.", metavar="MIN,MAX"),
    ] = "{},{}".format(*DEFAULT_SEGMENT_CHARS),
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
    layout: Annotated[
        Literal["chroma", "jsonl"],
        typer.Option("--layout", help="Dataset layout to write (docs/formats.md)."),
    ] = "chroma",
    force: options.Force = False,
) -> None:
    """Build a corpus of short segments of different sources with known topic boundaries.

    Each file joins --docs-per-file segments (blank line between, never two of one source side
    by side); OUT/boundaries.json records every segment's offsets and source. Questions whose
    excerpts all fall in the kept segments of one file come along with shifted offsets, so OUT
    is a dataset like any other. Same inputs and --seed, same corpus. Measure chunkers against
    it with: chunkmark chunkers diagnose --boundaries OUT
    """
    bounds = _segment_chars(segment_chars)
    options.check_out_folder(out, force, "the stitched dataset")
    datasets = [load_dataset(source) for source in sources]
    stitched = stitch(
        datasets,
        docs_per_file=docs_per_file,
        files=files,
        segment_chars=bounds,
        seed=seed,
        name=out.resolve().name,
    )
    path = write_stitched(stitched, out, layout=layout)
    problems = find_problems(out)
    loaded = load_dataset(out) if not problems else None
    if loaded is None or loaded.fingerprint != stitched.dataset.fingerprint:
        raise DatasetError(
            f"{out} does not read back as the stitched dataset"
            + (f" ({problems[0]})" if problems else " (other files in it are read too)")
            + ".",
            "Write into a new or empty folder.",
        )
    console = Console(soft_wrap=True, highlight=False)
    console.print(_stitch_table(stitched))
    total = sum(len(q.excerpts) for q in stitched.dataset.questions)
    boundaries = sum(len(b) for b in stitched.boundaries().values())
    console.print(
        f"ok: {len(loaded.documents)} documents, {boundaries} topic boundaries, "
        f"{len(loaded.questions)} questions ({total} excerpts) carried over of "
        f"{sum(len(d.questions) for d in datasets)}, fingerprint {loaded.fingerprint}; "
        f"boundaries in {path}"
    )


def _segment_chars(value: str) -> tuple[int, int]:
    parts = value.replace(" ", "").split(",")
    try:
        low, high = (int(p) for p in parts)
    except ValueError:
        raise DatasetError(
            f"--segment-chars {value!r} is not MIN,MAX.",
            "Give two whole numbers of characters, e.g. --segment-chars 500,3000.",
        ) from None
    return low, high


def _stitch_table(stitched: Stitched) -> Table:
    counts: dict[str, list[int]] = {}
    for segments in stitched.segments.values():
        for s in segments:
            counts.setdefault(s.source, []).append(s.end - s.start)
    table = Table("source", "segments", "characters", title="segments by source")
    for source in stitched.settings["sources"]:
        lengths = counts.get(source, [])
        table.add_row(source, str(len(lengths)), f"{sum(lengths):,}")
    return table


def _print_skipped(console: Console, skipped: Sequence[SkippedSource]) -> None:
    """The skipped sources, one line each with its reason."""
    if not skipped:
        return
    noun = "source" if len(skipped) == 1 else "sources"
    console.print(f"skipped {len(skipped)} {noun}:")
    for item in skipped:
        console.print(f"  {item.path}: {item.reason}")


def _folder_of(path: str) -> Path:
    """The folder behind a built-in name (the cached one for downloads), else ``path``."""
    if path == DEMO_NAME:
        from importlib import resources

        root = resources.files("chunkmark.datasets").joinpath("demo_data")
        if isinstance(root, Path):
            return root
    if path in downloads.DOWNLOADABLE and not Path(path).exists():
        if not downloads.is_downloaded(path):
            raise DatasetError(
                f"{path} is not downloaded yet.", f"Run: chunkmark datasets download {path}"
            )
        return downloads.dataset_dir(path)
    return Path(path)


def _problem_table(problems: list[Problem], folder: Path) -> Table:
    table = Table("file", "line", "problem", "fix", title=f"problems in {folder}")
    for problem in problems:
        table.add_row(
            _relative(problem.file, folder),
            "" if problem.line is None else str(problem.line),
            problem.message,
            problem.fix,
        )
    return table


def _relative(file: str, folder: Path) -> str:
    try:
        relative = Path(file).relative_to(folder)
    except ValueError:
        return file
    return file if relative == Path() else str(relative)


def _documents_table(dataset: Dataset) -> Table:
    questions: dict[str, int] = {}
    excerpts: dict[str, int] = {}
    for q in dataset.questions:
        questions[q.doc_id] = questions.get(q.doc_id, 0) + 1
        excerpts[q.doc_id] = excerpts.get(q.doc_id, 0) + len(q.excerpts)
    table = Table("document", "characters", "questions", "excerpts", title="documents")
    for doc in dataset.documents:
        table.add_row(
            doc.id,
            f"{len(doc.text):,}",
            str(questions.get(doc.id, 0)),
            str(excerpts.get(doc.id, 0)),
        )
    total = sum(len(d.text) for d in dataset.documents)
    table.add_row("total", f"{total:,}", str(len(dataset.questions)), str(sum(excerpts.values())))
    return table


def _summary(values: list[int]) -> tuple[str, str, str, str]:
    if not values:
        return ("-", "-", "-", "-")
    return (
        str(min(values)),
        f"{statistics.median(values):g}",
        f"{statistics.fmean(values):.1f}",
        str(max(values)),
    )
