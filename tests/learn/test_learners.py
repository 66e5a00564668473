"""Learners against direct references: KRR vs a dense numpy solve, the SVM primal vs its
dual optimum (strong duality) solved independently."""

import os

import numpy as np
import pytest
from scipy.optimize import minimize

from rfcli import EncodeSettings, FeatureStore, ReadSettings, encode
from rfcli.errors import ConfigError, IncompatibleError, UsageError
from rfcli.jobs.evaluate import evaluate
from rfcli.jobs.predict import predict
from rfcli.jobs.train import TrainSettings, train
from rfcli.learn.model_file import load_model
from rfcli.learn.svm import fit_svm, loss_terms
from tests.helpers import write_parquet


@pytest.fixture(scope="module")
def reg_store(tmp_path_factory):
    d = tmp_path_factory.mktemp("reg")
    rng = np.random.default_rng(1)
    n = 500
    X = rng.uniform(-1, 1, (n, 3))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.05 * rng.normal(size=n)
    src = write_parquet(d / "reg.parquet", a=X[:, 0], b=X[:, 1], c=X[:, 2], y=y, name=np.arange(n))
    store = os.fspath(d / "reg.zarr")
    encode(
        src,
        store,
        EncodeSettings(n_features=48, bits=3, gamma=1.0),
        ReadSettings(label="y", ids=["name"]),
    )
    return src, store


def decoded(store_path, normalized=False):
    st = FeatureStore(store_path)
    return np.concatenate([f for _, f in st.iter_features(normalized=normalized)]).astype(
        np.float64
    ), st


def test_krr_matches_dense_solve(reg_store, tmp_path):
    _, store = reg_store
    res = train(store, None, TrainSettings(model="krr", alpha=0.3))
    F, st = decoded(store)
    y = st.labels().astype(np.float64)
    # intercept unpenalized: centre, solve, recover b
    Fc, yc = F - F.mean(0), y - y.mean()
    H = Fc.T @ Fc + 0.3 * np.eye(F.shape[1])
    w = np.linalg.solve(H, Fc.T @ yc)
    b = y.mean() - F.mean(0) @ w
    # the store's float32 features are multiplied in float32 blocks (RidgeStats): Phi'Phi is
    # exact up to the rounding of sums of n float32 products, about sqrt(n) eps sum_i F_ij^2
    # (a random walk), which moves w by at most ||dG|| ||w|| / lambda_min(H) (a 1% error in
    # alpha moves it 25x further)
    dG = np.sqrt(len(F)) * np.finfo(np.float32).eps * (F**2).sum(0).max()
    lam = np.linalg.eigvalsh(H)[0]
    W, b_ = res.model.W[:, 0], res.model.b[0]
    assert np.linalg.norm(W - w) <= dG * np.linalg.norm(w) / lam
    assert abs(b_ - b) <= np.abs(F.mean(0)) @ np.abs(W - w) + 1e-12
    # train MSE from the streamed statistics equals the direct residual (its error is
    # W' dG W over the rows)
    mse = np.mean((F @ W + b_ - y) ** 2)
    assert abs(res.report["train_mse"] - mse) <= 2 * dG * (W @ W) / len(F) + 1e-12


def test_krr_auto_alpha_picks_by_validation_and_predicts(reg_store, tmp_path):
    src, store = reg_store
    model = os.fspath(tmp_path / "krr.npz")
    res = train(store, model, TrainSettings(model="krr"))
    mses = res.report["validation_mse"]
    assert res.report["alpha"] == min(mses, key=mses.get)
    ev_store = evaluate(model, store)
    ev_raw = evaluate(model, src)  # raw data encoded on the fly: identical numbers
    for k in ("mse", "rmse", "r2"):
        assert ev_store[k] == pytest.approx(ev_raw[k], rel=1e-9)
    assert ev_store["r2"] > 0.9
    out = tmp_path / "pred.parquet"
    predict(model, src, os.fspath(out), ids=["name"])
    import pyarrow.parquet as pq

    t = pq.read_table(out)
    assert t.column_names == ["name", "prediction"]
    F, _ = decoded(store)
    np.testing.assert_allclose(
        t["prediction"].to_numpy(), res.model.scores(F.astype(np.float32))[:, 0], rtol=1e-6
    )


def svm_dual_objective(F, y, C, loss):
    """max_a sum a - 1/2 a'Qa (- a'a/(4C) for squared hinge), a >= 0 (<= C for hinge)."""
    Q = (y[:, None] * F) @ (y[:, None] * F).T
    if loss == "squared_hinge":
        Q = Q + np.eye(len(y)) / (2 * C)
        bounds = [(0, None)] * len(y)
    else:
        bounds = [(0, C)] * len(y)
    res = minimize(
        lambda a: (0.5 * a @ Q @ a - a.sum(), Q @ a - 1),
        np.zeros(len(y)),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 20000, "ftol": 1e-15, "gtol": 1e-12},
    )
    return -res.fun


@pytest.mark.parametrize("loss,rel", [("squared_hinge", 1e-6), ("hinge", 2e-3)])
def test_svm_primal_reaches_dual_optimum(loss, rel):
    rng = np.random.default_rng(0)
    n, m = 200, 20
    F = rng.normal(size=(n, m)).astype(np.float32) / np.sqrt(m)
    y = np.sign(F[:, 0] + 0.5 * F[:, 1] + 0.3 * rng.normal(size=n))
    C = 2.0

    def passes(W32, b, C, delta):
        rows = [(F[:120], y[:120, None]), (F[120:], y[120:, None])]
        return loss_terms(rows, W32, b, C, loss, delta)

    W, b, rep = fit_svm(passes, m, 1, C, loss=loss, fit_intercept=False, tol=1e-12, max_iter=5000)
    dual = svm_dual_objective(F.astype(np.float64), y, C, loss)
    assert rep["objective"] == pytest.approx(dual, rel=rel)
    # without the preconditioner the same optimum is reached
    W2, _, rep2 = fit_svm(passes, m, 1, C, loss=loss, fit_intercept=False, tol=1e-12, max_iter=5000)
    np.testing.assert_allclose(W2, W, atol=1e-5)


def test_svm_preconditioned_equals_plain():
    rng = np.random.default_rng(3)
    n, m, k = 300, 16, 3
    F = rng.normal(size=(n, m)).astype(np.float32)
    idx = rng.integers(0, k, n)
    Y = -np.ones((n, k))
    Y[np.arange(n), idx] = 1

    def passes(W32, b, C, delta):
        return loss_terms([(F, Y)], W32, b, C, "squared_hinge", delta)

    G = np.zeros((m + 1, m + 1))
    Fa = np.hstack([F.astype(np.float64), np.ones((n, 1))])
    G[:] = Fa.T @ Fa
    W1, b1, r1 = fit_svm(passes, m, k, 1.0, tol=1e-13, max_iter=5000)
    W2, b2, r2 = fit_svm(passes, m, k, 1.0, tol=1e-13, max_iter=5000, gram=G)
    assert r2["objective"] == pytest.approx(r1["objective"], rel=1e-8)
    np.testing.assert_allclose(W2, W1, atol=1e-4)
    np.testing.assert_allclose(b2, b1, atol=1e-4)


@pytest.fixture(scope="module")
def cls_stores(tmp_path_factory, letter_small):
    d = tmp_path_factory.mktemp("cls")
    tr, other = os.fspath(d / "tr.zarr"), os.fspath(d / "other.zarr")
    s = EncodeSettings(n_features=256, bits=2, normalize_rows=True)
    encode(os.fspath(letter_small), tr, s, ReadSettings(label="label"))
    encode(
        os.fspath(letter_small),
        other,
        EncodeSettings(n_features=256, seed=9),
        ReadSettings(label="label"),
    )
    return tr, other


def test_svm_multiclass_train_evaluate_and_mismatch(cls_stores, letter_small, tmp_path):
    tr, other = cls_stores
    model = os.fspath(tmp_path / "svm.npz")
    res = train(tr, model, TrainSettings(model="svm", C=10.0))
    assert res.report["converged"] and res.report["iterations"] > 0
    ev = evaluate(model, tr)
    assert ev["accuracy"] > 0.9  # training accuracy on 600 rows, 26 classes
    assert ev == {**ev, "bits_per_sample": 512, "quantizer": "lm"}
    ev_raw = evaluate(model, os.fspath(letter_small))
    assert ev_raw["accuracy"] == ev["accuracy"] and ev_raw["macro_f1"] == ev["macro_f1"]
    with pytest.raises(IncompatibleError, match="another map"):
        evaluate(model, other)
    m, enc, meta = load_model(model)
    assert meta["fingerprint"] == FeatureStore(tr).meta["fingerprint"]
    assert len(m.targets.classes) == 26


def test_svm_auto_c_uses_cross_validation(cls_stores, monkeypatch):
    """C auto picks the best mean held-out accuracy (details: tests/learn/test_selection.py)."""
    from rfcli.jobs import train as training

    monkeypatch.setattr(training, "C_GRID", (1.0, 10.0))
    tr, _ = cls_stores
    res = train(tr, None, TrainSettings(model="svm", cv_folds=3, max_iter=30))
    acc = res.report["validation_accuracy"]
    assert res.report["C"] == max(acc, key=acc.get) and res.report["cv"]["folds"] == 3


def test_bad_model_files(tmp_path, cls_stores):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ConfigError):
        load_model(os.fspath(bad))
    np.savez(tmp_path / "nometa.npz", W=np.zeros(3))
    with pytest.raises(ConfigError, match="metadata"):
        load_model(os.fspath(tmp_path / "nometa.npz"))
    with pytest.raises(UsageError):
        train(cls_stores[0], None, TrainSettings(model="svm", C=-1.0))


def test_svm_refuses_regression_target(reg_store):
    with pytest.raises(UsageError, match="krr"):
        train(reg_store[1], None, TrainSettings(model="svm"))
