"""The runner's worker pool (conformance/workers.py): results in task order, and a consumer that stops
early (the kill matrix stops the bulk check at the first differing row) leaves no worker behind."""

from __future__ import annotations

import math
import multiprocessing

from dyadic24.conformance.workers import ordered_map


def test_ordered_map_keeps_task_order_across_workers() -> None:
    tasks = [(7 * i) % 50 for i in range(50)]
    assert list(ordered_map(math.factorial, tasks, 2)) == [math.factorial(t) for t in tasks]


def test_ordered_map_serial_path_runs_the_initializer() -> None:
    seen: list[int] = []
    out = list(ordered_map(abs, [-1, -2], 1, initializer=seen.append, initargs=(5,)))
    assert (out, seen) == ([1, 2], [5])


def test_an_early_stop_shuts_the_pool_down() -> None:
    gen = ordered_map(math.factorial, list(range(400)), 2)
    assert [next(gen) for _ in range(3)] == [1, 1, 2]
    assert multiprocessing.active_children()  # the pool's workers, while it runs
    gen.close()
    assert multiprocessing.active_children() == []
