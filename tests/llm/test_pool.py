"""The pool that runs independent LLM requests concurrently: results in the order of the items
whatever order they finish in, at most ``workers`` at once, one key's items in order, the first
failing item's error, and no thread left running."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import closing
from itertools import pairwise

import pytest

from chunkmark.llm import FakeLLM
from chunkmark.llm.pool import READ_AHEAD, ordered, thread_stats, workers_for


class Probe:
    """Counts items started and finished, the most running at once, and the finish order."""

    def __init__(self, delay: Callable[[int], float]) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.started: list[int] = []
        self.finished: list[int] = []
        self.threads: set[int] = set()

    def __call__(self, item: int) -> int:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(item)
            self.threads.add(threading.get_ident())
        try:
            time.sleep(self.delay(item))
            if item < 0:
                raise ValueError(f"item {item} failed")
            return item * 10
        finally:
            with self.lock:
                self.running -= 1
                self.finished.append(item)


def test_results_come_in_order_whatever_order_they_finish_in() -> None:
    items = list(range(24))
    probe = Probe(lambda i: 0.002 * (24 - i))  # later items finish first
    assert list(ordered(probe, items, workers=4)) == [i * 10 for i in items]
    assert probe.finished != sorted(probe.finished)  # they did finish out of order
    assert 2 <= probe.most <= 4
    assert probe.running == 0 and sorted(probe.finished) == items


def test_one_worker_is_a_plain_loop_in_the_calling_thread() -> None:
    probe = Probe(lambda i: 0.0)
    assert list(ordered(probe, [1, 2, 3], workers=1)) == [10, 20, 30]
    assert probe.threads == {threading.get_ident()} and probe.most == 1


def test_the_first_failing_item_in_order_is_raised_and_nothing_is_left_running() -> None:
    # item -3 (third) fails slowly, item -5 (fifth) at once: a sequential run raises for -3
    items = [1, 2, -3, 4, -5, *range(6, 60)]
    probe = Probe(lambda i: 0.05 if i == -3 else 0.001)
    got: list[int] = []
    with pytest.raises(ValueError, match="item -3 failed"):
        for value in ordered(probe, items, workers=4):
            got.append(value)
    assert got == [10, 20]
    assert probe.running == 0  # the requests in flight were waited for
    assert len(probe.started) <= 3 + 4 * READ_AHEAD  # never more than the read-ahead


def test_a_reader_that_stops_stops_the_pool() -> None:
    probe = Probe(lambda i: 0.002)
    results = ordered(probe, list(range(200)), workers=3)
    with closing(results):
        assert [next(results), next(results)] == [0, 10]
    assert probe.running == 0
    assert len(probe.started) <= 2 + 3 * READ_AHEAD


def test_items_with_one_key_run_in_order_one_at_a_time() -> None:
    spans: dict[str, list[tuple[float, float, int]]] = {}
    lock = threading.Lock()

    def work(item: tuple[str, int]) -> int:
        start = time.perf_counter()
        time.sleep(0.003)
        with lock:
            spans.setdefault(item[0], []).append((start, time.perf_counter(), item[1]))
        return item[1]

    items = [("abc"[i % 3], i) for i in range(18)]
    assert list(ordered(work, items, workers=6, key=lambda it: it[0])) == list(range(18))
    for runs in spans.values():
        assert [r[2] for r in runs] == sorted(r[2] for r in runs)  # in their order
        for (_, end, _), (start, _, _) in pairwise(runs):
            assert start >= end  # never two of one key at once


def test_workers_and_thread_stats_of_a_client() -> None:
    llm = FakeLLM(concurrency=3)
    assert workers_for(llm) == 3
    assert workers_for(object()) == 1  # a client that cannot count per thread: one at a time

    def ask(i: int) -> int:
        before = thread_stats(llm).requests
        llm.complete("s", f"u{i}")
        return thread_stats(llm).requests - before

    assert list(ordered(ask, list(range(12)), workers=3)) == [1] * 12
    assert llm.stats().requests == 12 and llm.stats().calls == 12
