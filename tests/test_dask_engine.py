"""The Dask engine on a LocalCluster of 2 worker processes: encode byte-identical to the
local engine (multi-file Parquet input, a task that fails once), KRR statistics equal to
floating-point reduction order, the same error messages on both engines."""

import os

import numpy as np
import pyarrow.parquet as pq
import pytest

pytest.importorskip("distributed")

from rfcli import EncodeSettings, FeatureStore, ReadSettings, encode  # noqa: E402
from rfcli.engines.dask import DaskSettings  # noqa: E402
from rfcli.errors import InputError  # noqa: E402
from rfcli.jobs.train import TrainSettings, train  # noqa: E402
from tests.helpers import (  # noqa: E402
    LETTER,  # noqa: E402
    ridge_engines_tolerance,
    write_parquet,  # noqa: E402
)
from tests.helpers import tree_digest as tree  # noqa: E402


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds")
    t = pq.read_table(LETTER)
    t = t.append_column("name", t["label"].cast("string"))
    os.makedirs(d / "ds" / "k=1")
    pq.write_table(t.slice(0, 5000), d / "ds" / "k=0.parquet", row_group_size=1200)
    pq.write_table(t.slice(5000), d / "ds" / "k=1" / "part.parquet", row_group_size=2500)
    return str(d / "ds")


SETTINGS = [
    dict(n_features=96, normalize_rows=True, store_chunk_rows=1024),
    dict(n_features=64, standardize=True, quantizer="stoc", bits=3, store_chunk_rows=1024),
    dict(
        kernel="ternary",
        n_features=50,
        normalize_rows=True,
        quantizer="trits",
        store_chunk_rows=2048,
    ),
    # gamma by the median heuristic (merged row sample), kappa (map pass), empirical quantizer
    dict(kernel="positive", n_features=40, standardize=True, store_chunk_rows=1024),
    # chunks longer than the 12,000 rows: the store is one chunk of its rows
    dict(n_features=32, store_chunk_rows=16384),
]


@pytest.mark.parametrize(
    "kw",
    SETTINGS,
    ids=["lm", "stoc-standardize", "ternary-trits", "positive-empirical", "one-chunk"],
)
def test_encode_on_dask_is_byte_identical(tmp_path, dataset, scheduler, kw):
    read = ReadSettings(label="label", ids=["name"])
    a = encode(dataset, str(tmp_path / "a.zarr"), EncodeSettings(**kw), read)
    b = encode(dataset, str(tmp_path / "b.zarr"), EncodeSettings(**kw), read, engine="dask",
               dask=DaskSettings(scheduler=scheduler))  # fmt: skip
    assert a.n_rows == b.n_rows == 12000
    assert tree(tmp_path / "a.zarr") == tree(tmp_path / "b.zarr")
    chunk_rows = FeatureStore(str(tmp_path / "b.zarr")).chunk_rows
    assert chunk_rows == min(kw["store_chunk_rows"], 12000)


_FAILED = {}


def test_a_task_failing_once_is_retried(tmp_path, dataset, scheduler, monkeypatch):
    from rfcli.engines import dask as dask_engine

    original = dask_engine._encode_task
    marker = tmp_path / "failed-once"

    def flaky(path, sel, encoder, tmp, start, stop, *rest):
        if start > 0 and not os.path.exists(marker):
            open(marker, "w").close()
            raise OSError("worker lost (simulated)")
        return original(path, sel, encoder, tmp, start, stop, *rest)

    monkeypatch.setattr(dask_engine, "_encode_task", flaky)
    kw = SETTINGS[0]
    read = ReadSettings(label="label")
    encode(dataset, str(tmp_path / "a.zarr"), EncodeSettings(**kw), read)
    encode(dataset, str(tmp_path / "b.zarr"), EncodeSettings(**kw), read, engine="dask",
           dask=DaskSettings(scheduler=scheduler))  # fmt: skip
    assert marker.exists()
    assert tree(tmp_path / "a.zarr") == tree(tmp_path / "b.zarr")


def test_krr_on_dask_equals_local(tmp_path, dataset, scheduler):
    store = str(tmp_path / "s.zarr")
    encode(dataset, store, EncodeSettings(**SETTINGS[0]), ReadSettings(label="label"))
    local = train(store, None, TrainSettings(model="krr"))
    dist = train(store, None, TrainSettings(model="krr"), engine="dask",
                 dask=DaskSettings(scheduler=scheduler))  # fmt: skip
    # tolerance: the float32 block products of Phi'Phi (RidgeStats) group and shift the
    # rows differently on the two engines; each Gram entry then carries a rounding of about
    # sqrt(n) eps32 sum_i F_ij^2, which moves W by at most ||dG|| ||W|| / alpha per side.
    # The alpha grid is scaled by the trace of Phi'Phi, itself such a sum: the same grid
    # point, equal to that rounding
    key = "validation_mse" if "validation_mse" in local.report else "validation_accuracy"
    cands_local, cands_dist = list(local.report[key]), list(dist.report[key])
    assert cands_local.index(local.report["alpha"]) == cands_dist.index(dist.report["alpha"])
    assert dist.report["alpha"] == pytest.approx(local.report["alpha"], rel=1e-5)
    W1, W2 = local.model.W, dist.model.W
    assert np.linalg.norm(W1 - W2) <= ridge_engines_tolerance(store, W1, local.report["alpha"])


def test_bad_input_same_message_on_both_engines(tmp_path, scheduler):
    a = np.arange(5000.0)
    a[4321] = np.nan  # found by a worker on the Dask engine
    src = write_parquet(tmp_path / "nan.parquet", a=a, b=np.arange(5000.0))
    msgs = []
    for engine in ("local", "dask"):
        with pytest.raises(InputError) as e:
            encode(str(src), str(tmp_path / f"{engine}.zarr"),
                   EncodeSettings(n_features=8, gamma=1.0), ReadSettings(), engine=engine,
                   dask=DaskSettings(scheduler=scheduler))  # fmt: skip
        msgs.append(str(e.value))
        assert not os.path.exists(tmp_path / f"{engine}.zarr")
    assert msgs[0] == msgs[1] and "row 4321" in msgs[0]


# -- learners on Dask ------------------------------------------------------------------------
def on_dask(scheduler):
    return dict(engine="dask", dask=DaskSettings(scheduler=scheduler))


@pytest.fixture(scope="module")
def letter_store(tmp_path_factory, dataset):
    store = str(tmp_path_factory.mktemp("ls") / "s.zarr")
    encode(dataset, store, EncodeSettings(**SETTINGS[0]), ReadSettings(label="label", ids=["name"]))
    return store


def test_svm_on_dask_equals_local(letter_store, scheduler):
    """Each L-BFGS step makes one pass: a map over 3 slices (cached in the workers) and a tree
    sum.  The sums differ from local ones only in order (relative ~1e-16), but the weights
    are rounded to float32 for the feature products, so a 1e-16 change can move a weight by
    one float32 ulp (6e-8 relative): measured after 25 iterations, objective 1.3e-8 and W
    6e-6 relative apart.  Tolerances 1e-6 and 1e-4 hold that with margin, while any real
    difference (a dropped slice: a third of the loss) is orders of magnitude larger."""
    kw = dict(model="svm", C=1.0, max_iter=25)
    local = train(letter_store, None, TrainSettings(**kw))
    dist = train(letter_store, None, TrainSettings(**kw), **on_dask(scheduler))
    assert dist.report["objective"] == pytest.approx(local.report["objective"], rel=1e-6)
    W1, W2 = local.model.W, dist.model.W
    assert np.abs(W1 - W2).max() <= 1e-4 * np.abs(W1).max()


def test_svm_validation_on_dask_picks_the_same_C(letter_store, scheduler, monkeypatch):
    from rfcli.jobs import train as training
    from rfcli.learn import selection

    monkeypatch.setattr(training, "C_GRID", (0.1, 10.0))
    monkeypatch.setattr(selection, "MAX_EXTENSIONS", 0)
    # 8 L-BFGS steps (each a distributed pass): the two C values score 0.733 and 0.772 on
    # both engines, fold for fold
    kw = dict(model="svm", max_iter=8, cv_folds=2)
    local = train(letter_store, None, TrainSettings(**kw))
    dist = train(letter_store, None, TrainSettings(**kw), **on_dask(scheduler))
    assert local.report["validation_accuracy"] == pytest.approx(
        dist.report["validation_accuracy"], abs=1.5 / 2400
    )  # at most one validation row of ~2400 may flip
    assert local.report["C"] == dist.report["C"]


@pytest.fixture(scope="module")
def regression(tmp_path_factory):
    d = tmp_path_factory.mktemp("reg") / "reg"
    os.makedirs(d)
    rng = np.random.default_rng(5)
    for i, n in enumerate((3000, 2600)):
        x = rng.uniform(-2, 2, size=(n, 2))
        y = np.sin(2 * x[:, 0]) * np.cos(x[:, 1]) + 0.1 * rng.normal(size=n)
        write_parquet(d / f"part-{i}.parquet", a=x[:, 0], b=x[:, 1], y=y)
    return str(d)


@pytest.mark.parametrize("features", ["glf", "rff"])
def test_gpr_on_dask_equals_local(regression, scheduler, monkeypatch, features):
    """GP statistics V'V, V'y, ... reduced over 11 slices (standardization and the map fitted
    by distributed passes; rff also searches the lengthscale, one distributed pass per
    step).  The statistics equal the local ones to reduction order; the learned
    hyperparameters and the log marginal likelihood then agree to the optimizer's
    tolerance, far below their spread across data."""
    from rfcli.engines import dask as dask_engine
    from rfcli.jobs.train_gpr import GPRSettings, train_gpr

    monkeypatch.setattr(dask_engine, "SLICE_ROWS", 512)
    read = ReadSettings(label="y", chunk_rows=256)
    kw = dict(
        features=features,
        n_features=128,
        starts=1,
        lengthscale_bounds=(0.5, 1.5),
        nodes=[16, 16] if features == "glf" else None,
    )
    a = train_gpr(regression, None, GPRSettings(**kw), read).report
    b = train_gpr(regression, None, GPRSettings(**kw), read, **on_dask(scheduler)).report
    assert a["rows"] == b["rows"] == 5600
    assert a["data_passes"] == b["data_passes"]
    assert b["log_marginal_likelihood"] == pytest.approx(a["log_marginal_likelihood"], rel=1e-6)
    for key in ("signal_variance", "noise_variance"):
        assert b[key] == pytest.approx(a[key], rel=1e-3)
    assert b["lengthscale"] == pytest.approx(a["lengthscale"], rel=1e-3)


def test_gp_statistics_of_a_store_on_dask(tmp_path, regression, scheduler):
    from rfcli.engines import open_engine
    from rfcli.io.store import FeatureStore
    from rfcli.jobs.train_gpr import _gp_pass
    from rfcli.learn.data import StoreData

    store = str(tmp_path / "r.zarr")
    es = EncodeSettings(n_features=64, quantizer="none", bits=32, store_chunk_rows=512)
    encode(regression, store, es, ReadSettings(label="y"))

    st = {}
    for engine in ("local", "dask"):
        with open_engine(engine, DaskSettings(scheduler=scheduler)) as eng:
            data = StoreData(FeatureStore(store), chunk_rows=512)
            st[engine] = eng.passes(data).reduce(_gp_pass)
    a, b = st["local"], st["dask"]
    assert a.n == b.n == 5600
    # float64 sums of 5600 terms in another order: relative differences ~1e-15
    np.testing.assert_allclose(b.G, a.G, rtol=1e-12, atol=1e-12 * np.abs(a.G).max())
    (ma, sa, ca, ya), (mb, sb, cb, yb) = a.standardized(), b.standardized()
    assert (mb, sb, yb) == pytest.approx((ma, sa, ya), rel=1e-12)
    np.testing.assert_allclose(cb, ca, rtol=1e-12, atol=1e-12 * np.abs(ca).max())


@pytest.mark.parametrize("what", ["store", "parquet"])
def test_predict_on_dask_writes_the_same_file(tmp_path, dataset, letter_store, scheduler,
                                               monkeypatch, what):  # fmt: skip
    from rfcli.engines import dask as dask_engine
    from rfcli.jobs.predict import predict

    monkeypatch.setattr(dask_engine, "SLICE_ROWS", 4096)
    model = str(tmp_path / "m.npz")
    train(letter_store, model, TrainSettings(model="krr", alpha=1.0))
    src = letter_store if what == "store" else dataset
    ids = None if what == "store" else ["name"]
    outs = []
    for engine in ("local", "dask"):
        out = str(tmp_path / f"{engine}.parquet")
        n = predict(model, src, out, ids=ids, engine=engine,
                    dask=DaskSettings(scheduler=scheduler))  # fmt: skip
        assert n == 12000
        outs.append(open(out, "rb").read())
    assert outs[0] == outs[1]


# -- a worker process killed mid-job -------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    """A cluster of their own for the tests that kill a worker (its nanny starts a new one)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as c:  # fmt: skip
        yield c.scheduler_address


def _kill_this_worker():
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_killed_mid_encode_still_gives_the_identical_store(tmp_path, dataset, cluster,
                                                                    monkeypatch):  # fmt: skip
    """The second task writes its first rows, then its worker process dies (SIGKILL): the
    scheduler reschedules the task, which rewrites its whole region."""
    from rfcli.engines import dask as dask_engine

    original = dask_engine._encode_task
    marker = str(tmp_path / "killed")

    def dies_once(path, sel, encoder, tmp, start, stop, on_nan, chunk_rows):
        if start > 0 and not os.path.exists(marker):
            open(marker, "w").close()
            original(path, sel, encoder, tmp, start, start + chunk_rows, on_nan, chunk_rows)
            _kill_this_worker()
        return original(path, sel, encoder, tmp, start, stop, on_nan, chunk_rows)

    monkeypatch.setattr(dask_engine, "_encode_task", dies_once)
    kw, read = SETTINGS[1], ReadSettings(label="label", ids=["name"])
    encode(dataset, str(tmp_path / "a.zarr"), EncodeSettings(**kw), read)
    encode(dataset, str(tmp_path / "b.zarr"), EncodeSettings(**kw), read, **on_dask(cluster))
    assert os.path.exists(marker)
    assert tree(tmp_path / "a.zarr") == tree(tmp_path / "b.zarr")


def test_a_worker_killed_during_svm_training(tmp_path, letter_store, cluster, monkeypatch):
    """The SVM's slices live in the workers' memory; a worker dies in the 4th pass: its
    slices are read again from the store and the result is the same as without the kill
    (the tree of sums does not depend on which worker computed what)."""
    from rfcli.learn import selection

    original = selection.svm_pass
    counter = str(tmp_path / "calls")
    os.makedirs(counter)

    def dies_once(data, *args):
        calls = len(os.listdir(counter))
        open(os.path.join(counter, str(calls)), "w").close()
        if calls == 10 and not os.path.exists(counter + ".killed"):
            open(counter + ".killed", "w").close()
            _kill_this_worker()
        return original(data, *args)

    kw = dict(model="svm", C=1.0, max_iter=8)
    clean = train(letter_store, None, TrainSettings(**kw), **on_dask(cluster))
    monkeypatch.setattr(selection, "svm_pass", dies_once)
    killed = train(letter_store, None, TrainSettings(**kw), **on_dask(cluster))
    assert os.path.exists(counter + ".killed")
    np.testing.assert_array_equal(killed.model.W, clean.model.W)
    assert killed.report["objective"] == clean.report["objective"]


@pytest.mark.parametrize("what", ["store", "parquet"])
def test_evaluate_on_dask(tmp_path, dataset, letter_store, scheduler, monkeypatch, what):
    """Accuracy and macro-F1 from per-class counts summed over slices: exactly the local
    numbers (integer counts)."""
    from rfcli.engines import dask as dask_engine
    from rfcli.jobs.evaluate import evaluate

    monkeypatch.setattr(dask_engine, "SLICE_ROWS", 4096)
    model = str(tmp_path / "m.npz")
    train(letter_store, model, TrainSettings(model="krr", alpha=1.0))
    src = letter_store if what == "store" else dataset
    a = evaluate(model, src)
    b = evaluate(model, src, **on_dask(scheduler))
    assert a["rows"] == b["rows"] == 12000
    assert (a["accuracy"], a["macro_f1"]) == (b["accuracy"], b["macro_f1"])


def test_relative_paths_reach_workers_in_another_directory(tmp_path, dataset, scheduler,
                                                           monkeypatch):  # fmt: skip
    """The workers of a running cluster do not share the client's working directory:
    relative local paths are sent to them absolute."""
    import shutil

    shutil.copytree(dataset, tmp_path / "ds")
    monkeypatch.chdir(tmp_path)
    kw, read = SETTINGS[0], ReadSettings(label="label")
    encode("ds", "a.zarr", EncodeSettings(**kw), read)
    encode("ds", "b.zarr", EncodeSettings(**kw), read, **on_dask(scheduler))
    assert tree(tmp_path / "a.zarr") == tree(tmp_path / "b.zarr")
    train("b.zarr", "m.npz", TrainSettings(model="krr", alpha=1.0), **on_dask(scheduler))
    assert (tmp_path / "m.npz").is_file()
