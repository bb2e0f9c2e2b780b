"""``chunkmark label``: a local page for labeling real questions with exact evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chunkmark.cli import options


def register(app: typer.Typer) -> None:
    """Add the ``label`` command to the app."""
    app.command("label")(label)


FolderOption = Annotated[
    Path,
    typer.Argument(
        help="A dataset folder (documents.jsonl) or a corpus folder (corpora/ as datasets "
        "import writes it, or .md/.txt files). Questions are written to its questions.jsonl.",
        show_default=False,
        metavar="DATASET_OR_CORPUS",
    ),
]
QueriesOption = Annotated[
    Path | None,
    typer.Option(
        "--queries",
        help="Real queries to step through: .txt (one per line), .csv (a column) or .jsonl.",
        show_default=False,
    ),
]
ColumnOption = Annotated[
    str | None,
    typer.Option(
        "--column",
        help="The CSV column or JSONL key holding the queries. [default: query, question or text]",
        show_default=False,
    ),
]
PortOption = Annotated[
    int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free one).")
]
NoBrowserOption = Annotated[
    bool, typer.Option("--no-browser", help="Print the address instead of opening it.")
]
EmbedderOption = Annotated[
    str,
    typer.Option(
        "--embedder",
        help="Embedder spec for the dense and hybrid suggestions; none for BM25 alone. "
        "[default: auto: model2vec() when the distilled MiniLM is cached, else MiniLM]",
        show_default=False,
    ),
]
ChunkerOption = Annotated[
    list[str] | None,
    typer.Option(
        "--chunker",
        "-c",
        help="A chunking to pool, repeatable. [default: sentences(n=3), recursive(size=256), "
        "recursive(size=512), paragraphs(), recursive(size=1024)]",
        show_default=False,
    ),
]
RankerOption = Annotated[
    list[str] | None,
    typer.Option(
        "--ranker",
        help="A ranker to pool over every chunking, repeatable: bm25, dense, hybrid. "
        "[default: all three]",
        show_default=False,
    ),
]
PassageCharsOption = Annotated[
    int | None,
    typer.Option(
        "--passage-chars",
        min=1,
        help="The longest passage that merging chunks may suggest (default: the pool's, 5000 "
        "characters; docs/label.md says how it was chosen).",
        show_default=False,
    ),
]
MaxCharsOption = Annotated[
    int,
    typer.Option("--max-chars", min=1, help="The longest document the page accepts."),
]
ImportLabelStudioOption = Annotated[
    Path | None,
    typer.Option(
        "--import-label-studio",
        help="Add the spans of a Label Studio JSON export to the folder's questions (each "
        "checked), then serve the page.",
        show_default=False,
    ),
]
ExportLabelStudioOption = Annotated[
    Path | None,
    typer.Option(
        "--export-label-studio",
        help="Write the folder's questions as a Label Studio JSON export to this file and "
        "exit (no page).",
        show_default=False,
    ),
]
ImportArgillaOption = Annotated[
    Path | None,
    typer.Option(
        "--import-argilla",
        help="Add the spans of Argilla records (dataset.records.to_json) to the folder's "
        "questions (each checked), then serve the page.",
        show_default=False,
    ),
]
ExportArgillaOption = Annotated[
    Path | None,
    typer.Option(
        "--export-argilla",
        help="Write the folder's questions as Argilla records (their excerpts as the "
        "suggestions of a span question named evidence) to this file and exit (no page).",
        show_default=False,
    ),
]


def label(
    folder: FolderOption,
    queries: QueriesOption = None,
    column: ColumnOption = None,
    port: PortOption = 0,
    no_browser: NoBrowserOption = False,
    embedder: EmbedderOption = "auto",
    chunker: ChunkerOption = None,
    ranker: RankerOption = None,
    passage_chars: PassageCharsOption = None,
    max_chars: MaxCharsOption = 2_000_000,
    import_label_studio: ImportLabelStudioOption = None,
    export_label_studio: ExportLabelStudioOption = None,
    import_argilla: ImportArgillaOption = None,
    export_argilla: ExportArgillaOption = None,
    cache_dir: options.CacheDir = None,
    no_cache: options.NoCache = False,
) -> None:
    """Label real questions with exact evidence on a local page that suggests the passages.

    Serves a page on 127.0.0.1 (a per-session token guards every request): type a question or
    step through --queries, accept one of the suggested passages (BM25, dense and hybrid over
    several chunkings, pooled) or select the text, and each question is written at once to
    the folder's questions.jsonl with exact offsets, checked as datasets validate checks it; reopening
    resumes. Questions the documents do not answer go to its unanswered.jsonl. See
    docs/label.md.
    """
    import importlib.util
    import webbrowser

    from rich.console import Console

    from chunkmark.errors import ChunkmarkError

    if not all(importlib.util.find_spec(m) for m in ("starlette", "uvicorn")):
        raise ChunkmarkError(
            "chunkmark label needs starlette and uvicorn, which are not installed.",
            "pip install 'chunkmark[label]'",
        )
    from chunkmark.label.pool import DEFAULT_CHUNKERS, RANKERS
    from chunkmark.label.server import create_app, serve
    from chunkmark.label.session import build_embedder, open_session
    from chunkmark.service.labels import interchange

    console = Console(stderr=True, soft_wrap=True, highlight=False, markup=False)
    for tool, source, target in (
        ("label-studio", import_label_studio, export_label_studio),
        ("argilla", import_argilla, export_argilla),
    ):
        if source is not None or target is not None:
            interchange(tool, folder, max_chars, source, target, console.print)
    if export_label_studio is not None or export_argilla is not None:
        return
    session = open_session(
        folder,
        embedder=build_embedder(embedder, cache_dir, no_cache),
        queries=queries,
        column=column,
        chunkers=tuple(chunker or DEFAULT_CHUNKERS),
        rankers=tuple(ranker or RANKERS),
        passage_chars=passage_chars,
        max_chars=max_chars,
        progress=console.print,
    )
    counts = session.store.counts()
    console.print(
        f"{len(session.pool.documents)} documents, {counts.answered} questions labeled, "
        f"{counts.unanswered} not answered, {len(session.queries)} queries to step through"
    )

    def listening(address: str) -> None:
        console.print(f"labeling {session.folder} at {address} (Ctrl-C to stop)")
        if not no_browser:
            webbrowser.open(address)

    serve(create_app(session), port, listening)
