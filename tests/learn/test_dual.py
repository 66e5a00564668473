"""Fewer rows than features (rfcli.learn.dual): KRR and the SVM in the n-dimensional dual
against dense primal references in float64."""

from __future__ import annotations

import os

import numpy as np
import pytest

from rfcli import EncodeSettings, ReadSettings, encode
from rfcli.jobs.train import TrainSettings, train
from rfcli.learn import dual, dual_svm
from rfcli.learn.data import fold_ids
from tests.helpers import decoded, ridge_solution, write_parquet

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
    F, y = decoded(wide_reg)
    Y = y.astype(np.float64)[:, None]
    fid = fold_ids(0, 0, len(F), 5)
    assert cv["fold_rows"] == np.bincount(fid).tolist()
    for alpha in cv["grid"]:
        for f in range(5):
            tr, te = fid != f, fid == f
            W, b, _ = ridge_solution(F[tr], Y[tr], alpha)
            mse = float(np.mean((Y[te] - F[te] @ W - b) ** 2))
            assert cv["fold_scores"][alpha][f] == pytest.approx(mse, rel=1e-6), (alpha, f)
    W, b, _ = ridge_solution(F, Y, r["alpha"])
    np.testing.assert_allclose(res.model.W, W, rtol=1e-6, atol=1e-9 * np.abs(W).max())
    np.testing.assert_allclose(res.model.b, b, rtol=1e-6)
    assert r["train_mse"] == pytest.approx(float(np.mean((Y - F @ W - b) ** 2)), rel=1e-8)


def test_dual_krr_classification_and_given_alpha(wide_cls):
    """One-hot targets: the held-out accuracies of the dense primal solves (rows whose two
    best scores are within 1e-9 may flip), and a given alpha's model."""
    res = train(wide_cls, None, TrainSettings(model="krr"))
    cv = res.report["cv"]
    F, y = decoded(wide_cls)
    classes = sorted(set(y.tolist()))
    idx = np.searchsorted(classes, y)
    Y = np.eye(len(classes))[idx]
    fid = fold_ids(0, 0, len(F), 5)
    for alpha in cv["grid"][::3]:
        for f in range(5):
            tr, te = fid != f, fid == f
            W, b, _ = ridge_solution(F[tr], Y[tr], alpha)
            S = F[te] @ W + b
            top2 = np.sort(S, axis=1)[:, -2:]
            close = int(np.sum(top2[:, 1] - top2[:, 0] <= 1e-9))
            acc = float(np.mean(S.argmax(1) == idx[te]))
            assert abs(cv["fold_scores"][alpha][f] - acc) <= close / te.sum() + 1e-12
    given = train(wide_cls, None, TrainSettings(model="krr", alpha=0.5)).model
    W, b, _ = ridge_solution(F, Y, 0.5)
    np.testing.assert_allclose(given.W, W, rtol=1e-7, atol=1e-10 * np.abs(W).max())


def _primal_gradient(F, Y, W, b, C):
    """The gradient of 1/2 ||W||^2 + C sum max(0, 1 - y (F W + b))^2 in W and b (float64)."""
    viol = np.maximum(1 - Y * (F @ W + b), 0.0)
    G = -2 * C * viol * Y
    return W + F.T @ G, G.sum(0)


def test_svm_newton_reaches_the_primal_optimum_of_every_masked_column():
    """Random features of 120 rows, m = 300, three columns on different row subsets: the
    dual Newton solution's primal weights satisfy the optimality conditions to rounding
    (a gradient 1e-9 of the weights' size; one row misassigned to the margin moves it by
    about 2C ||phi|| / ||W||, orders of magnitude more), and the reported objective is the
    primal's at those weights."""
    rng = np.random.default_rng(3)
    n, m, C = 120, 300, 3.0
    X = rng.normal(size=(n, 4))
    F = np.cos(X @ rng.normal(size=(4, m)) + rng.uniform(0, 2 * np.pi, m)) * np.sqrt(2 / m)
    y = np.sign(X[:, 0] + 0.3 * rng.normal(size=n))
    Y = np.column_stack([y, -y, np.sign(X[:, 1])])
    mask = np.column_stack([np.ones(n, bool), np.arange(n) % 3 != 0, np.arange(n) < 90])
    rows = dual.Rows([(0, F.astype(np.float32), y)])
    kern = dual.Kernel(rows)
    beta, b, S, rep = dual_svm.svm_newton(kern.K, Y, mask, C, folds=np.array([0, 1, 2]))
    assert rep["converged"]
    W, b0 = kern.primal(beta, b)
    F64 = F.astype(np.float32).astype(np.float64)
    obj = 0.0
    for j in range(3):
        tr = mask[:, j]
        gW, gb = _primal_gradient(F64[tr], Y[tr, j : j + 1], W[:, j : j + 1], b0[j], C)
        assert np.linalg.norm(gW) <= 1e-9 * np.linalg.norm(W[:, j]) and abs(gb[0]) <= 1e-9 * n
        viol = np.maximum(1 - Y[tr, j] * (F64[tr] @ W[:, j] + b0[j]), 0)
        obj += 0.5 * W[:, j] @ W[:, j] + C * viol @ viol
    assert rep["objective"] == pytest.approx(obj, rel=1e-10)
    np.testing.assert_allclose(S, F64 @ W + b0, rtol=0, atol=1e-10 * np.abs(S).max())


def test_newton_points_through_the_fold_inverse_equal_the_direct_solves():
    """Nearly every training row inside the margin (small C): the Newton systems solved
    through the Schur complement of the fold's inverse give the direct Cholesky solves'
    points, for active sets of several sizes (all rows, one out, half out)."""
    rng = np.random.default_rng(4)
    n, m, lam = 120, 300, 0.7
    F = rng.normal(size=(n, m)) / np.sqrt(m)
    kern = dual.Kernel(dual.Rows([(0, F.astype(np.float32), np.zeros(n))]))
    T = np.flatnonzero(np.arange(n) % 3 != 0)
    inv = dual_svm._FoldInverse(kern.K, T, lam)
    As = [T, np.delete(T, 5), np.sort(rng.choice(T, len(T) // 2, replace=False))]
    ys = [np.sign(rng.normal(size=len(A))) for A in As]
    for (bA, b), A, yA in zip(dual_svm._complement_points(inv, As, ys), As, ys, strict=True):
        rA, rb = dual_svm._direct_point(kern.K, lam, A, yA)
        np.testing.assert_allclose(bA, rA, rtol=1e-9, atol=1e-12 * np.abs(rA).max())
        assert b == pytest.approx(rb, rel=1e-9)


def test_dual_svm_train_cv_and_model(wide_cls):
    """C by cross-validation in the dual: each fold's held-out accuracy at each C equals
    that of the fold's problem solved alone by the primal L-BFGS-B (rows within 1e-6 of
    a tie may differ), and the refit satisfies the primal optimality conditions."""
    from rfcli.learn.svm import fit_svm, loss_terms

    res = train(wide_cls, None, TrainSettings(model="svm", multiclass="ovr"))
    r = res.report
    assert r["solver"] == "dual" and r["converged"] and r["C"] == r["cv"]["chosen"]
    F, y = decoded(wide_cls)
    idx = res.model.targets.index(y)
    k = len(res.model.targets.classes)
    Y = np.where(idx[:, None] == np.arange(k)[None, :], 1.0, -1.0)
    gW, gb = _primal_gradient(F, Y, res.model.W, res.model.b, r["C"])
    assert np.linalg.norm(gW) <= 1e-8 * np.linalg.norm(res.model.W)
    fid = fold_ids(0, 0, len(F), 5)
    for C in r["cv"]["grid"][:2]:
        for f in range(5):
            tr, te = fid != f, fid == f
            Fs, Ys = F[tr].astype(np.float32), Y[tr]
            Fa = np.hstack([F[tr], np.ones((tr.sum(), 1))])
            W, b, _ = fit_svm(lambda W32, b, C, d, Fs=Fs, Ys=Ys: loss_terms([(Fs, Ys)], W32, b, C,
                              "squared_hinge", d), M, k, C, tol=1e-12, max_iter=5000,
                              gram=Fa.T @ Fa)  # fmt: skip
            S = F[te] @ W + b
            top2 = np.sort(S, axis=1)[:, -2:]
            close = int(np.sum(top2[:, 1] - top2[:, 0] <= 1e-6))
            acc = float(np.mean(S.argmax(1) == idx[te]))
            assert abs(r["cv"]["fold_scores"][C][f] - acc) <= close / te.sum() + 1e-12, (C, f)


@pytest.mark.parametrize("model", ["svm", "krr"])
def test_dual_models_do_not_depend_on_the_threads(wide_cls, model):
    """The columns' Newton systems run on the engine's threads; every column's arithmetic
    is the same on any of them: models bit-identical for 1 and 3 threads."""
    s = TrainSettings(model=model, multiclass="ovr")  # one-vs-one: tests/learn/test_multiclass.py
    one = train(wide_cls, None, s, threads=1).model
    three = train(wide_cls, None, s, threads=3).model
    assert np.array_equal(one.W, three.W) and np.array_equal(one.b, three.b)


def test_svm_newton_column_of_one_class_ends_at_zero_weights():
    """A column whose training rows are all of one side: w = 0 and b = -1 (every row on
    the margin, zero loss), reached although the set of rows inside becomes empty."""
    rng = np.random.default_rng(6)
    F = rng.normal(size=(40, 64)) / 8
    kern = dual.Kernel(dual.Rows([(0, F.astype(np.float32), np.zeros(40))]))
    Y = np.column_stack([-np.ones(40), np.sign(rng.normal(size=40))])
    beta, b, S, rep = dual_svm.svm_newton(kern.K, Y, np.ones((40, 2), dtype=bool), 1.0)
    assert rep["converged"]
    assert np.abs(beta[:, 0]).max() == 0 and b[0] == pytest.approx(-1.0)


def test_dual_on_dask_gives_the_local_models(wide_reg, scheduler):
    """The rows come back from the workers' slices in row order: the Dask engine's dual
    KRR model equals the local engine's bit for bit (the same rows, the same products)."""
    pytest.importorskip("distributed")
    from rfcli.engines.dask import DaskSettings

    local = train(wide_reg, None, TrainSettings(model="krr")).model
    dist = train(wide_reg, None, TrainSettings(model="krr"), engine="dask",
                 dask=DaskSettings(scheduler=scheduler)).model  # fmt: skip
    assert np.array_equal(local.W, dist.W) and np.array_equal(local.b, dist.b)


def test_line_search_first_piece_shortcut_is_the_sweep():
    """Rows whose minimizer lies before their first breakpoint skip the sort: the same t,
    bit for bit, as the sweep over all sorted breakpoints (random margins and rates, rows
    entering and leaving, rows with no breakpoint, a non-positive slope)."""
    rng = np.random.default_rng(3)
    n, r, C = 400, 30, 2.0
    M = rng.normal(0.0, 1.0, (n, r))
    G = rng.normal(0.0, 1.0, (n, r)) * (rng.random((n, r)) < 0.7)
    M[:40] = -1.0  # no breakpoint at all
    G[:40] = 0.0
    a1 = rng.normal(0.0, 3.0, n)
    a2 = np.abs(rng.normal(0.0, 3.0, n))
    a2[::50] = 0.0
    t = dual_svm._line_searches(a1, a2, M, G, C)
    with np.errstate(divide="ignore", invalid="ignore"):
        tb = M / G
    tb = np.where((G != 0) & (tb > 0) & np.isfinite(tb), tb, np.inf)
    act = (M > 0) | ((M == 0) & (G < 0))
    s1 = np.where(act, G * M, 0.0).sum(axis=1)
    s2 = np.where(act, G * G, 0.0).sum(axis=1)
    swept = np.maximum(dual_svm._sweep(a1, a2, M, G, tb, s1, s2, C), 0.0)
    assert np.array_equal(t, swept)
    first = np.isinf(tb.min(axis=1)) | (t <= tb.min(axis=1))
    assert 0.2 * n < first.sum() < n  # both paths taken
