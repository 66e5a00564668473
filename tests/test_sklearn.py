"""rfcli.sklearn: scikit-learn's own estimator checks, the same numbers as the CLI on the
same rows, model files shared with ``rfcli predict`` both ways, in-memory inputs.

Skipped when scikit-learn is not installed (``pip install 'rfcli[sklearn]'``)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sklearn = pytest.importorskip("sklearn")
pd = pytest.importorskip("pandas")

from click.testing import CliRunner  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import rfcli  # noqa: E402
from rfcli.cli import cli  # noqa: E402
from rfcli.learn.model_file import load_model  # noqa: E402
from rfcli.sklearn import (  # noqa: E402
    GLFRegressor,
    RandomFeatureRidge,
    RandomFeatures,
    RandomFeatureSVC,
    load,
)
from tests.helpers import LETTER, ROOT, SAMPLE  # noqa: E402

QUAKES_TR, QUAKES_TE = SAMPLE / "quakes.train.parquet", SAMPLE / "quakes.test.parquet"


def invoke(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r


@pytest.fixture(scope="module")
def letter(tmp_path_factory):
    """1200 rows of letter.train as a Parquet file and as a DataFrame (X, y)."""
    path = tmp_path_factory.mktemp("sk") / "letter1200.parquet"
    table = pq.read_table(LETTER).slice(0, 1200)
    pq.write_table(table, path, row_group_size=500)
    df = table.to_pandas()
    return path, df.drop(columns="label"), df["label"]


def quakes(path=QUAKES_TR):
    df = pq.read_table(path).to_pandas()
    return df.drop(columns="y"), df["y"]


# -- scikit-learn's estimator checks ------------------------------------------------------
CHECKED = [
    RandomFeatures(n_features=64),
    RandomFeatureSVC(n_features=64),
    RandomFeatureRidge(n_features=64),
    # GLF's feature count is set by its tolerance: 3e-2 keeps the 3-D checks' rules small
    GLFRegressor(n_features=64, tol=3e-2),
]


@pytest.mark.parametrize("est", CHECKED, ids=lambda e: type(e).__name__)
def test_check_estimator(est):
    """Every check passes, none is expected to fail (the array-API check skips itself
    unless SCIPY_ARRAY_API is set).  One BLAS thread: the checks' problems are tiny, and
    BLAS threads spinning against each other slow them tenfold on a loaded 2-core box."""
    with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # GLF -> RFF fallback on 3-D blobs
        results = check_estimator(est, on_skip=None)
    names = {r["check_name"] for r in results}
    assert {"check_estimators_pickle", "check_fit_idempotent", "check_n_features_in"} <= names
    assert all(r["status"] in ("passed", "skipped") for r in results)
    skipped = [r["check_name"] for r in results if r["status"] == "skipped"]
    assert skipped in ([], ["check_array_api_input"]), skipped


# -- the same numbers as the CLI ------------------------------------------------------------
def test_svc_equals_cli_both_ways(letter, tmp_path):
    """encode + train svm on the file == RandomFeatureSVC on its DataFrame: the same
    encoder (fingerprint), the same weights bit for bit; the Python model's file predicts
    in ``rfcli predict`` what the estimator predicts, and the CLI's model loads into an
    estimator that predicts what ``rfcli predict`` writes."""
    path, X, y = letter
    store, cli_model = tmp_path / "s.zarr", tmp_path / "cli.npz"
    invoke("encode", path, "--label", "label", "-m", 64, "--standardize", "-o", store)
    invoke("train", store, "--model", "svm", "-o", cli_model)
    clf = RandomFeatureSVC(n_features=64, standardize=True).fit(X, y)
    model, enc, meta = load_model(str(cli_model))
    assert enc.fingerprint() == clf.encoder_.fingerprint()
    assert np.array_equal(model.W, clf.model_.W) and np.array_equal(model.b, clf.model_.b)
    assert clf.C_ == model.info["C"] and clf.report_["cv"]["mean"] == model.info["cv"]["mean"]
    assert list(enc.columns) == list(X.columns)

    py_model = tmp_path / "py.npz"
    clf.save(str(py_model))
    invoke("predict", py_model, path, "-o", tmp_path / "p.npy")
    assert np.array_equal(np.load(tmp_path / "p.npy"), clf.predict(X))
    # the label column is recorded (the Series' name): rfcli evaluate reads it
    assert rfcli.evaluate(str(py_model), str(path))["accuracy"] == clf.score(X, y)

    invoke("predict", cli_model, path, "-o", tmp_path / "q.npy")
    loaded = load(str(cli_model))
    assert isinstance(loaded, RandomFeatureSVC) and loaded.C_ == clf.C_
    assert np.array_equal(loaded.predict(X), np.load(tmp_path / "q.npy"))
    assert np.array_equal(loaded.decision_function(X), clf.decision_function(X))
    assert list(loaded.feature_names_in_) == list(X.columns)


def test_ridge_equals_cli_both_ways(tmp_path):
    X, y = quakes()
    store, cli_model = tmp_path / "q.zarr", tmp_path / "cli.npz"
    invoke("encode", QUAKES_TR, "--label", "y", "-m", 64, "-o", store)
    invoke("train", store, "--model", "krr", "-o", cli_model)
    reg = RandomFeatureRidge(n_features=64).fit(X, y)
    model, enc, _ = load_model(str(cli_model))
    assert enc.fingerprint() == reg.encoder_.fingerprint()
    assert np.array_equal(model.W, reg.model_.W) and reg.alpha_ == model.info["alpha"]
    py_model = tmp_path / "py.npz"
    reg.save(str(py_model))
    Xt, _ = quakes(QUAKES_TE)
    invoke("predict", py_model, QUAKES_TE, "-o", tmp_path / "p.npy")
    assert np.array_equal(np.load(tmp_path / "p.npy"), reg.predict(Xt))
    loaded = load(str(cli_model))
    assert isinstance(loaded, RandomFeatureRidge)
    assert np.array_equal(loaded.predict(Xt), reg.predict(Xt))


@pytest.mark.parametrize("exact", [True, False])
def test_gpr_equals_cli_both_ways(tmp_path, exact):
    """GLFRegressor on quakes' arrays == rfcli train --model gpr on the file: the same
    encoder, passes, levels, learned hyperparameters and likelihood; the posterior equal up
    to float64 round-off of its solves.  Each model file predicts in ``rfcli predict``
    exactly what its estimator predicts (mean and standard deviation).  By default quakes'
    600 rows take the exact GP (its rule would need more features than rows); without it,
    GLF levels."""
    X, y = quakes()
    cli_model = tmp_path / "cli.npz"
    kind = "exact" if exact else "glf"
    invoke("train", QUAKES_TR, "--model", "gpr", "--label", "y", "-o", cli_model,
           *([] if exact else ["--no-exact"]))  # fmt: skip
    gp = GLFRegressor(exact=exact).fit(X, y)
    model, enc, _ = load_model(str(cli_model))
    info = model.info
    assert gp.features_ == kind and enc.fmap.kind == kind
    assert enc.fingerprint() == gp.encoder_.fingerprint()
    assert gp.report_["data_passes"] == info["data_passes"]
    assert gp.report_["levels"] == json.loads(json.dumps(info["levels"]))
    # float64 round-off: BLAS results may differ in the last bits with memory alignment
    for ours, key in ((gp.log_marginal_likelihood_, "log_marginal_likelihood"),
                      (gp.lengthscale_, "lengthscale"), (gp.noise_variance_, "noise_variance"),
                      (gp.signal_variance_, "signal_variance")):  # fmt: skip
        np.testing.assert_allclose(ours, info[key], rtol=1e-12)
    np.testing.assert_allclose(gp.model_.W, model.W, rtol=0, atol=1e-10 * np.abs(model.W).max())
    cov = model.covariance()
    np.testing.assert_allclose(gp.model_.covariance(), cov, rtol=0,
                               atol=1e-10 * np.abs(cov).max())  # fmt: skip

    Xt, _ = quakes(QUAKES_TE)
    mean, std = gp.predict(Xt, return_std=True)
    py_model = tmp_path / "py.npz"
    gp.save(str(py_model))
    invoke("predict", py_model, QUAKES_TE, "-o", tmp_path / "p.npy")
    p = np.load(tmp_path / "p.npy")
    # the std's product F Sigma rounds by a row's place in the batch on some BLAS kernels
    # (Haswell): equal to float64 round-off, the mean exactly
    assert np.array_equal(p[:, 0], mean)
    np.testing.assert_allclose(p[:, 1], std, rtol=1e-12)
    invoke("predict", cli_model, QUAKES_TE, "-o", tmp_path / "q.npy")
    q = np.load(tmp_path / "q.npy")
    loaded = load(str(cli_model))
    assert isinstance(loaded, GLFRegressor) and loaded.features_ == kind
    m2, s2 = loaded.predict(Xt, return_std=True)
    assert np.array_equal(q[:, 0], m2)
    np.testing.assert_allclose(q[:, 1], s2, rtol=1e-12)
    np.testing.assert_allclose(m2, mean, rtol=1e-10)
    np.testing.assert_allclose(s2, std, rtol=1e-9)
    assert load(str(py_model)).lengthscale_.tolist() == gp.lengthscale_.tolist()


def test_gpr_features_by_dimension():
    """GLF for d <= 3, random Fourier features beyond; ``features_`` says which."""
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(200, 4))
    y = Z[:, 0] + np.sin(2 * Z[:, 1]) + 0.1 * rng.normal(size=200)
    assert GLFRegressor(n_features=64).fit(Z, y).features_ == "rff"
    gp = GLFRegressor(exact=False).fit(Z[:, :1], y)
    assert (
        gp.features_ == "glf" and gp.encoder_.fmap.kind == "glf" and gp.lengthscale_.shape == (1,)
    )
    # by default 200 rows of one input take the exact GP where it is cheaper (docs/gpr.md)
    gp = GLFRegressor().fit(Z[:, :1], y)
    assert gp.features_ == gp.encoder_.fmap.kind in ("glf", "exact")
    with pytest.raises(ValueError, match="features must be"):
        GLFRegressor(features="fourier").fit(Z, y)


def test_gamma_search_equals_cli(letter, tmp_path):
    """gamma='search' on the labelled hash sample: the CLI's bandwidth and encoder."""
    path, X, y = letter
    invoke("encode", path, "--label", "label", "-m", 64, "--normalize-rows", "--gamma",
           "search", "-o", tmp_path / "s.zarr")  # fmt: skip
    clf = RandomFeatureSVC(n_features=64, normalize_rows=True, gamma="search", C=1.0).fit(X, y)
    store = rfcli.FeatureStore(str(tmp_path / "s.zarr"))
    enc = store.encoder
    assert enc.fingerprint() == clf.encoder_.fingerprint()
    # both searched (the same candidates and scores; the choice may be the median heuristic)
    assert clf.encoder_.fit_report["gamma_search"] == store.meta["fit"]["gamma_search"]
    assert clf.gamma_ == enc.fmap.gamma_ == store.meta["fit"]["gamma_search"]["gamma"]
    with pytest.raises(ValueError, match="give y"):
        RandomFeatures(gamma="search").fit(X)


# -- inputs --------------------------------------------------------------------------------
def test_numpy_dataframe_and_arrow_inputs_agree(letter):
    """The same rows as a DataFrame, a pyarrow Table and a NumPy array (float64 or
    float32 columns) give the same model; a DataFrame's column names go into the model
    (x0.. for arrays) and are checked at predict time."""
    _, X, y = letter
    X, y = X.iloc[:400], y.iloc[:400]
    kw = dict(n_features=64, C=1.0, standardize=True)
    a = RandomFeatureSVC(**kw).fit(X, y)
    b = RandomFeatureSVC(**kw).fit(pa.Table.from_pandas(X), y.to_numpy())
    c = RandomFeatureSVC(**kw).fit(X.to_numpy(), y.to_numpy())
    d = RandomFeatureSVC(**kw).fit(X.to_numpy(np.float32), y.to_numpy())
    for other in (b, c, d):
        assert np.array_equal(other.model_.W, a.model_.W)
    assert list(a.encoder_.columns) == list(X.columns) == list(b.feature_names_in_)
    assert c.encoder_.columns == [f"x{j}" for j in range(16)]
    assert not hasattr(c, "feature_names_in_")
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        assert np.array_equal(a.predict(X.to_numpy()), a.predict(X))
    with pytest.raises(ValueError, match="Feature names"):
        a.predict(X.rename(columns={"f0": "g0"}))


# -- RandomFeatures ---------------------------------------------------------------------------
def test_random_features_estimate_the_kernel():
    """F(x).F(y) estimates exp(-gamma ||x-y||^2): 2-bit LM features are biased toward 0 by
    the Chebyshev factor alpha_1^2 = (1 - 2 D1)^2 of the quantizer (docs/methods.md, LM
    bias) plus higher terms; the scale-free error is the RFF Monte Carlo error, whose
    standard deviation is at most sqrt(2/m) per entry."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 6))
    K = np.exp(-0.1 * ((X[:, None] - X[None]) ** 2).sum(-1))
    m = 8192
    F = RandomFeatures(n_features=m, gamma=0.1, quantizer="none").fit(X).transform(X)
    assert F.dtype == np.float32 and F.shape == (200, m)
    err = np.abs(F @ F.T - K)
    assert err.mean() < 2 * np.sqrt(2 / m) and err.max() < 6 * np.sqrt(2 / m)
    rf = RandomFeatures(n_features=m, gamma=0.1, bits=2).fit(X)
    F2 = rf.transform(X)
    K2 = (F2 @ F2.T).astype(np.float64)
    beta = (K2 * K).sum() / (K2 * K2).sum()  # the best scale (Li & Li, Definition 5.1)
    assert np.abs(beta * K2 - K).mean() < 2 * np.sqrt(2 / m)
    codes = rf.encode(X)
    assert codes.packed.shape == (200, m * 2 // 8) and codes.packed.dtype == np.uint8
    assert np.array_equal(rf.decode(codes), F2)
    assert np.array_equal(rf.decode(codes.packed, codes.norms), F2)
    unit = rf.decode(codes, normalized=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1, rtol=1e-5)
    assert rf.get_feature_names_out()[:2].tolist() == ["randomfeatures0", "randomfeatures1"]


def test_random_features_store_round_trip(letter, tmp_path):
    """write_store writes what rfcli encode writes for the same rows (its decoded features
    are transform's), rfcli train trains on it, and load reads a store's encoder back."""
    path, X, y = letter
    rf = RandomFeatures(n_features=64, standardize=True).fit(X)
    store = tmp_path / "py.zarr"
    rf.write_store(str(store), X, y)
    invoke("encode", path, "--label", "label", "-m", 64, "--standardize", "-o",
           tmp_path / "cli.zarr")  # fmt: skip
    a, b = rfcli.FeatureStore(str(store)), rfcli.FeatureStore(str(tmp_path / "cli.zarr"))
    assert a.meta["fingerprint"] == b.meta["fingerprint"]
    Fa = np.vstack([F for _, F in a.iter_features()])
    Fb = np.vstack([F for _, F in b.iter_features()])
    assert np.array_equal(Fa, Fb) and np.array_equal(Fa, rf.transform(X))
    invoke("train", store, "--model", "krr", "-o", tmp_path / "k.npz")
    back = RandomFeatures.load(str(tmp_path / "cli.zarr"))
    assert np.array_equal(back.transform(X), Fa)
    with pytest.raises(NotImplementedError, match="write_store"):
        rf.save(str(tmp_path / "x.npz"))


# -- RandomFeatureRidge ------------------------------------------------------------------
def test_ridge_multi_output():
    """A y of k columns is k ridge problems sharing the features (and alpha): each output
    equals the single-output fit at the same alpha; (n, 1) stays 2-D."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(400, 3))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] ** 2, X[:, 2]])
    multi = RandomFeatureRidge(n_features=128, alpha=0.1).fit(X, Y)
    P = multi.predict(X)
    assert P.shape == (400, 3) and multi.n_outputs_ == 3
    for j in range(3):
        one = RandomFeatureRidge(n_features=128, alpha=0.1).fit(X, Y[:, j])
        np.testing.assert_allclose(multi.model_.W[:, j], one.model_.W[:, 0], rtol=1e-9,
                                   atol=1e-12 * np.abs(one.model_.W).max())  # fmt: skip
        np.testing.assert_allclose(P[:, j], one.predict(X), rtol=1e-5, atol=1e-6)
    assert RandomFeatureRidge(n_features=64, alpha=0.1).fit(X, Y[:, :1]).predict(X).shape == (
        400, 1)  # fmt: skip
    with pytest.raises(ValueError, match="one regression output"):
        multi.save("never-written.npz")
    auto = RandomFeatureRidge(n_features=128).fit(X, Y)
    assert auto.score(X, Y) > 0.95 and auto.alpha_ > 0


# -- scikit-learn integration --------------------------------------------------------------
def test_pipeline_grid_search_clone_pickle(tmp_path):
    from joblib import dump
    from joblib import load as jload
    from sklearn.datasets import make_moons
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = make_moons(400, noise=0.15, random_state=0)
    pipe = make_pipeline(StandardScaler(), RandomFeatureSVC(n_features=128))
    grid = {"randomfeaturesvc__gamma": [0.1, 1.0], "randomfeaturesvc__C": [0.1, 10.0]}
    search = GridSearchCV(pipe, grid, cv=3).fit(X, y)
    assert search.best_params_ == {"randomfeaturesvc__C": 10.0, "randomfeaturesvc__gamma": 1.0}
    best = search.best_estimator_
    assert best.score(X, y) > 0.95
    dump(best, tmp_path / "p.joblib")
    again = jload(tmp_path / "p.joblib")
    assert np.array_equal(again.predict(X), best.predict(X))
    svc = best[-1]
    assert np.array_equal(pickle.loads(pickle.dumps(svc)).decision_function(X),
                          svc.decision_function(X))  # fmt: skip
    fresh = clone(svc)
    assert fresh.get_params() == svc.get_params() and not hasattr(fresh, "encoder_")


def test_random_state():
    """An int random_state is rfcli's seed; None draws one (different fits)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    a = RandomFeatures(n_features=32, random_state=7).fit(X)
    assert a.encoder_.fmap.seed == 7
    b, c = RandomFeatures(n_features=32, random_state=None).fit(X), RandomFeatures(
        n_features=32, random_state=None).fit(X)  # fmt: skip
    assert b.encoder_.fmap.seed != c.encoder_.fmap.seed
    with pytest.raises(ValueError, match="random_state"):
        RandomFeatures(random_state=-1).fit(X)


def test_errors_name_the_parameters():
    X = np.random.default_rng(0).normal(size=(50, 2))
    y = np.arange(50) % 2
    with pytest.raises(ValueError, match="n_features"):
        RandomFeatureSVC(n_features=0).fit(X, y)
    with pytest.raises(ValueError, match="C must be"):
        RandomFeatureSVC(C=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="alpha must be"):
        RandomFeatureRidge(alpha="big").fit(X, y.astype(float))
    with pytest.raises(ValueError, match="loss"):
        RandomFeatureSVC(loss="log").fit(X, y)


# -- packaging ---------------------------------------------------------------------------------
def _python(code: str) -> subprocess.CompletedProcess:
    # a pytest run inside needs no third-party plugins (hypothesis, xdist: seconds of imports)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env=env)  # fmt: skip


def test_import_rfcli_does_not_import_sklearn():
    r = _python("import sys, rfcli; rfcli.make_quantizer('lm', 2); print('sklearn' in sys.modules)")
    assert r.stdout.strip() == "False", r.stderr


def test_without_sklearn_import_fails_and_doctests_skip():
    """With scikit-learn absent, importing rfcli.sklearn names the extra to install, and
    pytest's doctest collection of the package skips instead of erroring."""
    block = "import sys; sys.modules['sklearn'] = None; "
    r = _python(block + "import rfcli.sklearn")
    assert "pip install 'rfcli[sklearn]'" in r.stderr and r.returncode != 0
    r = _python(block + "import pytest; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', "
                "'--doctest-modules', 'rfcli/sklearn', 'rfcli/io/arrays.py']))")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout and "skipped" in r.stdout, r.stdout
    assert os.path.isdir(ROOT / "rfcli" / "sklearn")
