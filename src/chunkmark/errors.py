"""Exception types. Every error says what is wrong and how to fix it."""

from __future__ import annotations


class ChunkmarkError(Exception):
    """Base class for every error chunkmark raises on purpose.

    ``str(err)`` is one line: the problem, then the fix.
    """

    def __init__(self, problem: str, fix: str | None = None) -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(problem if fix is None else with_fix(problem, fix))


def with_fix(problem: str, fix: str) -> str:
    """``problem`` then ``fix`` as one line: ``"<problem>. Fix: <fix>"``, the problem ending
    its sentence first (a message built from a library's words, "... got 128", has no stop)."""
    problem = problem.rstrip()
    if not problem.endswith((".", "!", "?", ":")):
        problem += "."
    return f"{problem} Fix: {fix}"


class DatasetError(ChunkmarkError):
    """A dataset file is missing, unreadable or inconsistent."""


class SpecError(ChunkmarkError):
    """A component spec string is malformed, names an unknown component or a bad parameter."""


class ConfigError(ChunkmarkError):
    """An experiment setting (k values, paths, YAML file) is invalid."""


class ChunkingError(ChunkmarkError):
    """A chunker produced output that is not a valid list of spans."""


class EmbeddingError(ChunkmarkError):
    """An embedding model could not be loaded or an embedding call failed."""


class MissingDependencyError(ChunkmarkError):
    """An optional dependency is not installed (``extra``: chunkmark's extra that installs it;
    empty for a plugin's dependency, installed by itself)."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the '{package}' package, which is not installed.",
            f"pip install 'chunkmark[{extra}]'" if extra else f"pip install '{package}'",
        )
        self.package = package
        self.extra = extra


class LLMError(ChunkmarkError):
    """An LLM client is misconfigured, its endpoint failed, or it gave an unusable answer."""
