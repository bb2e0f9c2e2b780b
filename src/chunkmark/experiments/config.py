"""Experiment configuration: what the CLI flags or a YAML file describe."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from chunkmark.errors import ConfigError, SpecError
from chunkmark.metrics import Scoring

DEFAULT_DATASET = "demo"
DEFAULT_CHUNKERS = (
    "fixed_tokens(size=200, overlap=0)",
    "fixed_tokens(size=400, overlap=200)",
    "recursive(size=200, overlap=0)",
    "recursive(size=400, overlap=0)",
    "sentences(n=5, overlap=1)",
)
DEFAULT_EMBEDDERS = ('sentence_transformers(model="all-MiniLM-L6-v2")',)
DEFAULT_K: tuple[int | Literal["min"], ...] = (1, 3, 5, 10, "min")

KValue = int | Literal["min"]
MIN_K_CAP = 20  # ``k=min`` retrieves at most this many chunks per question


def parse_k(values: str | Sequence[str | int]) -> list[KValue]:
    """``"1,3,5,min"`` or a list -> validated k values (positive integers or ``"min"``)."""
    items = values.split(",") if isinstance(values, str) else list(values)
    out: list[KValue] = []
    for raw in items:
        text = str(raw).strip()
        if text == "min":
            value: KValue = "min"
        else:
            try:
                value = int(text)
            except ValueError:
                value = 0
            if value <= 0 or str(value) != text.lstrip("+"):
                raise ConfigError(
                    f"Invalid k value {text!r}.",
                    "Use positive integers or 'min', comma-separated, e.g. --k 1,3,5,10,min.",
                )
        if value not in out:
            out.append(value)
    if not out:
        raise ConfigError("No k values given.", "Use e.g. --k 1,3,5,10,min.")
    return out


def _zero_or_more(value: float | None) -> float | None:
    if value is not None and value < 0:
        raise ValueError("must be zero or more US dollars")
    return value


MaxCost = Annotated[float | None, AfterValidator(_zero_or_more)]  # a budget in US dollars


class ScoringGrid(BaseModel):
    """The scoring options a grid scores with (see :class:`chunkmark.metrics.Scoring`); a list
    under a key scores every cell each way, from the same rankings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    excerpts: tuple[Literal["position", "text"], ...] = ("position",)
    unit: tuple[Literal["chars", "tokens"], ...] = ("chars",)
    denominator: tuple[Literal["sum", "union"], ...] = ("sum",)

    @field_validator("excerpts", "unit", "denominator", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @field_validator("excerpts", "unit", "denominator")
    @classmethod
    def _non_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("give at least one value")
        return tuple(dict.fromkeys(value))

    def scorings(self) -> list[Scoring]:
        """Every combination as a :class:`~chunkmark.metrics.Scoring`."""
        return [
            Scoring(e, u, d) for e in self.excerpts for u in self.unit for d in self.denominator
        ]

    def combinations(self) -> list[dict[str, str]]:
        """Every combination, defaults first when they are listed first."""
        return [
            {"excerpts": e, "unit": u, "denominator": d}
            for e in self.excerpts
            for u in self.unit
            for d in self.denominator
        ]


class RayOptions(BaseModel):
    """How ``executor: ray`` runs: the cluster to join, the embedding actor pool, retries.

    ``address`` is passed to ``ray.init`` (``auto``: the running cluster; ``ray://host:10001``:
    a remote one; unset: a local Ray started for this run, unless this process already joined
    one). ``embed_actors`` caps the batch-inference actors per embedder (default: one per GPU
    when the cluster has GPUs, else one per four CPUs); API embedders always get one actor, so
    one client's retries and backoff pace every request. ``batch_min_texts``: requests with
    fewer texts to embed than this run in the driver (a batch-inference job costs seconds to
    start). ``max_retries``: how often a task whose worker died is run again before its cell is
    recorded as failed. ``resources``: custom resources every task and embedding actor asks
    for, so the work runs only on nodes that offer them (``ray start --resources
    '{"worker": 4}'``); when no live node offers them any more (the node was lost), the cells
    still waiting are recorded as failed instead of waiting for one to join.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str | None = None
    embed_actors: int | None = Field(default=None, ge=1)
    batch_min_texts: int = Field(default=1024, ge=1)
    max_retries: int = Field(default=2, ge=0)
    resources: dict[str, float] = Field(default_factory=dict)


class RecommendOptions(BaseModel):
    """What the run's recommendation reads (``recommend:`` in an experiment file; ``run
    --metric`` and ``--pick-retrieval`` override it): ``metric`` (default: recall at a
    ``token_budget`` setting, else IoU) and ``retrieval`` (one of the run's settings; default:
    its first ``token_budget`` setting, else ``top_k(k=5)``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: str | None = None
    retrieval: str | None = None

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str | None) -> str | None:
        from chunkmark.metrics import METRICS

        if value is not None and value not in METRICS:
            raise ValueError(f"{value!r} is not a metric: use one of {', '.join(METRICS.names())}")
        return value


class AnswerOptions(BaseModel):
    """Answer scoring (``answers:`` in an experiment file; ``docs/answers.md``): ``llm`` answers
    each question that has reference answers or a label from the context retrieved at
    ``setting`` (one of the run's retrieval settings; default the first); answers are scored
    against the references (token F1, exact match, label accuracy) and, with ``judge`` (a
    second LLM spec), judged for correctness and faithfulness. ``baseline`` also answers from
    the whole document where its prompt plus ``max_tokens`` fits ``context_window`` tokens
    (``cl100k_base``). ``questions`` caps the questions answered per dataset (a seeded sample);
    ``max_tokens`` is the answer's length limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    llm: str
    setting: str | None = None
    judge: str | None = None
    baseline: bool = True
    context_window: int = Field(default=8192, ge=256)
    max_tokens: int = Field(default=64, ge=1)
    questions: int | None = Field(default=None, ge=1)

    @field_validator("llm", "judge")
    @classmethod
    def _llm_spec(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from chunkmark.llm import LLMS

        return str(LLMS.resolve(value))

    @field_validator("setting")
    @classmethod
    def _setting(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from chunkmark.retrieval import RETRIEVAL

        return str(RETRIEVAL.resolve(value))

    def named(self) -> AnswerOptions:
        """These options as results name them: the LLM and judge specs without their transport
        parameters (timeout, retries, concurrency), which cannot change an answer."""
        from chunkmark.llm import identity_spec

        judge = None if self.judge is None else identity_spec(self.judge)
        return self.model_copy(update={"llm": identity_spec(self.llm), "judge": judge})


class ExperimentConfig(BaseModel):
    """A grid: datasets x chunkers x embedders x retrieval settings x scoring options.

    ``chunkers``, ``embedders`` and ``retrieval`` hold spec strings, and a list where a
    parameter takes one value is a grid (``fixed_tokens(size=[200, 400], overlap=[0, 0.25])``,
    ``zip(...)`` to pair lists; see :mod:`chunkmark.experiments.grid`); they are stored
    expanded and canonical. ``retrieval`` defaults to ``top_k`` at every ``k``; give one or the
    other. ``dataset`` (one) is accepted for ``datasets``.

    From Python, a ``chunkers`` item may also be a splitter object (a LangChain
    ``TextSplitter``, a LlamaIndex ``NodeParser``, a chonkie chunker, anything with
    ``split_text(str) -> list[str]``, or what ``from_splitter`` returns): it is registered for
    this process and replaced by the spec ``splitter(key='<ClassName>-<config hash>')`` (see
    :func:`chunkmark.chunkers.adapters.register_splitter`). The key depends only on the
    object's class and configuration, so results name it the same way in every run and a
    rerun into the same ``out`` folder resumes its cells.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    datasets: tuple[str, ...] = (DEFAULT_DATASET,)
    chunkers: tuple[str, ...] = DEFAULT_CHUNKERS
    embedders: tuple[str, ...] = DEFAULT_EMBEDDERS
    retrieval: tuple[str, ...] | None = None
    k: tuple[int | Literal["min"], ...] = DEFAULT_K
    scoring: ScoringGrid = ScoringGrid()
    out: Path | None = None
    cache_dir: Path | None = None
    no_cache: bool = False
    seed: int = 0
    report: bool = True  # write OUT/report.html at the end of the run
    max_cost: MaxCost = None  # refuse to start when the plan's estimate in USD exceeds it
    prices: dict[str, Any] | None = None  # overrides of the package's price tables (see plan)
    price_file: Path | None = None  # --prices FILE: entries over the tables and ``prices``
    executor: Literal["local", "ray"] = "local"  # where cells run (results are identical)
    ray: RayOptions = RayOptions()
    answers: AnswerOptions | None = None  # answer the questions from what was retrieved
    recommend: RecommendOptions = RecommendOptions()  # what the recommendation reads

    @model_validator(mode="after")
    def _recommend_setting(self) -> ExperimentConfig:
        asked = self.recommend.retrieval
        if asked is None:
            return self
        from chunkmark.errors import ChunkmarkError
        from chunkmark.retrieval.names import match_retrieval

        settings = self.retrieval_specs()
        try:
            found = match_retrieval(asked, settings)
        except ChunkmarkError:
            raise ValueError(
                f"recommend.retrieval {asked!r} is not one of the run's retrieval settings "
                f"({', '.join(settings)}): add it to `retrieval`, or pick one of them"
            ) from None
        if found != asked:
            update = {"retrieval": found}
            object.__setattr__(self, "recommend", self.recommend.model_copy(update=update))
        return self

    @model_validator(mode="after")
    def _answer_setting(self) -> ExperimentConfig:
        if self.answers is None:
            return self
        settings = self.retrieval_specs()
        if self.answers.setting is None:
            options = self.answers.model_copy(update={"setting": settings[0]})
            object.__setattr__(self, "answers", options)
        elif self.answers.setting not in settings:
            raise ValueError(
                f"answers.setting {self.answers.setting!r} is not one of the run's retrieval "
                f"settings ({', '.join(settings)}): add it to `retrieval`, or pick one of them"
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        values = dict(values)
        if "dataset" in values:
            if "datasets" in values:
                raise ValueError("give `datasets` (a list) or `dataset` (one), not both")
            values["datasets"] = values.pop("dataset")
        if values.get("retrieval") is not None and "k" in values:
            raise ValueError(
                "give `retrieval` or `k`, not both: put the depths in the retrieval list, "
                "e.g. top_k(k=[1, 5, 10])"
            )
        return values

    @field_validator("datasets", "chunkers", "embedders", "retrieval", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, (str, Path)) else value

    @field_validator("datasets", mode="before")
    @classmethod
    def _dataset_names(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return tuple(str(v) for v in value)
        return value

    @field_validator("chunkers", mode="before")
    @classmethod
    def _splitter_objects(cls, value: Any) -> Any:
        items = value if isinstance(value, (list, tuple)) else (value,)
        if all(isinstance(item, str) for item in items):
            return value
        from chunkmark.chunkers.adapters import register_splitter

        specs = []
        for i, item in enumerate(items):
            if isinstance(item, str):
                specs.append(item)
                continue
            if isinstance(item, dict):
                raise ValueError(
                    f"item {i} is a mapping, not a spec string: in YAML, quote a spec that "
                    "holds ': ', e.g. \"langchain(options={'keep_separator': True})\""
                )
            try:
                specs.append(register_splitter(item))
            except TypeError as exc:
                raise ValueError(
                    f"item {i} is neither a spec string nor a splitter object: {str(exc).rstrip('.')}"
                ) from None
        return tuple(specs)

    @field_validator("k", mode="before")
    @classmethod
    def _parse_k(cls, value: Any) -> Any:
        if isinstance(value, (str, int)):
            value = str(value)
        return tuple(parse_k(value))

    @field_validator("scoring", mode="before")
    @classmethod
    def _scoring(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("datasets", "chunkers", "embedders", "retrieval")
    @classmethod
    def _non_empty(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and not value:
            raise ValueError("give at least one")
        return value

    @field_validator("chunkers")
    @classmethod
    def _expand_chunkers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from chunkmark.chunkers import CHUNKERS

        return _expand(value, CHUNKERS)

    @field_validator("embedders")
    @classmethod
    def _expand_embedders(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from chunkmark.embedders import EMBEDDERS

        return _expand(value, EMBEDDERS)

    @field_validator("retrieval")
    @classmethod
    def _expand_retrieval(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        from chunkmark.retrieval import RETRIEVAL

        return None if value is None else _expand(value, RETRIEVAL)

    def retrieval_specs(self) -> tuple[str, ...]:
        """The retrieval settings, canonical: ``retrieval`` or, by default, ``top_k`` at each k."""
        if self.retrieval is not None:
            return self.retrieval
        from chunkmark.retrieval import RETRIEVAL

        return tuple(str(RETRIEVAL.resolve(f"top_k(k={k!r})")) for k in self.k)


def _expand(value: tuple[str, ...], registry: Any) -> tuple[str, ...]:
    """Expanded, canonical specs; a bad spec raises its SpecError (pydantic lets it through,
    and :func:`make_config` adds where it was written)."""
    from chunkmark.experiments.grid import expand_specs

    return expand_specs(value, registry)


KEYS = tuple(ExperimentConfig.model_fields)
ALIASES = {"dataset": "datasets", "chunker": "chunkers", "embedder": "embedders"}


def read_experiment(path: Path) -> dict[str, Any]:
    """An experiment file's mapping, every key checked: an unknown key is an error naming the
    key, the file and the line, with the nearest valid key."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"Experiment file {path} does not exist.", "Check the path.") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"Cannot read experiment file {path}: it is not UTF-8 ({exc.reason} at byte {exc.start}).",
            "Save it as UTF-8.",
        ) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        _unreadable_flow_list(path, text, exc)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(
            f"Cannot read experiment file {path}: {first}.", "Fix the YAML syntax."
        ) from None
    if not isinstance(raw, dict):
        raise ConfigError(
            f"Experiment file {path} is not a mapping.", "Write keys like `datasets: [demo]`."
        )
    lines = _key_lines(node)
    _rejoin_flow_lists(path, text, node, raw)
    for key in raw:
        if key in KEYS or key in ALIASES:
            continue
        near = difflib.get_close_matches(str(key), [*KEYS, *ALIASES], n=1)
        hint = f"Did you mean {near[0]!r}? " if near else ""
        raise ConfigError(
            f"Unknown key {key!r} in {path}, line {lines.get(str(key), '?')}.",
            f"{hint}Valid keys: {', '.join(KEYS)}.",
        )
    for singular, plural in (("chunker", "chunkers"), ("embedder", "embedders")):
        if singular in raw and plural not in raw:
            raw[plural] = raw.pop(singular)
    raw["__lines__"] = lines
    return raw


# Keys whose values are spec strings (or dataset names): YAML splits a flow list such as
# ``chunkers: [fixed_tokens(size=400, overlap=0), recursive(size=200)]`` at every comma, the
# ones inside a spec's parentheses included.
SPEC_KEYS = ("datasets", "dataset", "chunkers", "chunker", "embedders", "embedder", "retrieval")


def _flow_list_fix(key: str) -> str:
    return (
        f'Quote each spec, e.g. {key}: ["fixed_tokens(size=400, overlap=0)", '
        f'"recursive(size=200)"], or write one `- spec` per line under `{key}:`.'
    )


def _rejoin_flow_lists(path: Path, text: str, node: yaml.Node | None, raw: dict[str, Any]) -> None:
    """Put back together the specs YAML split at the commas inside their parentheses, in the
    flow lists (``[a, b]``) of :data:`SPEC_KEYS`; a list whose pieces do not rejoin into
    balanced specs is a ConfigError naming the file, the key and how to write it."""
    if not isinstance(node, yaml.MappingNode):
        return
    for key_node, value_node in node.value:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        if key not in SPEC_KEYS or not isinstance(value_node, yaml.SequenceNode):
            continue
        if not value_node.flow_style or not value_node.value:
            continue
        pieces = value_node.value
        if not all(isinstance(p, yaml.ScalarNode) for p in pieces):
            continue  # nested lists or mappings: the config's own checks report them
        groups = split_groups([None if p.style else p.value for p in pieces])
        if groups is None:
            raise ConfigError(
                f"Cannot read `{key}` in {path}, line {key_node.start_mark.line + 1}: YAML "
                "splits a [...] list at every comma, also inside a spec's parentheses, and "
                "these pieces do not rejoin into whole specs.",
                _flow_list_fix(key),
            )
        if all(len(g) == 1 for g in groups):
            continue
        items = raw[key]
        raw[key] = [
            # A rejoined spec is the text as written from its first piece to its last.
            text[pieces[g[0]].start_mark.index : pieces[g[-1]].end_mark.index]
            if len(g) > 1
            else items[g[0]]
            for g in groups
        ]


@dataclass
class Nesting:
    """Where a spec's text stands, read one character at a time: how many parentheses and
    brackets are open, and the quote it is inside ("" for none)."""

    depth: int = 0
    quote: str = ""

    def read(self, ch: str) -> bool:
        """Read ``ch``; True when it stands outside every quote and bracket and is neither."""
        if self.quote:
            self.quote = "" if ch == self.quote else self.quote
        elif ch in "'\"":
            self.quote = ch
        elif ch in "([{":
            self.depth += 1
        elif ch in ")]}":
            self.depth -= 1
        else:
            return self.depth == 0
        return False


def split_groups(pieces: Sequence[str | None]) -> list[list[int]] | None:
    """The items of a YAML flow list grouped into whole specs: each group's pieces, joined by
    the commas YAML split them at, leave no parenthesis or bracket open (quoted text inside
    them is skipped); a quoted item (None) is whole. None when they cannot be grouped: a piece
    closes what was never opened, a quoted item falls inside an open spec, or the last spec
    stays open."""
    groups: list[list[int]] = []
    current: list[int] = []
    nesting = Nesting()
    for i, piece in enumerate(pieces):
        if piece is None:
            if current:
                return None
            groups.append([i])
            continue
        current.append(i)
        for ch in piece:
            nesting.read(ch)
            if nesting.depth < 0:
                return None
        if nesting.depth == 0 and not nesting.quote:
            groups.append(current)
            current = []
    return None if current else groups


def _unreadable_flow_list(path: Path, text: str, exc: yaml.YAMLError) -> None:
    """A ConfigError for a spec with ``[`` or ``{`` inside an unquoted ``[...]`` list of
    :data:`SPEC_KEYS` (YAML cannot read it); nothing for other YAML errors."""
    mark = getattr(exc, "context_mark", None)
    if getattr(exc, "context", None) != "while parsing a flow sequence" or mark is None:
        return
    lines = text.splitlines()
    for number in range(min(mark.line, len(lines) - 1), -1, -1):
        found = re.match(r"\s*(?:-\s+)?([A-Za-z_]\w*)\s*:", lines[number])
        if found is None:
            continue
        key = found.group(1)
        if key in SPEC_KEYS:
            raise ConfigError(
                f"Cannot read `{key}` in {path}, line {number + 1}: YAML cannot read a spec "
                "holding [ or { inside an unquoted [...] list.",
                _flow_list_fix(key),
            ) from None
        return


def _key_lines(node: yaml.Node | None) -> dict[str, int]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {
        str(key.value): key.start_mark.line + 1
        for key, _ in node.value
        if isinstance(key, yaml.ScalarNode)
    }


def _failing_key(values: dict[str, Any]) -> str | None:
    """Which spec list of ``values`` holds the bad spec."""
    from chunkmark.chunkers import CHUNKERS
    from chunkmark.embedders import EMBEDDERS
    from chunkmark.retrieval import RETRIEVAL

    for key, registry in (
        ("chunkers", CHUNKERS),
        ("embedders", EMBEDDERS),
        ("retrieval", RETRIEVAL),
    ):
        value = values.get(key)
        if isinstance(value, str):
            value = (value,)
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            continue
        try:
            _expand(tuple(value), registry)
        except SpecError:
            return key
    return None


def load_config(path: Path, overrides: dict[str, Any] | None = None) -> ExperimentConfig:
    """Read an experiment YAML file; ``overrides`` (from CLI flags) win over the file."""
    raw = read_experiment(path)
    lines = raw.pop("__lines__")
    overrides = dict(overrides or {})
    if "datasets" in overrides:
        raw.pop("dataset", None)
    if "k" in overrides and "retrieval" not in overrides:
        raw.pop("retrieval", None)
    if "retrieval" in overrides:
        raw.pop("k", None)
    if "k" in raw and "retrieval" in raw and not {"k", "retrieval"} & set(overrides):
        raise ConfigError(
            f"{path} gives both `k` (line {lines.get('k', '?')}) and `retrieval` (line "
            f"{lines.get('retrieval', '?')}): `k` sets the depths of the default top_k "
            "retrieval, and `retrieval` replaces that default.",
            "Put the depths in the retrieval list, e.g. top_k(k=[1, 5, 10]), and drop `k`.",
        )
    raw.update(overrides)
    return make_config(raw, source=str(path), lines=lines)


def make_config(
    values: dict[str, Any], source: str = "options", lines: dict[str, int] | None = None
) -> ExperimentConfig:
    try:
        return ExperimentConfig(**values)
    except SpecError as exc:
        key = _failing_key(values)
        if lines is None or key not in lines:
            raise
        raise SpecError(f"{exc.problem} ({source}, line {lines[key]})", exc.fix) from None
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(x) for x in err["loc"]]
        where = ".".join(loc) or "config"
        msg = err["msg"].removeprefix("Value error, ")
        line = (lines or {}).get(loc[0]) if loc else None
        at = f"{source}, line {line}" if line else source
        if not loc:  # a check across keys: its message says what to change
            raise ConfigError(f"Invalid experiment in {at}: {msg}.") from None
        raise ConfigError(
            f"Invalid experiment setting {where!r} in {at}: {msg}.",
            f"Valid keys: {', '.join(KEYS)}.",
        ) from None


def run_config(config: ExperimentConfig | None, options: dict[str, Any]) -> ExperimentConfig:
    """The config a run of ``evaluate(config, **options)`` uses: ``config`` with ``options`` on
    top, or ``options`` alone when there is no config."""
    if config is None:
        return make_config(options)
    if options:
        return make_config({**config.model_dump(exclude_unset=True), **options})
    return config
