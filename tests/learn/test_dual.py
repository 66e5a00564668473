"""Fewer rows than features (rfcli.learn.dual): KRR and the SVM in the n-dimensional dual
against dense primal references in float64."""

from __future__ import annotations

import os

import numpy as np
import pytest

from rfcli import EncodeSettings, FeatureStore, ReadSettings, encode
from rfcli.jobs.train import TrainSettings, train
from rfcli.learn import dual
from rfcli.learn.data import fold_ids
from tests.helpers import write_parquet

M = 256


@pytest.fixture(scope="module")
def wide_reg(tmp_path_factory):
    """150 rows, m = 256 > n (dual path), 3-bit codes, in 64-row store chunks."""
    d = tmp_path_factory.mktemp("dualreg")
    rng = np.random.default_rng(5)
    n = 150
    X = rng.uniform(-1, 1, (n, 2))
    y = np.sin(3 * X[:, 0]) * X[:, 1] + 0.1 * rng.normal(size=n)
    src = write_parquet(d / "r.parquet", a=X[:, 0], b=X[:, 1], y=y)
    store = os.fspath(d / "r.zarr")
    encode(src, store, EncodeSettings(n_features=M, bits=3, gamma=2.0, store_chunk_rows=64),
           ReadSettings(label="y"))  # fmt: skip
    return store


@pytest.fixture(scope="module")
def wide_cls(tmp_path_factory, letter_small):
    """The first 200 letter rows of 4 classes, m = 256, 2-bit."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    d = tmp_path_factory.mktemp("dualcls")
    t = pq.read_table(letter_small)
    t = t.filter(pc.is_in(t["label"], value_set=t["label"].unique()[:4]))
    src = d / "c.parquet"
    pq.write_table(t, src)
    store = os.fspath(d / "c.zarr")
    encode(os.fspath(src), store, EncodeSettings(n_features=M, bits=2, store_chunk_rows=64),
           ReadSettings(label="label"))  # fmt: skip
    return store


def _decoded(store):
    st = FeatureStore(store)
    F = np.concatenate([f for _, f in st.iter_features()]).astype(np.float64)
    return F, st.labels()


def _ridge(F, Y, alpha):
    """The primal solution in float64 (intercept unpenalized)."""
    mF, mY = F.mean(0), Y.mean(0)
    Fc = F - mF
    W = np.linalg.solve(Fc.T @ Fc + alpha * np.eye(F.shape[1]), Fc.T @ (Y - mY))
    return W, mY - mF @ W


def test_the_path_depends_on_rows_and_features_only():
    assert dual.use_dual(100, 256) and not dual.use_dual(256, 256)
    assert not dual.use_dual(None, 256) and not dual.use_dual(0, 256)


def test_dual_krr_cv_and_refit_equal_the_primal_solves(wide_reg):
    """Every fold's held-out MSE at every alpha, and the refit, against dense primal solves
    in float64.  Both are exact float64 computations of the same problem: they differ by
    rounding amplified by the condition number (at most 1e7 * m at the smallest alpha), far
    below the change one misassigned row or a fold not re-centred on its own mean makes
    (percents)."""
    res = train(wide_reg, None, TrainSettings(model="krr"))
    r = res.report
    assert r["solver"] == "dual"
    cv = r["cv"]
    F, y = _decoded(wide_reg)
    Y = y.astype(np.float64)[:, None]
    fid = fold_ids(0, 0, len(F), 5)
    assert cv["fold_rows"] == np.bincount(fid).tolist()
    for alpha in cv["grid"]:
        for f in range(5):
            tr, te = fid != f, fid == f
            W, b = _ridge(F[tr], Y[tr], alpha)
            mse = float(np.mean((Y[te] - F[te] @ W - b) ** 2))
            assert cv["fold_scores"][alpha][f] == pytest.approx(mse, rel=1e-6), (alpha, f)
    W, b = _ridge(F, Y, r["alpha"])
    np.testing.assert_allclose(res.model.W, W, rtol=1e-6, atol=1e-9 * np.abs(W).max())
    np.testing.assert_allclose(res.model.b, b, rtol=1e-6)
    assert r["train_mse"] == pytest.approx(float(np.mean((Y - F @ W - b) ** 2)), rel=1e-8)


def test_dual_krr_classification_and_given_alpha(wide_cls):
    """One-hot targets: the held-out accuracies of the dense primal solves (rows whose two
    best scores are within 1e-9 may flip), and a given alpha's model."""
    res = train(wide_cls, None, TrainSettings(model="krr"))
    cv = res.report["cv"]
    F, y = _decoded(wide_cls)
    classes = sorted(set(y.tolist()))
    idx = np.searchsorted(classes, y)
    Y = np.eye(len(classes))[idx]
    fid = fold_ids(0, 0, len(F), 5)
    for alpha in cv["grid"][::3]:
        for f in range(5):
            tr, te = fid != f, fid == f
            W, b = _ridge(F[tr], Y[tr], alpha)
            S = F[te] @ W + b
            top2 = np.sort(S, axis=1)[:, -2:]
            close = int(np.sum(top2[:, 1] - top2[:, 0] <= 1e-9))
            acc = float(np.mean(S.argmax(1) == idx[te]))
            assert abs(cv["fold_scores"][alpha][f] - acc) <= close / te.sum() + 1e-12
    given = train(wide_cls, None, TrainSettings(model="krr", alpha=0.5)).model
    W, b = _ridge(F, Y, 0.5)
    np.testing.assert_allclose(given.W, W, rtol=1e-7, atol=1e-10 * np.abs(W).max())
