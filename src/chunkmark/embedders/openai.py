"""OpenAI and OpenAI-compatible embedding endpoints, through the official ``openai`` SDK.

Requests stay inside the API's limits: at most ``batch_size`` (2048) inputs and
``max_request_tokens`` (300,000) tokens per request, every input at most ``max_input_tokens``
(8191) tokens, counted with ``cl100k_base`` (the encoding of OpenAI's embedding models). Longer
inputs are cut token-wise to the limit and counted in ``stats()["truncated"]``. The API rejects
empty strings, so an empty input is sent as a single space (counted as ``empty_inputs``).

There is one retry layer, the one every remote client shares (:mod:`chunkmark.remote`; the
SDK's own retries are switched off): exponential backoff with jitter on 429, 408, 409, 5xx,
connection errors and timeouts, waiting at least what a ``retry-after-ms`` / ``retry-after``
header asks. 400, 401, 403, 404 and 422 fail at once with an
:class:`~chunkmark.errors.EmbeddingError` naming the status and the fix. The API key is read from
the environment and never appears in messages, logs or the identity.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from chunkmark.counters import EmbedderStats
from chunkmark.embedders.base import EMBEDDERS, FloatArray, Kind, l2_normalise
from chunkmark.errors import EmbeddingError
from chunkmark.remote import RemoteClient, Wording
from chunkmark.specs import class_factory
from chunkmark.tokenizers import truncate_tokens

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASE_URL_ENV = "OPENAI_BASE_URL"
TOKEN_ENCODING = "cl100k_base"
MAX_BATCH_INPUTS = 2048
MAX_REQUEST_TOKENS = 300_000
MAX_INPUT_TOKENS = 8191

# Output sizes of OpenAI's own models (used only to shape an empty result without a request).
KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class PreparedInput(NamedTuple):
    """One model input as it will be sent."""

    text: str
    tokens: int
    truncated: bool
    empty: bool


class OpenAIEmbedder(RemoteClient):
    """OpenAI embedding models, or any OpenAI-compatible endpoint given by base_url.

    The key is read from the environment variable ``api_key_env``; ``base_url`` defaults to
    ``$OPENAI_BASE_URL``, else OpenAI. ``dimensions`` shortens text-embedding-3 vectors. Requests
    are batched within the API limits and retried with backoff on 429/5xx; inputs longer than
    ``max_input_tokens`` are truncated and counted.

    Its ``__init__`` parameters but :data:`EXCLUDED` (the retry backoff and a ``sleep`` hook,
    for tests) are the spec parameters of ``openai(...)``.
    """

    sdk: ClassVar[str] = "openai"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    base_url_env: ClassVar[str] = BASE_URL_ENV
    error_type = EmbeddingError

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        dimensions: int | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_retries: int = 6,
        timeout: float = 60.0,
        batch_size: int = MAX_BATCH_INPUTS,
        max_request_tokens: int = MAX_REQUEST_TOKENS,
        max_input_tokens: int = MAX_INPUT_TOKENS,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        for label, value in (
            ("batch_size", batch_size),
            ("max_request_tokens", max_request_tokens),
            ("max_input_tokens", max_input_tokens),
        ):
            if value < 1:
                raise ValueError(f"{label} must be at least 1, got {value}")
        if dimensions is not None and dimensions < 1:
            raise ValueError(f"dimensions must be at least 1, got {dimensions}")
        super().__init__(
            base_url=base_url,
            api_key_env=api_key_env,
            max_retries=max_retries,
            timeout=timeout,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            sleep=sleep,
        )
        if max_input_tokens > max_request_tokens:
            raise ValueError("max_input_tokens cannot exceed max_request_tokens")
        self.model = model
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.max_request_tokens = max_request_tokens
        self.max_input_tokens = max_input_tokens
        self.query_prompt = query_prompt
        self.document_prompt = document_prompt
        self._tokens = 0
        self._tokens_reported = 0
        self._inputs = 0
        self._truncated = 0
        self._empty = 0

    @property
    def name(self) -> str:
        return self.model

    def identity(self) -> dict[str, Any]:
        return {
            "embedder": "openai",
            "name": self.model,
            "base_url": self.host,
            "dimensions": self.dimensions,
            "max_input_tokens": self.max_input_tokens,
            "query_prompt": self.query_prompt,
            "document_prompt": self.document_prompt,
        }

    def prepare(self, texts: Sequence[str], kind: Kind = "document") -> list[PreparedInput]:
        """The exact model inputs for ``texts`` with their token counts, without any request:
        prompt prepended, empty strings replaced, long inputs cut to ``max_input_tokens``.

        Summing ``tokens`` gives what a run will send (for cost estimates)."""
        if kind not in ("document", "query"):
            raise ValueError(f"kind must be 'document' or 'query', got {kind!r}")
        prompt = (self.query_prompt if kind == "query" else self.document_prompt) or ""
        return [self._prepare_one(prompt + t) for t in texts]

    def _prepare_one(self, text: str) -> PreparedInput:
        if not text:
            return PreparedInput(" ", 1, False, True)
        cut, n = truncate_tokens(text, self.max_input_tokens, TOKEN_ENCODING)
        return PreparedInput(cut, n, cut != text, False)  # the text itself when it fits

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> FloatArray:
        if not texts:
            return np.zeros((0, self.dimensions or KNOWN_DIMENSIONS.get(self.model, 0)), np.float32)
        prepared = self.prepare(texts, kind)
        parts = [self._request(batch) for batch in self._batches(prepared)]
        self._inputs += len(prepared)
        self._truncated += sum(p.truncated for p in prepared)
        self._empty += sum(p.empty for p in prepared)
        return l2_normalise(np.concatenate(parts, axis=0))

    def stats(self) -> EmbedderStats:
        """Requests (attempts) and retries, inputs sent (every one ``measured`` against
        ``max_input_tokens``, the ``window``) and how many were ``truncated``, tokens sent as
        counted with cl100k_base; ``extra`` holds the tokens the endpoint reported and the
        empty inputs sent as a space."""
        return EmbedderStats(
            inputs=self._inputs,
            measured=self._inputs,
            truncated=self._truncated,
            window=self.max_input_tokens,
            tokens=self._tokens,
            requests=self._requests,
            retries=self._retries,
            extra={"tokens_reported": self._tokens_reported, "empty_inputs": self._empty},
        )

    def _batches(self, prepared: list[PreparedInput]) -> Iterator[list[PreparedInput]]:
        """Consecutive runs of inputs within the per-request input and token limits."""
        batch: list[PreparedInput] = []
        tokens = 0
        for item in prepared:
            if batch and (
                len(batch) >= self.batch_size or tokens + item.tokens > self.max_request_tokens
            ):
                yield batch
                batch, tokens = [], 0
            batch.append(item)
            tokens += item.tokens
        if batch:
            yield batch

    def _make_client(self, sdk: Any, api_key: str) -> Any:
        return sdk.OpenAI(
            api_key=api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout
        )

    def _wording(self) -> Wording:
        return Wording(
            purpose="The openai embedder",
            endpoint="embedding endpoint",
            missing_key=(
                f"The environment variable {self.api_key_env} is not set.",
                f"Set {self.api_key_env} to your OpenAI API key.",
            ),
            not_found_fix="Check the model name and base_url (it usually ends in /v1).",
            retry_fix="Retry later, lower the request rate, or raise max_retries.",
            rejected_fix="Check the model name, dimensions (only text-embedding-3 models accept "
            "it) and max_input_tokens for this endpoint.",
        )

    def _request(self, batch: list[PreparedInput]) -> FloatArray:
        """One batch's embeddings (one request, retried); counts its tokens."""
        inputs = [item.text for item in batch]
        extra: dict[str, Any] = {} if self.dimensions is None else {"dimensions": self.dimensions}
        response = self._call(
            lambda client: client.embeddings.create(
                input=inputs, model=self.model, encoding_format="base64", **extra
            )
        )
        self._tokens += sum(item.tokens for item in batch)
        usage = getattr(response, "usage", None)
        self._tokens_reported += int(getattr(usage, "total_tokens", 0) or 0)
        return self._parse(response, len(inputs))

    def _parse(self, response: Any, n: int) -> FloatArray:
        items = list(getattr(response, "data", None) or [])
        indexed = sorted(
            ((_index(item, position), item) for position, item in enumerate(items)),
            key=lambda pair: pair[0],
        )
        indices = [index for index, _ in indexed]
        if indices != list(range(n)):
            raise EmbeddingError(
                f"The embedding endpoint {self.host} returned {len(items)} embeddings for "
                f"{n} inputs (indices {indices[:10]}...).",
                "Check that base_url points at an OpenAI-compatible /embeddings endpoint.",
            )
        rows = [_decode(getattr(item, "embedding", None)) for _, item in indexed]
        if len({row.shape[0] for row in rows}) != 1:
            raise EmbeddingError(
                f"The embedding endpoint {self.host} returned vectors of different sizes.",
                "Check that base_url points at an OpenAI-compatible /embeddings endpoint.",
            )
        return np.stack(rows).astype(np.float32, copy=False)


def _index(item: Any, position: int) -> int:
    """The input an embedding belongs to (its ``index``; its position if a server omits it)."""
    index = getattr(item, "index", None)
    return index if isinstance(index, int) else position


def _decode(embedding: Any) -> FloatArray:
    if isinstance(embedding, str):
        try:
            raw = base64.b64decode(embedding, validate=True)
        except (binascii.Error, ValueError):
            raise EmbeddingError(
                "The embedding endpoint returned an embedding that is not valid base64.",
                "Check that base_url points at an OpenAI-compatible /embeddings endpoint.",
            ) from None
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not isinstance(embedding, list) or not embedding:
        raise EmbeddingError(
            "The embedding endpoint returned an item without an embedding.",
            "Check that base_url points at an OpenAI-compatible /embeddings endpoint.",
        )
    return np.asarray(embedding, dtype=np.float32)


EXCLUDED = ("backoff_base", "backoff_max", "sleep")
"""``OpenAIEmbedder`` parameters that are not spec parameters."""

EMBEDDERS.register("openai")(class_factory(OpenAIEmbedder, exclude=EXCLUDED))
