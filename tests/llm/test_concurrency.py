"""One LLM client used by many threads, against a local OpenAI-compatible server that waits a
random time per request (the benchmark's, ``benchmarks/llm_concurrency.py``) and counts the
requests it holds at once: the client's ``concurrency`` bounds them, the counters add up, the
same request asked at once is sent once, and the transport settings (timeout, retries,
concurrency) change neither the answer cache key nor any result's name."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from benchmark_scripts import load_benchmark
from chunkmark.errors import LLMError
from chunkmark.llm import LLMS, FakeLLM, build_llm, identity_spec

ROOT = Path(__file__).resolve().parents[2]


class Server:
    def __init__(self, url: str) -> None:
        self.url = url

    def spec(self, **params: Any) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in params.items())
        return f"openai(model='m', base_url='{self.url}/v1'{extra})"

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(self.url + "/stats", timeout=10) as response:
            found: dict[str, int] = json.loads(response.read())
        return found


@pytest.fixture
def server() -> Iterator[Server]:
    httpd = load_benchmark("llm_concurrency").serve(
        latency=0.005, jitter=0.02
    )  # 5 to 25 ms, drawn per request
    try:
        yield Server(f"http://127.0.0.1:{httpd.server_address[1]}")
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_requests_in_flight_never_exceed_the_client_concurrency(server: Server) -> None:
    llm = build_llm(server.spec(concurrency=3))
    with ThreadPoolExecutor(max_workers=8) as pool:  # more threads than the client allows
        answers = list(pool.map(lambda i: llm.complete("s", f"question {i}"), range(30)))
    assert len(answers) == 30
    found = server.stats()
    assert found["requests"] == 30
    assert 2 <= found["max_in_flight"] <= 3


def test_counters_add_up_over_threads_and_per_thread(server: Server, tmp_path: Path) -> None:
    llm = build_llm(server.spec(concurrency=4), cache_dir=tmp_path)
    per_thread: list[int] = []
    lock = threading.Lock()

    def work(first: int) -> None:
        for i in range(first, first + 10):
            llm.complete("s", f"question {i % 25}")  # 40 calls over 25 distinct requests
        with lock:
            per_thread.append(llm.thread_stats().calls)

    threads = [threading.Thread(target=work, args=(i * 10,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = llm.stats()
    assert per_thread == [10, 10, 10, 10]
    assert stats.calls == 40
    assert stats.requests == server.stats()["requests"] == 25  # each distinct request once
    assert stats.cache_hits == 15


def test_the_same_request_asked_at_once_is_sent_once(server: Server, tmp_path: Path) -> None:
    llm = build_llm(server.spec(concurrency=8), cache_dir=tmp_path)
    start = threading.Barrier(6)

    def ask(_: int) -> str:
        start.wait()
        return llm.complete("s", "the same question")

    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(ask, range(6)))
    assert len(set(answers)) == 1
    assert server.stats()["requests"] == 1
    stats = llm.stats()
    assert (stats.calls, stats.requests, stats.cache_hits) == (6, 1, 5)


def test_a_failed_request_is_asked_again_by_the_one_waiting_for_it(tmp_path: Path) -> None:
    failed = threading.Event()

    def respond(system: str, user: str) -> str:
        if not failed.is_set():
            failed.set()
            time.sleep(0.05)
            raise LLMError("The endpoint failed.", "Try again.")
        return "answer"

    llm = FakeLLM(respond, concurrency=2, cache_dir=tmp_path)
    results: list[str] = []

    def ask() -> None:
        try:
            results.append(llm.complete("s", "u"))
        except LLMError:
            results.append("error")

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
        time.sleep(0.01)
    for t in threads:
        t.join()
    assert sorted(results) == ["answer", "error"]  # the failure is not cached for the other
    assert llm.stats().requests == 2


def test_transport_parameters_change_neither_the_identity_nor_the_cache_key(
    server: Server, tmp_path: Path
) -> None:
    first = build_llm(server.spec(), cache_dir=tmp_path)
    other = build_llm(server.spec(timeout=600.0, max_retries=1, concurrency=8), cache_dir=tmp_path)
    assert first.identity() == other.identity()
    key = first.request_key("s", "u", max_tokens=20)  # type: ignore[attr-defined]
    assert other.request_key("s", "u", max_tokens=20) == key  # type: ignore[attr-defined]
    answer = first.complete("s", "u", max_tokens=20)
    assert other.complete("s", "u", max_tokens=20) == answer
    assert other.stats().requests == 0 and server.stats()["requests"] == 1


def test_identity_spec_drops_only_the_transport_parameters() -> None:
    assert identity_spec("openai(model='m', timeout=600.0, concurrency=8)") == "openai(model='m')"
    assert identity_spec("openai(model='m', max_retries=1)") == "openai(model='m')"
    kept = "openai(model='m', base_url='http://127.0.0.1:8100/v1', temperature=0.5)"
    assert identity_spec(kept + "") == kept  # nothing to drop: the text as written
    assert identity_spec(kept[:-1] + ", timeout=5.0)") == kept
    # given by position, timeout is still a transport parameter
    assert identity_spec("anthropic('claude', None, 'K', 0.0, 5, 99.0)") == (
        "anthropic(model='claude', api_key_env='K')"
    )
    assert str(LLMS.resolve("openai(concurrency=2)")).endswith("concurrency=2)")


def test_concurrency_below_one_is_a_spec_error() -> None:
    from chunkmark.errors import SpecError

    with pytest.raises(SpecError, match="concurrency must be at least 1"):
        build_llm("fake(concurrency=0)")


def test_retries_are_counted_once_each_under_concurrency(llm_server: Any) -> None:
    from chunkmark.llm.openai import OpenAIChatLLM

    for _ in range(6):
        llm_server.fail(status=500)  # the next six requests, whichever threads send them
    waits: list[float] = []
    llm = OpenAIChatLLM(
        "m",
        base_url=llm_server.openai_url,
        api_key_env="OPENAI_API_KEY",
        max_retries=6,  # one request may meet every fault: it still gets an answer
        backoff_base=0.001,
        sleep=waits.append,
        concurrency=4,
    )
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda i: llm.complete("s", f"question {i}"), range(20)))
    assert answers == [f"answer to: question {i}" for i in range(20)]
    stats = llm.stats()
    assert (stats.requests, stats.retries) == (26, 6) == (len(llm_server.requests), len(waits))
