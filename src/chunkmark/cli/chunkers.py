"""``chunkmark chunkers`` / ``chunkmark embedders`` (list components) and ``chunkmark chunk``
(chunk one file)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from chunkmark.chunkers import CHUNKERS, Chunk, ChunkerContext, chunk_document
from chunkmark.errors import DatasetError, SpecError
from chunkmark.specs import Entry, Registry
from chunkmark.tokenizers import count_tokens

_PREVIEW_CHARS = 60


def register(app: typer.Typer) -> None:
    """Add the ``chunkers``, ``embedders``, ``retrieval`` and ``chunk`` commands to the app."""
    app.command("chunkers")(list_chunkers)
    app.command("embedders")(list_embedders)
    app.command("retrieval")(list_retrieval)
    app.command("chunk")(chunk_file)


def list_chunkers() -> None:
    """List the registered chunkers, their parameters and what they do."""
    Console().print(_registry_table("Chunkers", CHUNKERS))


def list_embedders() -> None:
    """List the registered embedders, their parameters and what they do."""
    from chunkmark.embedders import EMBEDDERS

    Console().print(_registry_table("Embedders", EMBEDDERS))


def list_retrieval() -> None:
    """List the retrieval settings (run's --retrieval) and the rankers they read."""
    from chunkmark.retrieval import RETRIEVAL, RETRIEVERS

    console = Console()
    console.print(_registry_table("Retrieval settings", RETRIEVAL))
    console.print(_registry_table("Rankers (what the settings read)", RETRIEVERS))


def _registry_table(title: str, registry: Registry[Any]) -> Table:
    table = Table(title=title, show_lines=True)
    table.add_column("name", style="bold")
    table.add_column("parameters")
    table.add_column("summary")
    for entry in registry:
        labels = entry.traits.labels()
        summary = f"{entry.summary} [{', '.join(labels)}]" if labels else entry.summary
        table.add_row(entry.name, Text(_describe_parameters(entry)), Text(summary))
    return table


def chunk_file(
    file: Annotated[Path, typer.Argument(help="A UTF-8 text file.", show_default=False)],
    chunker: Annotated[
        str,
        typer.Option(
            "--chunker",
            "-c",
            help="Chunker spec, e.g. 'fixed_tokens(size=200, overlap=0)'.",
            show_default=False,
        ),
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help='Print only a JSON list of {"start", "end"}.')
    ] = False,
    embedder: Annotated[
        str,
        typer.Option(
            "--embedder",
            "-e",
            help="Embedder spec for chunkers that embed (semantic chunkers); others ignore it.",
        ),
    ] = "sentence_transformers",
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            help="Cache folder for embeddings and LLM answers "
            "[default: $CHUNKMARK_CACHE_DIR or the user cache folder].",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Chunk one file and show its chunks (character offsets into the file's text)."""
    from chunkmark.embedders import EMBEDDERS
    from chunkmark.embedders.cache import CachedEmbedder, EmbeddingCache, resolve_cache_dir

    folder = resolve_cache_dir(cache_dir)
    inner, _ = EMBEDDERS.build(embedder)  # cheap: models load on first use
    context = ChunkerContext(
        embedder=CachedEmbedder(inner, EmbeddingCache(folder)), cache_dir=folder
    )
    fn, spec = CHUNKERS.build(chunker, context=context)
    text = read_text(file)
    chunks = chunk_document(fn, file.name, text)
    if as_json:
        typer.echo(json.dumps([{"start": c.start, "end": c.end} for c in chunks]))
        return
    _print_chunks(chunks, text, str(spec), file, spec.kwargs.get("encoding", "cl100k_base"))


def read_text(path: Path) -> str:
    """The text of a UTF-8 file, exactly as stored (no newline translation)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise DatasetError(f"Cannot read {path}: {reason}.", "Check the path.") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"{path} is not UTF-8 text (invalid byte at offset {exc.start}).",
            "Convert it to UTF-8, e.g. `iconv -f latin1 -t utf-8`.",
        ) from None


def _print_chunks(chunks: list[Chunk], text: str, spec: str, path: Path, encoding: Any) -> None:
    texts = [c.text(text) for c in chunks]
    try:
        tokens: list[int] | None = count_tokens(texts, str(encoding))
    except SpecError:  # the encoding cannot be loaded offline: show offsets only
        tokens = None
    table = Table(title=f"{spec} on {path.name}: {len(chunks)} chunks")
    for name in ("#", "start", "end") + (("tokens",) if tokens is not None else ()):
        table.add_column(name, justify="right")
    table.add_column("preview")
    for i, (chunk, chunk_text) in enumerate(zip(chunks, texts, strict=True)):
        row = [str(i), str(chunk.start), str(chunk.end)]
        if tokens is not None:
            row.append(str(tokens[i]))
        table.add_row(*row, Text(_preview(chunk_text)))
    Console().print(table)


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 1] + "…"


def _describe_parameters(entry: Entry[Any]) -> str:
    lines = []
    for p in entry.parameters():
        line = p.name
        if p.annotation is not inspect.Parameter.empty:
            line += f": {_type_name(p.annotation)}"
        if p.default is not inspect.Parameter.empty:
            line += f" = {p.default!r}"
        lines.append(line)
    return "\n".join(lines)


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type) and not getattr(annotation, "__args__", None):
        return annotation.__name__
    return str(annotation).replace("typing.", "")
