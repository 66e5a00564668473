"""The local engine's passes: over cached chunks a pass is split across threads (each
thread every k-th chunk, one BLAS thread), partial results added; otherwise sequential."""

from __future__ import annotations

import threading

import numpy as np

from rfcli.engines.local import LocalPasses
from rfcli.learn.data import Batch


class Cached:
    """Chunks in memory, as StoreData once its cache is filled."""

    def __init__(self, chunks, cached=True):
        self.chunks, self.cached = chunks, cached
        self.n_rows = sum(len(c) for c in chunks)
        self.seen: list[tuple[int, str]] = []
        self.parts: list = []

    @property
    def n_parts(self):
        return len(self.chunks) if self.cached else 1

    def batches(self, with_ids=False, part=None):
        self.parts.append(part)
        i, k = part or (0, 1)
        for j in range(i, len(self.chunks), k):
            self.seen.append((j, threading.current_thread().name))
            yield Batch(j * 100, self.chunks[j], None)


def _sum_pass(data, w):
    out = np.zeros(w.shape[1])
    n = 0
    for b in data.batches():
        out += (b.F @ w).sum(0)
        n += len(b)
    return out, n


def test_cached_pass_is_split_across_threads_and_added():
    rng = np.random.default_rng(0)
    chunks = [rng.normal(size=(100, 8)).astype(np.float32) for _ in range(5)]
    w = rng.normal(size=(8, 3)).astype(np.float32)
    ref = sum((c.astype(np.float64) @ w.astype(np.float64)).sum(0) for c in chunks)
    data = Cached(chunks)
    out, n = LocalPasses(data, threads=2).reduce(_sum_pass, w)
    assert n == 500
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    assert sorted(j for j, _ in data.seen) == list(range(5))  # every chunk exactly once
    assert sorted(data.parts) == [(0, 2), (1, 2)]  # two parts (run by a pool of two threads)


def test_uncached_pass_is_one_sequential_loop():
    rng = np.random.default_rng(1)
    data = Cached([rng.normal(size=(50, 4)).astype(np.float32) for _ in range(3)], cached=False)
    out, n = LocalPasses(data, threads=2).reduce(_sum_pass, np.ones((4, 1), np.float32))
    assert n == 150 and [j for j, _ in data.seen] == [0, 1, 2]
    assert data.parts == [None]
