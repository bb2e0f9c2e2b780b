"""``chunkmark synth generate``: questions with exact excerpts about your documents, by an LLM."""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from chunkmark.cli import options

if TYPE_CHECKING:
    from chunkmark.costs.llm_prices import LLMPrices as PriceTable
    from chunkmark.costs.prices import Price
    from chunkmark.llm import LLM
    from chunkmark.synth.generate import Estimate, GenerationReport, SlotOutcome

GENERATE_HELP = "\n\n".join(
    [
        "Generate questions whose answers are exact excerpts of your documents.",
        "CORPUS is a folder of .md and .txt files (one document each; subfolders are not "
        "read), a folder with corpora/*.md|*.txt (what 'chunkmark datasets import' writes, "
        "also from PDF, HTML and Word) or any dataset folder (its questions are ignored). The "
        "plan of windows (documents "
        "weighted by length, windows spread over each document) and styles is drawn from "
        "--seed; one request per question asks the LLM for a question and the passages that "
        "answer it, which become character spans. An unusable answer is asked again with what "
        "was wrong, at most 3 times, then the window is skipped and counted.",
        "Writes a dataset to OUT (documents first, then each accepted question as it comes) and "
        "OUT/manifest.json (LLM, prompt version, seed, options, plan, counts of every stage). "
        "--max-cost stops cleanly before the request that would take this run's cost past it; "
        "--prices adds to the LLM price table. "
        "Running the same command again continues where it stopped; answers already received "
        "come from the LLM cache, so nothing is paid twice. See docs/synth.md.",
    ]
)


class ExcerptMode(str, Enum):
    """How passages become spans."""

    exact = "exact"
    approximate = "approximate"
    given = "given"


class EvidenceSize(str, Enum):
    """The passage size asked for without examples."""

    sentence = "sentence"
    passage = "passage"
    section = "section"


class CandidatePick(str, Enum):
    """Which candidate question of a given-mode answer is kept."""

    auto = "auto"
    first = "first"
    specific = "specific"
    examples = "examples"


class Layout(str, Enum):
    """The dataset layout written."""

    jsonl = "jsonl"
    chroma = "chroma"


def register(group: typer.Typer) -> None:
    """Add ``generate`` to the ``synth`` command group."""
    group.command("generate", help=GENERATE_HELP)(options.grouped(generate_command))


Corpus = Annotated[
    str,
    typer.Argument(
        help="Folder of .md/.txt files, corpus folder (corpora/*.md|*.txt) or dataset folder.",
        show_default=False,
    ),
]
LLMSpec = Annotated[
    str,
    typer.Option(
        "--llm",
        help="LLM spec, e.g. \"openai(model='gpt-4o-mini')\" or "
        "\"anthropic(model='claude-haiku-4-5')\".",
        show_default=False,
    ),
]
Out = Annotated[Path, options.out_folder("Dataset folder to write (or to continue).")]
Questions = Annotated[int, typer.Option(help="Questions to generate.")]
Seed = Annotated[int, typer.Option(help="Seed of the plan and of the LLM requests.")]
WindowChars = Annotated[int, typer.Option(help="Characters of document the LLM sees per question.")]
WindowQuestions = Annotated[
    int,
    typer.Option(
        help="Questions asked in a row about each window (a local llama.cpp server then reads "
        "the window once from its prompt cache).",
    ),
]
Excerpts = Annotated[
    ExcerptMode,
    typer.Option(
        "--excerpts",
        help="exact: the LLM copies passages, located in the text; approximate: it cites "
        "numbered ~100-character pieces; given: chunkmark picks each passage (whole sentences, "
        "sized like the examples' evidence or --evidence, else 300-1,200 characters, at most "
        "--window-chars) and the LLM writes candidate questions it answers (three, "
        "--candidates), of which --pick keeps one that is not a repeat.",
    ),
]
Styles = Annotated[
    list[str] | None,
    typer.Option(
        "--style",
        help="Question style, repeatable or a comma list: factoid, multi (two passages), "
        "paraphrased (no four words in a row from the passage). [default: factoid, or the "
        "examples' mix when they say their kind]",
        show_default=False,
    ),
]
Examples = Annotated[
    Path | None,
    typer.Option(
        help="Real questions that steer the generation: JSONL (a 'question' per line, with or "
        "without 'excerpts', as chunkmark label and dataset folders write it) or one question a "
        "line. A few are shown per window as examples of style (never asked again); their "
        "evidence lengths size the passages asked for.",
    ),
]
Evidence = Annotated[
    EvidenceSize | None,
    typer.Option(
        help="Size of the passage asked for when the examples give no evidence: sentence "
        "(60-300 characters), passage (300-1,200) or section (1,200-4,000).",
        show_default=False,
    ),
]
FilterDocuments = Annotated[
    bool,
    typer.Option(
        "--filter-documents",
        help="First ask the LLM whether each document is relevant and complete (one request "
        "a document); plan questions only about those. Counts go to the manifest.",
    ),
]
LayoutOption = Annotated[
    Layout, typer.Option(help="jsonl: documents.jsonl + questions.jsonl; chroma: corpora/ + CSV.")
]
Concurrency = Annotated[
    int | None,
    typer.Option(
        help="Requests in flight at once (across documents; a document's questions are "
        "asked in order). Replaces the LLM spec's concurrency; default: the spec's (1 for "
        "a server on this machine, 4 otherwise).",
        show_default=False,
    ),
]
DryRun = Annotated[
    bool,
    typer.Option("--dry-run", help="Print the requests, tokens and estimated cost; ask nothing."),
]
MinExcerptChars = Annotated[int, typer.Option(help="Shortest excerpt accepted, in characters.")]
JsonSchema = Annotated[
    bool,
    typer.Option(
        "--json-schema/--no-json-schema",
        help="Ask for structured JSON output where the provider has it (OpenAI).",
    ),
]
Pick = Annotated[
    CandidatePick,
    typer.Option(
        "--pick",
        help="--excerpts given: which candidate question of an answer is kept: first (the first "
        "that is not a repeat), specific (of those, the one whose words best single out its "
        "passage: BM25 over the document's stretches of the passage's length ranks the "
        "passage furthest ahead) or examples (one that singles out its passage, or one that "
        "does not, as often as the examples' questions single out their evidence in their "
        "documents; needs --examples with excerpt offsets). auto: examples when some "
        "example's evidence lies in the corpus, else first.",
    ),
]


Candidates = Annotated[
    int,
    typer.Option(
        "--candidates",
        help="--excerpts given: questions the LLM writes per answer, of which --pick keeps "
        "one (1-8). More cost a few output tokens each and leave fewer answers whose every "
        "candidate repeats an earlier question: for many questions on few documents.",
    ),
]


def generate_command(
    *,
    corpus: Corpus,
    llm: LLMSpec,
    out: Out,
    questions: Questions = 50,
    seed: Seed = 0,
    window_chars: WindowChars = 4000,
    window_questions: WindowQuestions = 1,
    excerpts: Excerpts = ExcerptMode.exact,
    style: Styles = None,
    examples: Examples = None,
    evidence: Evidence = None,
    filter_documents: FilterDocuments = False,
    layout: LayoutOption = Layout.jsonl,
    concurrency: Concurrency = None,
    spend: options.SpendFlags,
    dry_run: DryRun = False,
    min_excerpt_chars: MinExcerptChars = 20,
    json_schema: JsonSchema = True,
    pick: Pick = CandidatePick.auto,
    candidates: Candidates = 3,
    caches: options.CacheFlags,
    quiet: options.Quiet = False,
) -> None:
    from chunkmark.errors import LLMError
    from chunkmark.llm import build_llm
    from chunkmark.paths import resolve_cache_dir
    from chunkmark.synth import generate as engine

    steering = engine.read_examples(examples) if examples is not None else ()
    styles = engine.parse_styles(style) if style else engine.styles_of(steering) or ("factoid",)
    table = engine.load_prices(spend.price_file)
    client = build_llm(
        llm,
        cache_dir=None if caches.no_cache else resolve_cache_dir(caches.cache_dir),
        seed=seed,
        concurrency=concurrency,
    )
    settings: dict[str, Any] = {
        "questions": questions,
        "seed": seed,
        "window_chars": window_chars,
        "window_questions": window_questions,
        "mode": excerpts.value,
        "styles": styles,
        "examples": tuple(e.question for e in steering),
        "example_evidence": engine.evidence_lengths(steering),
        "example_docs": tuple(e.doc_id for e in steering),
        "example_spans": tuple(engine.evidence_span(e) for e in steering),
        "evidence": evidence.value if evidence is not None else None,
        "filter_documents": filter_documents,
        "layout": layout.value,
        "min_excerpt_chars": min_excerpt_chars,
        "json_schema": json_schema,
        "pick": pick.value,
        "candidates": candidates,
    }
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    if dry_run:
        found = engine.estimate(corpus, client, out, prices=table, **settings)
        _print_estimate(console, found, client, table, questions)
        return
    progress = None if quiet else _progress_printer(console, questions)
    try:
        report = engine.generate(
            corpus,
            client,
            out,
            concurrency=concurrency,
            max_cost=spend.max_cost,
            prices=table,
            progress=progress,
            **settings,
        )
    except LLMError:
        _print_written_so_far(console, out)
        raise
    _print_report(console, report)


def _progress_printer(console: Console, total: int) -> Callable[[SlotOutcome], None]:
    """A progress callback printing one short line per finished slot."""
    done = 0

    def show(outcome: SlotOutcome) -> None:
        nonlocal done
        done += 1
        slot = outcome.slot
        what = (
            f"accepted after {outcome.attempts} answer(s)"
            if outcome.accepted
            else f"skipped ({outcome.last_problem})"
        )
        console.print(f"[{done}/{total}] slot {slot.index} ({slot.doc_id}, {slot.style}): {what}")

    return show


def _print_estimate(
    console: Console, found: Estimate, llm: LLM, table: PriceTable, questions: int
) -> None:
    from chunkmark.synth import generate as engine

    console.print(
        f"dry run: {questions} questions planned, {found.slots} still to ask "
        f"({found.cached} answered in the cache): {found.calls} requests (up to "
        f"{found.calls * engine.MAX_ATTEMPTS} if every answer needs correcting), about "
        f"{found.input_tokens:,} prompt tokens (cl100k_base) and at most "
        f"{found.output_tokens:,} answer tokens."
    )
    if found.cost_usd is None or found.worst_cost_usd is None:
        raise engine.unknown_price(llm, table)
    price = engine.price_of(llm, table)
    console.print(
        f"estimated cost: ${found.cost_usd:.4f}, up to ${found.worst_cost_usd:.4f} if every "
        f"window needs {engine.MAX_ATTEMPTS} answers ({_rate(price, table)}). No request was made."
    )


def _rate(price: Price | None, table: PriceTable) -> str:
    """Where the price came from, in words."""
    from chunkmark.costs.llm_prices import LOCAL_FREE
    from chunkmark.costs.llm_prices import SHIPPED as SHIPPED_PRICES

    if price is None or price.source == "fake":
        return "the fake LLM costs nothing"
    if price.source == LOCAL_FREE:
        return (
            f"{price.model} is served from this machine: local, free unless --prices says otherwise"
        )
    rate = f"${price.input:g} / ${price.output:g} per 1M tokens for {price.model}"
    if price.source == SHIPPED_PRICES and table.date:
        return f"{rate}, list prices of {table.date}"
    return f"{rate}, from {price.source}"


def _print_report(console: Console, report: GenerationReport) -> None:
    from chunkmark.synth import generate as engine

    c = report.counts
    earlier = f"; {report.resumed} were written by an earlier run" if report.resumed else ""
    console.print(
        f"wrote {report.accepted} of {report.requested} questions to {report.out}{earlier}."
    )
    rejected = [f"{r} {c[r]}" for r in engine.REJECTIONS if c.get(r)]
    console.print(
        f"answers: {c['answers']}, rejected {sum(c[r] for r in engine.REJECTIONS)}"
        f"{' (' + ', '.join(rejected) + ')' if rejected else ''}; excerpts placed after "
        f"normalising: {c['normalised']}; ambiguous: {c['ambiguous']}; windows skipped: "
        f"{c['windows_skipped']}."
    )
    if c.get("duplicate"):
        stages = ", ".join(
            f"{s.removeprefix('duplicate_')} {c[s]}" for s in engine.DUPLICATE_STAGES
        )
        console.print(f"duplicates by stage: {stages}.")
    judged = report.document_filter
    if judged is not None:
        console.print(
            f"document filter: {judged['judged']} judged; relevant yes {judged['relevant']['yes']}"
            f" no {judged['relevant']['no']}; complete yes {judged['complete']['yes']} no "
            f"{judged['complete']['no']}; unclear {judged['unclear']}; "
            f"{len(judged['dropped'])} left out."
        )
    stats = report.llm
    cost = "" if report.cost_usd is None else f", ${report.cost_usd:.4f}"
    console.print(
        f"LLM this run: {stats.requests} requests ({stats.retries} retried), "
        f"{stats.cache_hits} answers from the cache, {stats.input_tokens:,} input and "
        f"{stats.output_tokens:,} output tokens{cost}."
    )
    for line in report.shortfall():
        console.print(line)
    if report.stopped is not None:
        console.print(f"stopped: {report.stopped}")
        console.print("Run the same command again to continue.")


def _print_written_so_far(console: Console, out: Path) -> None:
    """After a failure of the LLM: how many questions the folder holds."""
    try:
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        accepted = int(manifest["counts"]["accepted"])
    except (OSError, ValueError, KeyError, TypeError):
        return
    console.print(
        f"{accepted} questions are written in {out}; fix the problem below and run the same "
        "command again to continue."
    )
