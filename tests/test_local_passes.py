"""The local engine's passes: a pass is reduced over fixed row groups (whole batches) whose
partial results are added in row order, so the numbers do not depend on the thread count or
on what is cached; threads run the groups when the data can be read by several at once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import rfcli
from rfcli.engines.base import PASS_GROUPS, pass_groups
from rfcli.engines.local import LocalPasses
from rfcli.learn.data import Batch
from rfcli.threads import blas_depth
from tests.helpers import letter_matrix, run, write_parquet


class Chunks:
    """Batches held in memory, with the group protocol of StoreData."""

    def __init__(self, chunks, parallel=True):
        self.chunks, self.parallel_groups = chunks, parallel
        self.step = len(chunks[0])
        self.n_rows = sum(len(c) for c in chunks)
        self.seen: list[tuple[int, str]] = []

    def groups(self):
        return [Group(self, a, b) for a, b in pass_groups(self.n_rows, self.step)]


class Group:
    def __init__(self, data, a, b):
        self.data, self.rows = data, (a, b)

    def batches(self, with_ids=False):
        a, b = self.rows
        for j in range(a // self.data.step, -(-b // self.data.step)):
            self.data.seen.append((j, threading.current_thread().name))
            yield Batch(j * self.data.step, self.data.chunks[j], None)


def _sum_pass(data, w):
    out = np.zeros(w.shape[1], dtype=np.float32)  # float32 sums: their order shows
    n = 0
    for b in data.batches():
        out += (b.F @ w).sum(0)
        n += len(b)
    return out, n


def test_pass_groups_are_whole_batches_fixed_by_rows_and_batch_size():
    assert pass_groups(25, 10) == [(0, 10), (10, 20), (20, 25)]
    g = pass_groups(1000, 10)
    assert len(g) == PASS_GROUPS and g[0][0] == 0 and g[-1][1] == 1000
    assert all(b == c for (_, b), (c, _) in zip(g, g[1:], strict=False))
    sizes = [(b - a) // 10 for a, b in g]
    assert max(sizes) - min(sizes) <= 1 and all(a % 10 == 0 for a, _ in g)
    assert pass_groups(None, 10) == [(0, -1)]


def test_a_pass_gives_the_same_bits_on_any_number_of_threads():
    rng = np.random.default_rng(0)
    chunks = [rng.normal(size=(100, 8)).astype(np.float32) for _ in range(23)]
    w = rng.normal(size=(8, 3)).astype(np.float32)
    outs = []
    for threads in (1, 2, 8):
        data = Chunks(chunks)
        with ThreadPoolExecutor(threads) as pool:
            out, n = LocalPasses(data, threads=threads, pool=pool).reduce(_sum_pass, w)
        assert n == 2300
        assert sorted(j for j, _ in data.seen) == list(range(23))  # every batch once
        outs.append(out)
    for out in outs[1:]:
        assert np.array_equal(out, outs[0])
    ref = sum((c.astype(np.float64) @ w.astype(np.float64)).sum(0) for c in chunks)
    np.testing.assert_allclose(outs[0], ref, rtol=1e-4)


def test_data_that_one_thread_must_read_is_read_in_order_in_the_same_groups():
    rng = np.random.default_rng(1)
    chunks = [rng.normal(size=(50, 4)).astype(np.float32) for _ in range(11)]
    w = np.ones((4, 1), np.float32)
    data = Chunks(chunks, parallel=False)
    with ThreadPoolExecutor(2) as pool:
        out, n = LocalPasses(data, threads=2, pool=pool).reduce(_sum_pass, w)
    assert n == 550 and [j for j, _ in data.seen] == list(range(11))
    assert len({t for _, t in data.seen}) == 1
    ref, _ = LocalPasses(Chunks(chunks), threads=1).reduce(_sum_pass, w)
    assert np.array_equal(out, ref)


class _Live:
    """A pass's partial result that counts how many such results are alive at once."""

    alive = 0
    most = 0

    def __init__(self, n):
        self.n = n
        _Live.alive += 1
        _Live.most = max(_Live.most, _Live.alive)

    def __del__(self):
        _Live.alive -= 1

    def __add__(self, other):
        return _Live(self.n + other.n)


def _live_pass(data):
    return _Live(sum(len(b) for b in data.batches()))


@pytest.mark.parametrize("threads", [1, 2])
def test_a_pass_holds_few_partial_results_at_once(threads):
    """Each group's result is added as it comes (in row order): on one thread at most the
    running sum, the new part and their sum are alive, not all 8 groups' parts (which
    kept 8 m x m statistics with their row buffers: a KRR pass at m = 2048 peaked at 1 GB);
    on the pool also the threads' queued parts."""
    chunks = [np.zeros((10, 2), np.float32) for _ in range(40)]
    _Live.alive = _Live.most = 0
    with ThreadPoolExecutor(threads) as pool:
        out = LocalPasses(Chunks(chunks), threads=threads, pool=pool).reduce(_live_pass)
    assert out.n == 400
    assert _Live.most <= 3 + (threads + 1 if threads > 1 else 0)


def test_map_batches_keeps_row_order_on_threads():
    chunks = [np.full((10, 2), j, np.float32) for j in range(13)]
    with ThreadPoolExecutor(3) as pool:
        passes = LocalPasses(Chunks(chunks), threads=3, pool=pool)
        rows = list(passes.map_batches(lambda b: b.row0, title="t"))
    assert rows == [10 * j for j in range(13)]


# -- whole models: bit-identical for 1, 2 and 8 threads, cached or not --------------------
@pytest.fixture(scope="module")
def letter_store(tmp_path_factory):
    d = tmp_path_factory.mktemp("threads")
    X = letter_matrix(2400)
    y = (X[:, 0] > np.median(X[:, 0])).astype(int) + (X[:, 1] > np.median(X[:, 1]))
    src = write_parquet(d / "in.parquet", **{f"f{j}": X[:, j] for j in range(X.shape[1])},
                        label=y, target=X[:, 2] + 0.1 * X[:, 3])  # fmt: skip
    # store chunks of 256 rows: 10 batches, so groups and threads matter
    store = d / "s.zarr"
    run(src, store, label="label", n_features=64, bits=2, seed=3, store_chunk_rows=256,
        columns=[f"f{j}" for j in range(X.shape[1])])  # fmt: skip
    return str(store), src


def _model_arrays(res):
    m = res.model
    return {k: np.asarray(v) for k, v in vars(m).items() if isinstance(v, np.ndarray)}


def _report_numbers(report):
    return {k: v for k, v in report.items() if isinstance(v, int | float) and "second" not in k}


@pytest.mark.parametrize("model", ["svm", "krr"])
def test_models_are_bit_identical_for_1_2_and_8_threads_cached_or_not(letter_store, model):
    store, _ = letter_store
    runs = []
    for threads, cache in ((1, None), (2, None), (8, None), (2, 0)):
        s = rfcli.TrainSettings(model=model, cache_bytes=cache, cv_folds=3)
        runs.append(rfcli.train(store, None, s, threads=threads))
    ref = runs[0]
    arrays = _model_arrays(ref)
    assert arrays
    for res in runs[1:]:
        other = _model_arrays(res)
        assert other.keys() == arrays.keys()
        for k, v in arrays.items():
            assert np.array_equal(other[k], v), k
        assert _report_numbers(res.report) == _report_numbers(ref.report)
    assert blas_depth() == 0  # every job gave the BLAS limit back


@pytest.mark.parametrize("kind,memory", [("rff", None), ("glf", 80 << 20)])
def test_gp_model_is_bit_identical_for_1_2_and_8_threads(letter_store, kind, memory):
    """GLF under a budget that holds the partial sums of two pass threads only: the rule is
    sized for one, so the same model comes out whatever the threads."""
    _, src = letter_store
    read = rfcli.ReadSettings(label="target", columns=["f0", "f1"], chunk_rows=256)
    settings = rfcli.GPRSettings(features=kind, n_features=64, starts=1)
    runs = [rfcli.train_gpr(src, None, settings, read, threads=t, memory=memory)
            for t in (1, 2, 8)]  # fmt: skip
    ref = _model_arrays(runs[0])
    for res in runs[1:]:
        for k, v in ref.items():
            assert np.array_equal(_model_arrays(res)[k], v), k
        assert _report_numbers(res.report) == _report_numbers(runs[0].report)


def test_two_trainings_in_two_threads_give_the_models_they_give_alone(letter_store):
    store, _ = letter_store
    settings = [rfcli.TrainSettings(model="svm", C=1.0), rfcli.TrainSettings(model="krr")]
    alone = [rfcli.train(store, None, s, threads=2) for s in settings]
    together: list = [None, None]

    def job(i):
        together[i] = rfcli.train(store, None, settings[i], threads=2)

    ts = [threading.Thread(target=job, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for a, b in zip(alone, together, strict=True):
        for k, v in _model_arrays(a).items():
            assert np.array_equal(_model_arrays(b)[k], v), k
    assert blas_depth() == 0


def test_a_blas_library_loaded_inside_the_block_runs_on_one_thread_then_gets_its_default():
    """SciPy's own OpenBLAS, first loaded inside a block (as a job's learner imports it), has
    one thread there without another block being entered, and the default after."""
    import subprocess
    import sys

    code = (
        "import numpy\n"
        "from threadpoolctl import threadpool_info\n"
        "from rfcli.threads import one_blas_thread\n"
        "def counts():\n"
        "    return sorted({i['num_threads'] for i in threadpool_info()\n"
        "                   if i['user_api'] == 'blas'})\n"
        "before = counts()\n"
        "with one_blas_thread():\n"
        "    import scipy.linalg\n"
        "    inside = counts()\n"
        "print(before, inside, counts())\n"
    )
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")}  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout.split("] [")  # fmt: skip
    before, inside, after = (s.strip("[]\n ") for s in out)
    assert inside == "1"
    assert after == before  # every library, SciPy's included, back at numpy's default
