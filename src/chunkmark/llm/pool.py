"""Independent LLM requests sent concurrently, with the outputs of a sequential run.

The features that call an LLM (question generation, contextual chunks, propositions, relation
extraction, answers) send requests that do not depend on each other: one per chunk, per
distinct chunk text, per question and cell. :func:`ordered` runs a function over such items on
a bounded pool of threads (requests wait on the network, not the CPU) and yields the results in
the order of the items, so that whatever the feature writes is byte-identical to a sequential
run:

- at most ``workers`` items run at once, and the client itself lets at most its
  ``concurrency`` requests be in flight (:class:`~chunkmark.llm.base.BaseLLM`);
- items with the same ``key`` (the same request, or requests that depend on each other) run
  one after the other, in their order, in one thread: a repeated request is answered from the
  cache as it would be sequentially, and is counted the same way;
- the function must leave shared state alone: it returns what it found, and the caller does
  the counting, warnings and writing as it reads the results, in order;
- an error is raised where the sequential run would raise it: at the first failing item in
  order, once the items before it are done; items not started by then are not started, and
  those running are waited for (their answers go to the cache), so no thread outlives the call;
- a consumer that stops reading (an exception of its own, a ``break``) stops the pool the same
  way; only ``workers * READ_AHEAD`` items are ever started ahead of the one being read.

With ``workers=1`` it is a plain loop in the calling thread. :func:`workers_for` is the
concurrency of a client (1 for a client that cannot count its requests per thread).

Features whose requests depend on each other keep them in order: the corrections of one slot
of question generation (each shows the answers rejected before it), the slots of one document
(each lists the questions accepted before it), the rounds of relation extraction for one text,
and every window of ``llm_semantic`` (each window starts after the previous answer's last cut,
so the next request is not known until the previous answer is read).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Hashable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from chunkmark.counters import LLMStats

T = TypeVar("T")
R = TypeVar("R")

READ_AHEAD = 4  # items started ahead of the one being read, per worker


def workers_for(llm: Any) -> int:
    """How many requests to send ``llm`` at once: its ``concurrency`` (1 when it has none, or
    when it cannot tell one thread's requests from another's)."""
    if not callable(getattr(llm, "thread_stats", None)):
        return 1
    return max(1, int(getattr(llm, "concurrency", 1) or 1))


def thread_stats(llm: Any) -> LLMStats:
    """The counters of ``llm`` for the calling thread's requests (the whole client's when it
    cannot tell them apart; it is then used from one thread only)."""
    found = getattr(llm, "thread_stats", None)
    stats: LLMStats = found() if callable(found) else llm.stats()
    return stats


def ordered(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    workers: int,
    key: Callable[[T], Hashable] | None = None,
) -> Generator[R, None, None]:
    """``fn(item)`` for each item, yielded in the order of ``items``, computed by up to
    ``workers`` threads (see the module docs). Items with equal ``key`` run in order in one
    thread. An exception of ``fn`` is raised when its item's turn comes."""
    if workers <= 1 or len(items) <= 1:
        for item in items:
            yield fn(item)
        return
    yield from _Pool(fn, items, workers, key).results()


class _Pool:
    """One call of :func:`ordered` with more than one worker."""

    def __init__(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        workers: int,
        key: Callable[[T], Hashable] | None,
    ) -> None:
        self.fn: Callable[[Any], Any] = fn
        self.items: Sequence[Any] = items
        self.workers = workers
        groups: dict[Hashable, list[int]] = {}
        for i, item in enumerate(items):
            groups.setdefault(i if key is None else ("key", key(item)), []).append(i)
        self.units = list(groups.values())  # in the order of their first item
        self.slots: list[Future[Any]] = [Future() for _ in items]
        self.stop = threading.Event()

    def results(self) -> Iterator[Any]:
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="chunkmark-llm")
        started = 0
        interrupted = False
        try:
            for i in range(len(self.items)):
                while started < len(self.units) and self.units[started][0] < i + self._ahead():
                    pool.submit(self._run, self.units[started])
                    started += 1
                yield self.slots[i].result()
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            self.stop.set()
            # Ctrl-C leaves the requests in flight behind; anything else waits for them
            pool.shutdown(wait=not interrupted, cancel_futures=True)

    def _ahead(self) -> int:
        return self.workers * READ_AHEAD

    def _run(self, unit: list[int]) -> None:
        """The items of one unit, in order; after a failure the rest are not asked."""
        failed = False
        for i in unit:
            slot = self.slots[i]
            if failed or self.stop.is_set():
                slot.cancel()
                continue
            try:
                slot.set_result(self.fn(self.items[i]))
            except BaseException as exc:  # handed to the reader, raised in its turn
                slot.set_exception(exc)
                failed = True
