"""The remote client base on its own: endpoint, key, SDK import and the retry loop, with a fake SDK."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from chunkmark.errors import ChunkmarkError, MissingDependencyError
from chunkmark.remote import RemoteClient, Wording
from chunkmark.retry import NO_KEY_PLACEHOLDER

SDK = "chunkmark_fake_sdk"
KEY = "sk-test-SECRET-remote-abcdef123456"


class APIConnectionError(Exception):
    pass


class APITimeoutError(APIConnectionError):
    pass


class APIStatusError(Exception):
    """Like the SDKs' status errors: ``status_code``, ``code``, ``body`` and ``response``."""

    def __init__(
        self,
        status: int,
        headers: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status
        self.code = code
        self.body = body
        self.response = types.SimpleNamespace(headers=headers or {})


class FakeError(ChunkmarkError):
    pass


class Client(RemoteClient):
    sdk: ClassVar[str] = SDK
    default_base_url: ClassVar[str] = "https://api.example.com/v1"
    base_url_env: ClassVar[str] = "FAKE_BASE_URL"
    error_type = FakeError

    def __init__(self, base_url: str | None = None, **kwargs: Any) -> None:
        self.waits: list[float] = []
        settings: dict[str, Any] = {
            "api_key_env": "FAKE_API_KEY",
            "max_retries": 3,
            "timeout": 5.0,
            "backoff_base": 0.5,
            "backoff_max": 30.0,
            "sleep": self.waits.append,
        }
        settings.update(kwargs)
        super().__init__(base_url=base_url, **settings)
        self.model = "fake-model"
        self.keys: list[str] = []

    def _make_client(self, sdk: Any, api_key: str) -> Any:
        self.keys.append(api_key)
        return types.SimpleNamespace(api_key=api_key)

    def _wording(self) -> Wording:
        return Wording(
            purpose="The fake client",
            endpoint="fake endpoint",
            missing_key=(
                f"The environment variable {self.api_key_env} is not set.",
                f"Set {self.api_key_env}.",
            ),
            not_found_fix="Check the model name.",
            retry_fix="Retry later.",
            rejected_fix="Check the request.",
        )


def script(*outcomes: Any) -> Callable[[Any], str]:
    """A request that raises the given exceptions in turn, then answers ``"ok"``."""
    pending = list(outcomes)

    def request(client: Any) -> str:
        if pending:
            raise pending.pop(0)
        return "ok"

    return request


@pytest.fixture(autouse=True)
def _fake_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType(SDK)
    module.APIStatusError = APIStatusError  # type: ignore[attr-defined]
    module.APIConnectionError = APIConnectionError  # type: ignore[attr-defined]
    module.APITimeoutError = APITimeoutError  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, SDK, module)
    monkeypatch.setenv("FAKE_API_KEY", KEY)
    monkeypatch.delenv("FAKE_BASE_URL", raising=False)


def test_base_url_given_then_environment_then_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Client().base_url == "https://api.example.com/v1"
    assert Client().host == "api.example.com"
    monkeypatch.setenv("FAKE_BASE_URL", "http://localhost:8000/v1/")
    assert Client().base_url == "http://localhost:8000/v1"
    assert Client().host == "localhost:8000"
    given = Client("https://user:pw@proxy.internal:9443/api?x=1")
    assert given.host == "proxy.internal:9443"


def test_success_counts_one_request_and_makes_the_client_once() -> None:
    client = Client()
    assert client._call(script()) == "ok"
    assert client._call(lambda sdk_client: sdk_client.api_key) == KEY
    assert client._requests == 2 and client._retries == 0
    assert client.keys == [KEY]


def test_429_waits_what_retry_after_asks_capped_at_backoff_max() -> None:
    client = Client(backoff_max=10.0)
    request = script(
        APIStatusError(429, {"retry-after": "7"}),
        APIStatusError(429, {"retry-after-ms": "250", "retry-after": "9"}),
        APIStatusError(429, {"retry-after": "3600"}),
    )
    assert client._call(request) == "ok"
    assert client.waits == [7.0, 0.25, 10.0]
    assert client._requests == 4 and client._retries == 3


def test_server_errors_back_off_exponentially_with_jitter() -> None:
    client = Client()
    assert client._call(script(APIStatusError(500), APIStatusError(503))) == "ok"
    assert 0.25 <= client.waits[0] <= 0.5 and 0.5 <= client.waits[1] <= 1.0


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (401, ["401", "API key was rejected", "FAKE_API_KEY"]),
        (404, ["404", "model or endpoint not found", "Check the model name."]),
        (400, ["400", "rejected", "Check the request."]),
    ],
)
def test_client_errors_fail_at_once(status: int, words: list[str]) -> None:
    client = Client()
    with pytest.raises(FakeError) as info:
        client._call(script(APIStatusError(status)))
    message = str(info.value)
    assert all(word in message for word in words)
    assert "the fake endpoint api.example.com (model 'fake-model')" in message
    assert client._requests == 1 and client.waits == []


def test_exhausted_quota_is_not_retried() -> None:
    client = Client()
    with pytest.raises(FakeError, match="quota exhausted"):
        client._call(script(APIStatusError(429, code="insufficient_quota")))
    assert client._requests == 1


def test_retries_exhausted_name_the_attempts() -> None:
    client = Client(max_retries=2)
    errors = [APIStatusError(503) for _ in range(3)]
    with pytest.raises(FakeError, match=r"HTTP 503 .* still failing after 3 attempts") as info:
        client._call(script(*errors))
    assert info.value.fix == "Retry later."
    assert client._requests == 3 and client._retries == 2 and len(client.waits) == 2


def test_connection_errors_are_retried_then_fail_clearly() -> None:
    client = Client(max_retries=2)
    with pytest.raises(FakeError) as info:
        client._call(script(*[APIConnectionError("refused") for _ in range(3)]))
    assert info.value.problem == (
        "The request to the fake endpoint api.example.com failed after 3 attempts."
    )
    assert info.value.fix is not None and "FAKE_BASE_URL" in info.value.fix
    assert client._retries == 2 and 0.25 <= client.waits[0] <= 0.5


def refused_connection() -> APIConnectionError:
    """A connection error as the SDKs raise it when nothing listens: caused, down the chain,
    by the operating system's ConnectionRefusedError."""
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as os_error:
            raise OSError("[Errno 111] Connection refused") from os_error
    except OSError as transport:
        error = APIConnectionError("Connection error.")
        error.__cause__ = transport
        return error


def test_a_refused_connection_on_this_machine_fails_at_once() -> None:
    client = Client(base_url="http://localhost:11434/v1?key=1", max_retries=5)
    with pytest.raises(FakeError) as info:
        client._call(script(*[refused_connection() for _ in range(6)]))
    assert client._requests == 1 and client._retries == 0 and client.waits == []
    assert info.value.problem == (
        "Nothing is listening at http://localhost:11434/v1: the connection was refused, so no "
        "fake endpoint runs on this machine at that port."
    )
    assert info.value.fix is not None
    assert "Start the server" in info.value.fix and "FAKE_BASE_URL" in info.value.fix
    # elsewhere a refused connection may be a restart or a load balancer: retried as before
    remote = Client(max_retries=2)
    with pytest.raises(FakeError, match="failed after 3 attempts"):
        remote._call(script(*[refused_connection() for _ in range(3)]))
    assert remote._requests == 3 and remote._retries == 2
    # on this machine, other connection errors (a reset) are retried too
    reset = Client(base_url="http://127.0.0.1:8000/v1", max_retries=1)
    assert reset._call(script(APIConnectionError("reset"))) == "ok" and reset._retries == 1


def test_timeouts_are_retried_then_say_so() -> None:
    client = Client(max_retries=1)
    assert client._call(script(APITimeoutError("slow"))) == "ok"
    with pytest.raises(FakeError, match="timed out after 2 attempts") as info:
        client._call(script(APITimeoutError("slow"), APITimeoutError("slow")))
    assert info.value.fix is not None and "the network" in info.value.fix  # a remote host


def test_missing_key_on_the_default_host_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FAKE_API_KEY")
    client = Client(api_key_env="MY_FAKE_KEY")  # the key is read when the first request is sent
    with pytest.raises(FakeError, match="MY_FAKE_KEY is not set") as info:
        client._call(script())
    assert info.value.fix == "Set MY_FAKE_KEY."
    assert client._requests == 0


def test_custom_endpoint_without_key_gets_the_placeholder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAKE_API_KEY")
    client = Client("http://127.0.0.1:8080/v1")
    assert client._call(script()) == "ok"
    assert client.keys == [NO_KEY_PLACEHOLDER]


def test_the_key_never_appears_in_messages() -> None:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}. Bearer {KEY}"}}
    client = Client()
    for status in (401, 403, 422):
        with pytest.raises(FakeError) as info:
            client._call(script(APIStatusError(status, body=body)))
        assert KEY not in str(info.value) and "abcdef123456" not in str(info.value)


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, SDK, None)  # makes the import fail
    with pytest.raises(MissingDependencyError) as info:
        Client()._call(script())
    assert f"pip install 'chunkmark[{SDK}]'" in str(info.value)
    assert str(info.value).startswith("The fake client needs")


@pytest.mark.parametrize(
    "bad", [{"max_retries": -1}, {"timeout": 0}, {"backoff_base": -1}, {"backoff_max": -1}]
)
def test_settings_are_checked(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="timeout must be positive"):
        Client(**bad)
