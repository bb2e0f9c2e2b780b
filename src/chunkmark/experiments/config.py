"""Experiment configuration: what the CLI flags or a YAML file describe."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml
from pydantic import BaseModel, ConfigDict, field_validator

from chunkmark.errors import ConfigError

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


class ExperimentConfig(BaseModel):
    """A grid: one dataset x chunkers x embedders, scored at every k.

    ``chunkers`` holds spec strings. From Python, an item may also be a splitter object
    (a LangChain ``TextSplitter``, a LlamaIndex ``NodeParser``, a chonkie chunker, anything with
    ``split_text(str) -> list[str]``, or what ``from_splitter`` returns): it is registered for
    this process and replaced by the spec ``splitter(key='<ClassName>-<config hash>')`` (see
    :func:`chunkmark.chunkers.adapters.register_splitter`). The key depends only on the
    object's class and configuration, so results name it the same way in every run and a
    rerun into the same ``out`` folder resumes its cells.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str = DEFAULT_DATASET
    chunkers: tuple[str, ...] = DEFAULT_CHUNKERS
    embedders: tuple[str, ...] = DEFAULT_EMBEDDERS
    k: tuple[int | Literal["min"], ...] = DEFAULT_K
    out: Path | None = None
    cache_dir: Path | None = None
    no_cache: bool = False
    seed: int = 0
    report: bool = True  # write OUT/report.html at the end of the run

    @field_validator("chunkers", "embedders", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

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

    @field_validator("chunkers", "embedders")
    @classmethod
    def _non_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("give at least one spec")
        return value


def load_config(path: Path, overrides: dict[str, Any] | None = None) -> ExperimentConfig:
    """Read an experiment YAML file; ``overrides`` (from CLI flags) win over the file."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(f"Experiment file {path} does not exist.", "Check the path.") from None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(
            f"Cannot read experiment file {path}: {first}.", "Fix the YAML syntax."
        ) from None
    if not isinstance(raw, dict):
        raise ConfigError(
            f"Experiment file {path} is not a mapping.", "Write keys like `dataset: demo`."
        )
    for singular, plural in (("chunker", "chunkers"), ("embedder", "embedders")):
        if singular in raw and plural not in raw:
            raw[plural] = raw.pop(singular)
    raw.update(overrides or {})
    return make_config(raw, source=str(path))


def make_config(values: dict[str, Any], source: str = "options") -> ExperimentConfig:
    try:
        return ExperimentConfig(**values)
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "config"
        msg = err["msg"].removeprefix("Value error, ")
        raise ConfigError(
            f"Invalid experiment setting {where!r} in {source}: {msg}.",
            "Valid keys: dataset, chunkers, embedders, k, out, cache_dir, no_cache, seed, report.",
        ) from None
