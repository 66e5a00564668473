"""gamma='search': the bandwidth chosen by validation on a labelled row sample."""

from __future__ import annotations

import numpy as np
import pytest

from rfcli.errors import UsageError
from rfcli.io.store import FeatureStore
from rfcli.learn import bandwidth
from tests.helpers import run, tree_digest, write_parquet


@pytest.fixture(scope="module")
def wiggly(tmp_path_factory):
    """y = sin(6 x0) + noise: a bandwidth far above the median heuristic is needed."""
    d = tmp_path_factory.mktemp("gs")
    rng = np.random.default_rng(0)
    n = 1500
    X = rng.uniform(-2, 2, (n, 2))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=n)
    cls = (np.sin(6 * X[:, 0]) > 0).astype(np.int64)
    return write_parquet(d / "w.parquet", a=X[:, 0], b=X[:, 1], y=y, c=cls), d


@pytest.mark.parametrize("label", ["y", "c"])
def test_search_beats_the_median_heuristic(wiggly, label, tmp_path):
    src, _ = wiggly
    kw = dict(label=label, columns=["a", "b"], n_features=256, bits=2)
    res = run(src, tmp_path / "s.zarr", gamma="search", **kw)
    gs = FeatureStore(str(tmp_path / "s.zarr")).meta["fit"]["gamma_search"]
    assert gs == res.encoder.fit_report["gamma_search"]
    assert gs["metric"] == ("mse" if label == "y" else "accuracy")
    cands, scores = np.array(gs["candidates"]), np.array(gs["scores"])
    med = int(np.argmin(np.abs(cands - gs["median_heuristic"])))
    best = int(np.argmin(scores) if label == "y" else np.argmax(scores))
    assert gs["gamma"] == pytest.approx(cands[best])
    assert res.encoder.fmap.gamma_ == pytest.approx(gs["gamma"])
    # sin(6 x) varies on a scale ~ 1/6 of the data's: the validated gamma is far above the
    # median heuristic's, and its validation score clearly better
    assert gs["gamma"] >= 8 * gs["median_heuristic"]
    if label == "y":
        assert scores[best] < 0.5 * scores[med]
    else:
        assert scores[best] > scores[med] + 0.05
    assert not gs["at_edge"]


def test_search_is_deterministic_whatever_the_chunking(wiggly, tmp_path):
    src, _ = wiggly
    kw = dict(label="y", columns=["a", "b"], n_features=128, bits=2, gamma="search")
    run(src, tmp_path / "a.zarr", chunk_rows=97, **kw)
    run(src, tmp_path / "b.zarr", chunk_rows=5000, threads=2, **kw)
    assert tree_digest(tmp_path / "a.zarr") == tree_digest(tmp_path / "b.zarr")


def test_grid_widens_past_an_edge(wiggly, tmp_path, monkeypatch):
    src, _ = wiggly
    monkeypatch.setattr(bandwidth, "HALF_WIDTH", 1)  # 3 candidates: the best is beyond them
    monkeypatch.setattr(bandwidth, "MAX_UP", 1)  # (not up to the nearest-neighbour scale)
    # float features: with 2-bit codes of 128 features, gamma_0 / 2 also fits sin(6 x) better
    # than gamma_0 (codes of slowly varying features are random steps), so the grid would
    # rightly widen downwards first
    run(src, tmp_path / "s.zarr", label="y", columns=["a", "b"], n_features=128,
        gamma="search", quantizer="none")  # fmt: skip
    gs = FeatureStore(str(tmp_path / "s.zarr")).meta["fit"]["gamma_search"]
    assert len(gs["candidates"]) > 3
    assert max(gs["candidates"]) > 2.0 * gs["median_heuristic"]  # widened upwards


def test_search_needs_a_label_and_a_bandwidth(wiggly, tmp_path):
    src, _ = wiggly
    with pytest.raises(UsageError, match="label"):
        run(src, tmp_path / "s.zarr", columns=["a", "b"], gamma="search")
    with pytest.raises(UsageError, match="bandwidth"):
        run(src, tmp_path / "s.zarr", label="y", columns=["a", "b"], kernel="arccos0",
            gamma="search", quantizer="binary")  # fmt: skip


def test_validation_rows_are_held_out(tmp_path):
    """On labels that are pure noise, held-out rows cannot be predicted: the best validation
    MSE stays near the labels' variance (training on the validation rows would not)."""
    rng = np.random.default_rng(3)
    n = 900
    X = rng.uniform(-2, 2, (n, 2))
    y = rng.normal(size=n)
    src = write_parquet(tmp_path / "noise.parquet", a=X[:, 0], b=X[:, 1], y=y)
    run(src, tmp_path / "s.zarr", label="y", n_features=256, gamma="search")
    gs = FeatureStore(str(tmp_path / "s.zarr")).meta["fit"]["gamma_search"]
    assert min(gs["scores"]) >= 0.9 * np.var(y)


BANDWIDTH_KERNELS = [
    dict(kernel="gaussian"),
    dict(kernel="gaussian", quantizer="empirical"),
    dict(kernel="laplacian"),
    dict(kernel="matern12"),
    dict(kernel="matern32"),
    dict(kernel="matern52"),
    dict(kernel="positive"),  # kappa by a map pass, empirical quantizer
]


@pytest.mark.parametrize("kw", BANDWIDTH_KERNELS, ids=lambda kw: "-".join(kw.values()))
def test_candidates_are_scored_on_the_stored_values(wiggly, tmp_path, monkeypatch, kw):
    """The search scores each candidate on the features the learners will read: the
    sample's values quantized as the store's and decoded.  With m <= 1024 the chosen
    candidate's map is the store's and the sample is every row, so the candidate's features
    are the store's decoded features up to the row order (compared through F'F)."""
    src, _ = wiggly
    seen = {}
    search = bandwidth.search_gamma

    def spy(features, y, median_gamma, seed, n_features, *more):
        res = search(features, y, median_gamma, seed, n_features, *more)
        seen["F"] = np.asarray(features(res.gamma), dtype=np.float64)
        return res

    monkeypatch.setattr(bandwidth, "search_gamma", spy)
    res = run(src, tmp_path / "s.zarr", label="c", columns=["a", "b"], n_features=64,
              gamma="search", **kw)  # fmt: skip
    store = FeatureStore(str(tmp_path / "s.zarr"))
    D = np.vstack([F for _, F in store.iter_features()]).astype(np.float64)
    F = seen["F"]
    assert F.shape == D.shape == (1500, 64)
    assert res.encoder.fmap.gamma_ == store.meta["fit"]["gamma_search"]["gamma"]
    np.testing.assert_allclose(F.T @ F, D.T @ D, rtol=1e-9, atol=1e-9)
    # b = 2: the values are four levels per feature (the unquantized map's are not)
    assert max(len(np.unique(F[:, j])) for j in range(64)) <= 4


def test_search_on_dask_is_byte_identical(wiggly, tmp_path):
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    from rfcli import EncodeSettings, ReadSettings, encode
    from rfcli.engines.dask import DaskSettings

    src, _ = wiggly
    es = EncodeSettings(n_features=64, gamma="search", standardize=True)
    read = ReadSettings(label="c", columns=["a", "b"], chunk_rows=400)
    a = encode(src, str(tmp_path / "a.zarr"), es, read)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster:  # fmt: skip
        b = encode(src, str(tmp_path / "b.zarr"), es, read, engine="dask",
                   dask=DaskSettings(scheduler=cluster.scheduler_address))  # fmt: skip
    assert a.encoder.fit_report == b.encoder.fit_report
    assert tree_digest(tmp_path / "a.zarr") == tree_digest(tmp_path / "b.zarr")


@pytest.fixture(scope="module")
def seasons(tmp_path_factory):
    """1-D, y = sin(2 pi 40 x): 40 periods over the range (co2's seasons over its years),
    a lengthscale about 1/250 of the range, on a regular grid of 1,000 points."""
    d = tmp_path_factory.mktemp("seasons")
    x = np.linspace(0, 1, 1000)
    y = np.sin(2 * np.pi * 40 * x) + 0.05 * np.random.default_rng(1).normal(size=len(x))
    return write_parquet(d / "s.parquet", x=x, y=y)


def test_the_grid_reaches_the_nearest_neighbour_scale(seasons, tmp_path, monkeypatch):
    kw = dict(label="y", columns=["x"], n_features=256, bits=2, gamma="search")
    run(seasons, tmp_path / "a.zarr", **kw)
    gs = FeatureStore(str(tmp_path / "a.zarr")).meta["fit"]["gamma_search"]
    var = 0.5  # of sin: a constant prediction's MSE
    assert gs["gamma"] >= 2**8 * gs["median_heuristic"]
    assert min(gs["scores"]) < 0.1 * var
    # stopped at the median heuristic's neighbourhood (the grid without the nearest-neighbour
    # scale), the search only sees the plateau of smooth fits
    monkeypatch.setattr(bandwidth, "MAX_UP", bandwidth.HALF_WIDTH)
    run(seasons, tmp_path / "b.zarr", **kw)
    narrow = FeatureStore(str(tmp_path / "b.zarr")).meta["fit"]["gamma_search"]
    assert max(narrow["candidates"]) < 2**8 * narrow["median_heuristic"]
    assert min(narrow["scores"]) > 3 * min(gs["scores"])  # measured: 0.167 against 0.035


def test_nearest_neighbour_gamma_of_a_grid():
    from rfcli.maps.bandwidth import nearest_neighbour_gamma

    h = 0.01
    x = np.arange(200)[:, None] * h
    assert nearest_neighbour_gamma(x) == pytest.approx(1 / h**2)
    assert nearest_neighbour_gamma(x, "l1") == pytest.approx(1 / h)
    X = np.c_[x, 2 * x]  # the nearest neighbour along the diagonal: (h, 2h)
    assert nearest_neighbour_gamma(X) == pytest.approx(1 / (5 * h**2))
    assert nearest_neighbour_gamma(np.ones((5, 2))) == float("inf")


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_a_sample_smaller_than_the_features_is_scored_in_the_dual(task):
    """n = 150 sample rows, m = 256 features: the dual's validation score and alpha equal
    the primal's (its float32 products and 1e-9 penalty on the intercept move scores by
    about 1e-6 relative; a fold not re-centred or a wrong alpha scale moves them by
    percents)."""
    from rfcli.learn import bandwidth as bw
    from rfcli.random import keyed_uniform

    rng = np.random.default_rng(1)
    n, m = 150, 256
    X = rng.uniform(-1, 1, (n, 3))
    F = np.sqrt(2 / m) * np.cos(X @ rng.normal(0, 2, (3, m)) + rng.uniform(0, 7, m))
    if task == "regression":
        y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=n)
    else:
        y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 0.5)
    Y, t, truth = bw._targets(y)
    folds = (keyed_uniform(0, np.arange(n), 1)[:, 0] * bw.FOLDS).astype(int)
    dual = bw._score(F, Y, t, truth, folds)  # the default for n < m
    primal = bw._score(F, Y, t, truth, folds, dual=False)
    assert dual[1] == primal[1]
    assert dual[0] == pytest.approx(primal[0], rel=1e-5)
