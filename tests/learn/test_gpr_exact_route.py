"""The exact GP (rfcli.learn.gpr_exact, rfcli.maps.exact): its likelihood and gradient, its
predictive model, and when GP regression takes it (docs/gpr.md, Exact GP)."""

from __future__ import annotations

import numpy as np
import pytest

from rfcli.errors import UsageError
from rfcli.io.settings import ReadSettings
from rfcli.jobs.train_gpr import GPRSettings, train_gpr
from rfcli.learn.gpr_exact import ExactGP, exact_memory_need, max_exact_rows
from rfcli.learn.model_file import load_model
from rfcli.maps.base import FeatureMap
from rfcli.maps.exact import TrainingRowsMap, correlation
from rfcli.maps.fourier import matern
from tests.helpers import write_parquet

KERNELS = ("gaussian", "matern12", "matern32", "matern52")


def _dense_lml(X, y, theta, kernel):
    """The log density of y under N(0, s2 C + lambda I), from the textbook formula."""
    s2, lam = np.exp(theta[0]), np.exp(theta[-1])
    ell = np.broadcast_to(np.exp(theta[1:-1]), (X.shape[1],))
    r = np.sqrt((((X[:, None, :] - X[None, :, :]) / ell) ** 2).sum(-1))
    nu = {"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}
    C = np.exp(-0.5 * r * r) if kernel == "gaussian" else matern(r, nu[kernel], 1.0)
    K = s2 * C + lam * np.eye(len(y))
    sign, logdet = np.linalg.slogdet(K)
    assert sign > 0
    return -0.5 * y @ np.linalg.solve(K, y) - 0.5 * logdet - 0.5 * len(y) * np.log(2 * np.pi)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("ard", [False, True])
def test_lml_and_gradient_are_the_exact_gps(kernel, ard):
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(60, 2))
    y = np.sin(4 * X[:, 0]) + 0.1 * rng.normal(size=60)
    gp = ExactGP(X, y, kernel, ard)
    theta = np.log([1.3, *([0.3, 0.5] if ard else [0.4]), 0.05])
    lml, g = gp.lml_and_grad(theta)
    assert lml == pytest.approx(_dense_lml(X, y, theta, kernel), abs=1e-9)
    h = 1e-6
    fd = [
        (gp.lml_and_grad(theta + e, False)[0] - gp.lml_and_grad(theta - e, False)[0]) / (2 * h)
        for e in h * np.eye(len(theta))
    ]
    # central differences: error O(h^2 |lml'''|) + rounding O(eps |lml| / h), ~1e-8 here
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_the_map_is_the_kernel_against_the_training_rows_and_round_trips():
    rng = np.random.default_rng(2)
    Z, X = rng.normal(size=(30, 3)), rng.normal(size=(7, 3))
    fmap = TrainingRowsMap(kernel="matern32", lengthscale=[0.5, 1.0, 2.0]).fit_rows(Z)
    ell = np.array([0.5, 1.0, 2.0])
    r = np.sqrt((((X[:, None, :] - Z[None, :, :]) / ell) ** 2).sum(-1))
    np.testing.assert_allclose(fmap.transform(X), matern(r, 1.5, 1.0), rtol=1e-12, atol=1e-15)
    again = FeatureMap.from_state(*fmap.to_state())
    assert again == fmap and np.array_equal(again.transform(X), fmap.transform(X))
    assert correlation("gaussian", np.array([0.0, 2.0])).tolist() == [1.0, np.exp(-1.0)]
    with pytest.raises(UsageError, match="training rows"):
        TrainingRowsMap().fit(3)


def _rough(tmp_path, n=300, d=2, seed=3):
    """A rough surface on few rows: a Gauss-Legendre rule for its short lengthscales would
    need more features than the rows."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, d))
    y = np.sin(25 * X[:, 0]) * np.cos(20 * X[:, -1]) + 0.05 * rng.normal(size=n)
    cols = {f"x{j}": X[:, j] for j in range(d)}
    return write_parquet(tmp_path / f"rough{d}.parquet", **cols, y=y), X, y


def test_small_rough_data_takes_the_exact_gp_and_predicts_its_posterior(tmp_path):
    path, X, y = _rough(tmp_path)
    res = train_gpr(str(path), None, GPRSettings(), ReadSettings(label="y"))
    rep, model, enc = res.report, res.model, res.encoder
    assert rep["exact_rows"] == 300 and enc.fmap.kind == "exact" and rep["rank"] == 300
    assert rep["levels"][-1]["kind"] == "exact" or any(
        lv["kind"] == "exact" for lv in rep["levels"]
    )
    # the model's mean and standard deviation are the exact GP posterior's (Rasmussen &
    # Williams eq. 2.25-2.26) at the learned hyperparameters, in y units
    mu, sd = y.mean(), y.std()
    Xs = (X - X.mean(0)) / X.std(0)
    rng = np.random.default_rng(9)
    T = rng.uniform(0, 1, (50, 2))
    Ts = (T - X.mean(0)) / X.std(0)
    s2, lam = rep["signal_variance"] / sd**2, rep["noise_variance"] / sd**2
    ell = rep["lengthscale"][0]

    def k(A, B):
        return np.exp(-0.5 * (((A[:, None, :] - B[None, :, :]) / ell) ** 2).sum(-1))

    K = s2 * k(Xs, Xs) + lam * np.eye(len(y))
    ks = s2 * k(Ts, Xs)
    mean = mu + sd * ks @ np.linalg.solve(K, (y - mu) / sd)
    var = sd**2 * (s2 + lam - np.einsum("ij,ji->i", ks, np.linalg.solve(K, ks.T)))
    F = enc.features(T)
    np.testing.assert_allclose(model.predict(F), mean, rtol=1e-8, atol=1e-8 * sd)
    np.testing.assert_allclose(model.std(F), np.sqrt(var), rtol=1e-7)
    # the likelihood reported is the exact GP's of the original targets
    theta = np.log([s2, ell, lam])
    lml = _dense_lml(Xs, (y - mu) / sd, theta, "gaussian") - len(y) * np.log(sd)
    assert rep["log_marginal_likelihood"] == pytest.approx(lml, abs=1e-6)


def test_without_exact_or_over_its_rows_the_levels_go_on(tmp_path, monkeypatch):
    path, _, _ = _rough(tmp_path)
    rep = train_gpr(str(path), None, GPRSettings(exact=False), ReadSettings(label="y")).report
    assert "exact_rows" not in rep and all(lv["kind"] != "exact" for lv in rep["levels"])
    # the memory an exact fit needs bounds its rows
    assert max_exact_rows(exact_memory_need(300, 2), 2) == 300
    assert max_exact_rows(exact_memory_need(300, 2) - 1, 2) == 299
    # more rows than the exact GP takes: GLF levels (rules of more features than rows)
    import rfcli.learn.gpr_exact as E

    monkeypatch.setattr(E, "EXACT_MAX_ROWS", 299)
    assert max_exact_rows(1 << 40, 2) == 299
    rep = train_gpr(str(path), None, GPRSettings(), ReadSettings(label="y")).report
    assert "exact_rows" not in rep
    assert max(lv["features"] for lv in rep["levels"]) > 300


def test_a_rule_over_the_budget_is_no_refusal_when_the_rows_fit(tmp_path):
    """itsadug::eeg-like data (3-D, few rows, short lengthscales): its rules exceed a small
    budget, which the exact GP of its rows fits."""
    path, _, _ = _rough(tmp_path, n=400, d=3, seed=4)
    budget = 128 << 20  # the coarse rule fits, the levels' rules do not
    assert max_exact_rows(budget, 3) >= 400
    read = ReadSettings(label="y")
    with pytest.raises(UsageError, match="of memory"):
        train_gpr(str(path), None, GPRSettings(exact=False), read, memory=budget)
    rep = train_gpr(str(path), None, GPRSettings(), read, memory=budget).report
    assert rep["exact_rows"] == 400


def test_no_coarse_rule_that_fits_is_no_refusal_when_the_rows_fit(tmp_path):
    """Matern 1/2 on a 2-D box: even the coarse rule at the box's width is over the budget
    (its heavy spectrum: millions of nodes); the exact GP of the rows fits it, from the
    exact scan's starts on the row sample -- its optimum, the same as the exact GP's own
    search from there; refused without the exact route."""
    path, X, y = _rough(tmp_path, n=300, d=2, seed=5)
    read = ReadSettings(label="y")
    with pytest.raises(UsageError, match="coarse scan"):
        train_gpr(str(path), None, GPRSettings(kernel="matern12", exact=False), read)
    res = train_gpr(str(path), None, GPRSettings(kernel="matern12"), read)
    rep = res.report
    assert rep["exact_rows"] == 300 and "none fits" in rep["coarse_rule"]
    assert [lv["kind"] for lv in rep["levels"]] == ["exact"]
    # the LML it reports is the exact GP's at its hyperparameters (the textbook formula)
    lv = rep["levels"][-1]
    theta = np.log([rep["signal_variance"] / np.var(y), *lv["lengthscale"],
                    rep["noise_variance"] / np.var(y)])  # fmt: skip
    Xs = (X - X.mean(0)) / X.std(0)
    ys = (y - y.mean()) / y.std()
    assert _dense_lml(Xs, ys, theta, "matern12") == pytest.approx(lv["lml"], abs=1e-6)


def test_the_exact_model_is_the_same_on_any_thread_count_and_chunking(tmp_path):
    path, _, _ = _rough(tmp_path)
    models = []
    for threads, chunk in ((1, 65536), (2, 37)):
        out = tmp_path / f"m{threads}.npz"
        train_gpr(str(path), str(out), GPRSettings(), ReadSettings(label="y", chunk_rows=chunk),
                  threads=threads)  # fmt: skip
        models.append(load_model(str(out)))
    (m1, e1, _), (m2, e2, _) = models
    assert e1.fingerprint() == e2.fingerprint()
    assert np.array_equal(m1.W, m2.W) and np.array_equal(m1.cov_factor, m2.cov_factor)
    assert m1.prior == m2.prior > 0


# -- one input: the band route -----------------------------------------------------------
@pytest.mark.parametrize("kernel", KERNELS)
def test_a_series_band_step_is_the_dense_step(kernel, monkeypatch):
    import rfcli.learn.gpr_exact as E

    rng = np.random.default_rng(1)
    X = rng.uniform(size=(400, 1))
    y = np.sin(30 * X[:, 0]) + 0.1 * rng.normal(size=400)
    gp = ExactGP(X, y, kernel, False)
    theta = np.log([1.3, 0.002, 0.05])
    assert gp.banded(0.002) and 0 < gp.half_width(0.002) < 50
    band = gp.lml_and_grad(theta)
    monkeypatch.setattr(E, "BAND_SHARE", 1e9)  # every step dense
    assert not gp.banded(0.002)
    dense = gp.lml_and_grad(theta)
    assert band[0] == pytest.approx(dense[0], abs=1e-9)
    np.testing.assert_allclose(band[1], dense[1], rtol=1e-9, atol=1e-9)
    assert band[0] == pytest.approx(_dense_lml(gp.X, gp.y, theta, kernel), abs=1e-9)


def test_the_band_recurrence_gives_the_inverse_within_the_band():
    from scipy.linalg import cholesky_banded

    from rfcli.learn.gpr_exact import _band_inverse

    rng = np.random.default_rng(4)
    n, b = 60, 5
    A = np.zeros((n, n))
    for t in range(b + 1):
        v = rng.uniform(-0.3, 0.3, n - t) if t else rng.uniform(2, 3, n)
        A[np.arange(t, n), np.arange(n - t)] = v
        A[np.arange(n - t), np.arange(t, n)] = v
    ab = np.array([np.concatenate([np.diagonal(A, -t), np.zeros(t)]) for t in range(b + 1)])
    Z, inv = _band_inverse(cholesky_banded(ab, lower=True)), np.linalg.inv(A)
    near = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= b
    np.testing.assert_allclose(Z[near], inv[near], rtol=1e-12, atol=1e-14)


def test_a_rough_series_takes_the_band_and_predicts_its_posterior(tmp_path):
    rng = np.random.default_rng(6)
    x = np.sort(rng.uniform(0, 300, 600))
    y = np.sin(x) + np.sin(2.3 * x) + 0.2 * rng.normal(size=600)
    path = write_parquet(tmp_path / "series.parquet", t=x, y=y)
    out = tmp_path / "m.npz"
    res = train_gpr(str(path), str(out), GPRSettings(), ReadSettings(label="y"))
    rep, (model, enc, _) = res.report, load_model(str(out))
    assert rep["exact_rows"] == 600 and enc.fmap.kind == "exact"
    assert model.cov_band is not None and model.cov_factor is None
    assert model.cov_band.shape[1] == 600 and len(model.cov_band) < 600 / 8
    mu, sd, xm, xs = y.mean(), y.std(), x.mean(), x.std()
    s2, lam = rep["signal_variance"] / sd**2, rep["noise_variance"] / sd**2
    ell = rep["lengthscale"][0]
    T = rng.uniform(0, 300, 40)

    def k(a, b):
        return s2 * np.exp(-0.5 * (np.subtract.outer((a - xm) / xs, (b - xm) / xs) / ell) ** 2)

    K, ks = k(x, x) + lam * np.eye(600), k(T, x)
    mean = mu + sd * ks @ np.linalg.solve(K, (y - mu) / sd)
    var = sd**2 * (s2 + lam - np.einsum("ij,ji->i", ks, np.linalg.solve(K, ks.T)))
    F = enc.features(T[:, None])
    np.testing.assert_allclose(model.predict(F), mean, rtol=1e-8, atol=1e-8 * sd)
    np.testing.assert_allclose(model.std(F), np.sqrt(var), rtol=1e-7)


def test_the_exact_gps_targets_are_scaled_the_same_for_any_chunking(tmp_path):
    """A coarse rule of fewer features than rows: that pass sums its rows (GPStats), whose
    rounding depends on the chunks (so do the scans' starts, as for GLF levels); the exact
    GP's targets are scaled from the kept rows in their hash order, the same numbers for any
    chunking, and the models agree to the starts' rounding."""
    rng = np.random.default_rng(5)
    x = np.round(rng.uniform(size=400), 2)
    y = np.sin(30 * x) + 0.1 * rng.normal(size=400)
    path = write_parquet(tmp_path / "r.parquet", x=x, y=y)
    models = []
    for chunk in (29, 100_000):
        res = train_gpr(str(path), None, GPRSettings(), ReadSettings(label="y", chunk_rows=chunk))
        assert res.report["exact_rows"] == 400
        assert res.report["levels"][0]["features"] < 400  # the coarse pass summed its rows
        models.append(res.model)
    assert models[0].b == models[1].b and models[0].prior > 0
    np.testing.assert_allclose(models[0].W, models[1].W, rtol=1e-6)


def test_a_band_fit_takes_no_dense_step_and_its_limit_is_the_last_band_lengthscale(
    tmp_path, monkeypatch
):
    """A series taken for its band steps: L-BFGS-B's box ends where the band ends, so no
    trial step lands on a dense step (at 16,384 rows one costs minutes)."""
    rng = np.random.default_rng(6)
    x = np.sort(rng.uniform(0, 300, 600))
    y = np.sin(x) + np.sin(2.3 * x) + 0.2 * rng.normal(size=600)
    gp = ExactGP(x[:, None], y, "gaussian", False)
    top = gp.band_limit(1e-4, 10.0)
    assert gp.banded(top) and not gp.banded(top * 1.01)
    assert gp.band_limit(1e-4, top / 2) == top / 2

    def dense(*a, **k):
        raise AssertionError("a dense step")

    monkeypatch.setattr(ExactGP, "_parts", dense)
    path = write_parquet(tmp_path / "series.parquet", t=x, y=y)
    rep = train_gpr(str(path), None, GPRSettings(), ReadSettings(label="y")).report
    assert rep["exact_rows"] == 600


def test_a_first_row_dropped_for_its_nan_is_no_crash(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, 300)
    y = np.sin(x) + 0.1 * rng.normal(size=300)
    x[::7] = np.nan  # row 0 among them
    path = write_parquet(tmp_path / "nan.parquet", x=x, y=y)
    rep = train_gpr(str(path), None, GPRSettings(), ReadSettings(label="y", on_nan="drop")).report
    assert rep["rows"] == 300 - len(range(0, 300, 7))


def test_past_a_series_band_limit_the_dense_exact_gp_not_a_refusal(monkeypatch):
    """A series whose rule is over the budget and whose optimum sits at the band's limit: the
    dense exact GP over the whole bounds (the rows fit), not a refusal; the band route is
    then off, and the cost of later exact fits is the dense step's."""
    import types

    import rfcli.jobs.gpr_exact_route as R
    import rfcli.jobs.gpr_levels as L
    from rfcli.maps.glf_rules import RuleTooLarge

    rng = np.random.default_rng(0)
    n = 2000
    x = np.sort(rng.uniform(0, 300, n))
    y = np.sin(x) + 0.1 * rng.normal(size=n)
    from rfcli.jobs.gpr_learn import GPInputs
    from rfcli.learn.gpr_exact import ENTRY_FLOPS

    lv = L.Levels(None, GPInputs(["x"], None), x[:, None], np.array([[0.01, 100.0]]),
                  GPRSettings(), {}, {}, rows=n, memory=1 << 34)  # fmt: skip
    lv.xy, lv.n = np.column_stack([x, y]), n  # what the first pass keeps
    gp = lv._exact_gp()
    cap = gp.band_limit(0.01, 100.0)
    assert 0.01 < cap < 100.0
    boxes = []

    def at_the_top(objective, box, starts, progress=None, title=""):
        boxes.append(box[1])  # the lengthscale's bounds; the optimum at their top
        theta = np.log([1.0, box[1][1], 0.01])
        return types.SimpleNamespace(x=theta, success=True, fun=0.0), [{"iterations": 1}]

    def too_large(self, ranges):
        raise RuleTooLarge("too many nodes", 10**6, [1], [1.0])

    monkeypatch.setattr(R, "fit_hyperparameters", at_the_top)
    # the made-up optimum's LML (0) is not the likelihood's: no escape from it
    monkeypatch.setattr(R, "escape", lambda terms, value, box, res, history, **kw: (res, history))
    monkeypatch.setattr(L.Levels, "_map", too_large)
    monkeypatch.setattr(L.Levels, "_tol_for_prior", lambda self, r, p: None)
    start = {"ell": np.array([0.05]), "log_s2": 0.0, "log_lam": np.log(0.01)}
    state, _, _, ell = lv._refine([start], 0, [])
    assert state[-1]["kind"] == "exact" and ell[0] == pytest.approx(100.0)
    assert [b[1] for b in boxes] == [pytest.approx(cap), 100.0] and not lv.band_route
    assert lv.report["band_limit_reached"] == [pytest.approx(cap)]
    dense = 4 / 3 * n**3 + ENTRY_FLOPS * n * n
    assert gp.step_flops(0.05) < dense == gp.step_flops(0.05, band=False)


def test_a_rank_probe_on_the_samples_first_rows_decides_as_the_whole_sample(tmp_path, monkeypatch):
    """Before a level of many features on a few hundred rows more than the row sample, the
    rank of the sample's first RANK_PROBE rows (a lower bound of the sample's) already shows
    the exact GP cheaper: the full sample's rank is not computed, and the route and model are
    those the full rank gives; the decision comes before the first level's tolerance is
    refined for the start's noise.  Where the probe cannot decide (more rows), the sample's
    rank is.  The defaults' proportions (a sample of 1,000 rows, a probe of 250, 1,100 and
    1,400 rows) scaled by 0.4, with no fixed cost of a level's rule design (LEVEL_FLOPS): the
    same decisions at a tenth of the exact fits' cost."""
    import rfcli.jobs.gpr_exact_route as R

    rng = np.random.default_rng(3)

    def smooth(n):
        X = rng.uniform(0, 1, (n, 3))
        y = np.sin(9 * X[:, 0]) * np.cos(9 * X[:, 1]) + np.sin(9 * X[:, 2])
        y = y + 0.05 * rng.normal(size=n)
        cols = {f"x{j}": X[:, j] for j in range(3)}
        return str(write_parquet(tmp_path / f"smooth{n}.parquet", **cols, y=y))

    ranks = []
    rank = R.feature_rank
    monkeypatch.setattr(R, "feature_rank", lambda V, **kw: ranks.append(len(V)) or rank(V, **kw))
    monkeypatch.setattr(R, "RANK_PROBE", 100)
    monkeypatch.setattr(R, "LEVEL_FLOPS", 0.0)
    settings, read = GPRSettings(sample_rows=400), ReadSettings(label="y")
    path = smooth(440)
    probed = train_gpr(path, None, settings, read).report
    assert probed["exact_rows"] == 440 and ranks == [R.RANK_PROBE]
    # decided before the first level's tolerance would be refined for the start's noise:
    # no kernel error checks for a rule the exact GP replaces
    assert "kernel error on the data" not in probed["timing"]
    ranks.clear()
    monkeypatch.setattr(R, "RANK_PROBE", 10**9)  # no probe: the whole sample's rank
    whole = train_gpr(path, None, settings, read).report
    assert whole["exact_rows"] == 440 and ranks == [400]
    assert probed["log_marginal_likelihood"] == whole["log_marginal_likelihood"]
    assert probed["lengthscale"] == whole["lengthscale"]
    monkeypatch.setattr(R, "RANK_PROBE", 100)
    ranks.clear()
    more = train_gpr(smooth(560), None, settings, read).report
    assert more["exact_rows"] == 560 and ranks == [R.RANK_PROBE, 400]


def test_a_rank_probe_shows_a_level_cheaper_as_the_whole_sample_would(tmp_path, monkeypatch):
    """The other way round: where a level costs less than the exact GP even at the rank of
    sample rows / RANK_PROBE probes like the first (a rank is at most the sum of its parts'),
    the probe decides for the level and the sample's rank is not computed; the routes and
    the model are those the sample's rank gives (smoother rows than the test above: a rank
    well short of the probe's rows).  The same scaled proportions."""
    import rfcli.jobs.gpr_exact_route as R

    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, (800, 3))
    y = np.sin(3 * X[:, 0]) + np.cos(2 * X[:, 1]) + X[:, 2] + 0.05 * rng.normal(size=800)
    cols = {f"x{j}": X[:, j] for j in range(3)}
    path = str(write_parquet(tmp_path / "smoother.parquet", **cols, y=y))
    ranks = []
    rank = R.feature_rank
    monkeypatch.setattr(R, "feature_rank", lambda V, **kw: ranks.append(len(V)) or rank(V, **kw))
    monkeypatch.setattr(R, "LEVEL_FLOPS", 0.0)
    settings, read = GPRSettings(sample_rows=400), ReadSettings(label="y")
    monkeypatch.setattr(R, "RANK_PROBE", 10**9)  # no probe: the whole sample's rank each time
    whole = train_gpr(path, None, settings, read).report
    checks = len(ranks)
    assert checks >= 2 and ranks == [400] * checks
    ranks.clear()
    monkeypatch.setattr(R, "RANK_PROBE", 100)
    probed = train_gpr(path, None, settings, read).report
    # every check probed; the sample's rank taken where the probe did not decide, and the
    # probe decided at least one alone
    assert ranks.count(100) == checks and 400 in ranks and ranks.count(400) < checks
    assert [lv["kind"] for lv in probed["levels"]] == [lv["kind"] for lv in whole["levels"]]
    assert probed["log_marginal_likelihood"] == whole["log_marginal_likelihood"]
    assert probed["lengthscale"] == whole["lengthscale"]


def test_a_series_whose_range_ends_past_the_band_takes_band_steps_below_its_limit(monkeypatch):
    """A series handed to the exact route with a range whose top is no band step (a Matern
    kernel's band is about 2.2x the Gaussian's at a lengthscale), but whose bounds start
    with band steps: L-BFGS-B over the lengthscales up to the band's limit, by band steps
    only, reaches the optimum below it (the Key West series with Matern 5/2: 15 -> 1.4 s,
    the same optimum)."""
    import rfcli.jobs.gpr_levels as L
    from rfcli.jobs.gpr_learn import GPInputs

    rng = np.random.default_rng(1)
    n = 1500
    x = np.sort(rng.uniform(0, 300, n))
    y = np.sin(3 * x) + 0.1 * rng.normal(size=n)
    settings = GPRSettings(kernel="matern52")
    lv = L.Levels(None, GPInputs(["x"], None), x[:, None], np.array([[0.05, 100.0]]),
                  settings, {}, {}, rows=n, memory=1 << 34)  # fmt: skip
    lv.xy, lv.n = np.column_stack([x, y]), n
    gp = lv._exact_gp()
    limit = gp.band_limit(0.05, 100.0)
    # a level's range of 2.5-6.0 (the start's 3.0 within it) ends past the band's limit
    assert not gp.banded(6.0) and gp.banded(0.05) and limit < 2.5

    def dense(*a, **k):
        raise AssertionError("a dense step")

    monkeypatch.setattr(ExactGP, "_parts", dense)
    start = np.array([1.0, 3.0, 0.01])
    state, lml, converged, ell = lv._exact([start], 0)
    assert state[-1]["kind"] == "exact" and ell[0] < 0.99 * limit
    assert "band_limit_reached" not in lv.report
