"""GP regression with default settings: lengthscale bounds from the data, the global scan
(GLF statistics and the exact GP on the row sample), quadrature levels whose nodes follow
the optimum (with the kernel-error tolerance held there), composite rules, refusals.

Reference values come from the dense exact GP on the same rows.  Tolerances: where GLF's
log marginal likelihood (LML) stands in for the exact one, the test measures the largest
difference between the two at the points compared (Delta) and allows 2 Delta plus the
optimizer's tolerance -- the bound that follows from maximizing a function within Delta of
the exact one."""

import re
import warnings

import numpy as np
import pytest

from rfcli.encoder_fit import BottomK
from rfcli.errors import UsageError
from rfcli.io.settings import ReadSettings
from rfcli.jobs import gpr_levels as job
from rfcli.jobs.gpr_tolerance import NOISE_SHARE
from rfcli.jobs.train_gpr import GPRSettings, train_gpr
from rfcli.learn.gpr import (
    GPStats,
    Reduced,
    Spectral,
    glf_objective,
    glf_spectral,
    gp_memory_need,
    lml_and_grad,
    max_gp_nodes,
)
from rfcli.learn.gpr_optimize import GAIN_NATS, fit_hyperparameters
from rfcli.learn.gpr_search import (
    HI_FACTOR,
    PROFILE_GAIN,
    PROFILE_XATOL,
    data_bounds,
    eig_projection,
    exact_profile,
    glf_profile,
    lengthscale_grid,
    polish,
    profile,
    profile_maximum,
    scan,
)
from rfcli.learn.model_file import load_model
from rfcli.maps import glf_rules as G
from rfcli.maps.gauss_legendre import GaussLegendreMap
from rfcli.memory import human
from rfcli.threads import one_blas_thread
from tests.helpers import write_parquet

LOG2PI = np.log(2 * np.pi)


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """The reference computations here are small: on one BLAS thread, as rfcli's learning
    runs them (spinning BLAS threads slow them down many times on a busy machine)."""
    with one_blas_thread():
        yield


def exact_lml(X, y, theta):
    """Exact GP LML of standardized targets y at theta = log(s2, ell..., lambda)."""
    s2, ell, lam = np.exp(theta[0]), np.exp(theta[1:-1]), np.exp(theta[-1])
    K = s2 * G.stationary_kernel("gaussian", X, X, ell) + lam * np.eye(len(X))
    L = np.linalg.cholesky(K)
    a = np.linalg.solve(L, y)
    return -0.5 * a @ a - np.log(np.diag(L)).sum() - 0.5 * len(y) * LOG2PI


def standardize(x, y):
    X = np.atleast_2d(np.asarray(x, float).T).T
    return (X - X.mean(0)) / X.std(0), (y - y.mean()) / y.std()


@pytest.fixture(scope="module")
def two_basins(tmp_path_factory):
    """1-D: a quadratic trend plus a period-1 oscillation over 40 periods, 400 rows.  The
    exact LML in the lengthscale has its global maximum near 0.035 (the oscillation) and a
    second one beyond 2 (the trend alone) behind a deep valley near 0.09."""
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(0, 40, 400))
    y = 0.02 * (x - 20) ** 2 + np.sin(2 * np.pi * x) + 0.2 * rng.normal(size=400)
    path = write_parquet(tmp_path_factory.mktemp("gp") / "two.parquet", x=x, y=y)
    return path, x, y


def train(path, **kw):
    """The report of train_gpr with GLF levels throughout (these tests are of the levels;
    the exact GP's route: tests/learn/test_gpr_exact_route.py)."""
    kw.setdefault("exact", False)
    return train_gpr(str(path), None, GPRSettings(**kw), ReadSettings(label="y")).report


def theta_of(rep, y):
    v = y.var()
    return np.log([rep["signal_variance"] / v, *rep["lengthscale"], rep["noise_variance"] / v])


# -- bounds from the data ------------------------------------------------------------------
def test_bounds_from_a_regular_grid():
    g1, g2 = np.arange(0, 2.01, 0.1), np.arange(0, 5.01, 0.25)
    X = np.array(np.meshgrid(g1, g2, indexing="ij")).reshape(2, -1).T
    iso = data_bounds(X, ard=False)
    np.testing.assert_allclose(iso, [[0.1, HI_FACTOR * 5.0]], rtol=1e-12)
    ard = data_bounds(X, ard=True)
    np.testing.assert_allclose(ard, [[0.1, HI_FACTOR * 2.0], [0.25, HI_FACTOR * 5.0]], rtol=1e-12)


def test_bounds_use_the_median_gap_between_distinct_values():
    # gaps 1, 1, 1, 10, 10: the nearest-neighbour distances are 1, 1, 1, 1, 10, 10 -> median
    # 1 (their mean is 4); duplicated rows neither count as neighbours nor shift the median
    x = np.cumsum([0, 1, 1, 1, 10, 10]).astype(float)
    X = np.concatenate([x, x[:3]])[:, None]
    for ard in (False, True):
        np.testing.assert_allclose(data_bounds(X, ard), [[1.0, HI_FACTOR * 23.0]])
    # a constant column does not constrain anything
    assert data_bounds(np.column_stack([x, np.ones(6)]), True)[1].tolist() == [1.0, 1.0]


def test_training_bounds_come_from_the_fitting_pass_sample(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 7, 1500) ** 3
    path = write_parquet(tmp_path / "b.parquet", x=x, y=np.sin(x / 50))
    reps = [train(path, learn=False, sample_rows=200, seed=s) for s in (0, 0, 1)]
    assert reps[0]["lengthscale_bounds"] == reps[1]["lengthscale_bounds"]  # deterministic
    assert reps[2]["lengthscale_bounds"] != reps[0]["lengthscale_bounds"]  # another sample
    for rep, seed in zip(reps, (0, 0, 1), strict=True):
        assert rep["bounds_from"] == "data"
        sample = BottomK(200, seed)
        sample.update(0, ((x - x.mean()) / x.std())[:, None])
        np.testing.assert_allclose(
            rep["lengthscale_bounds"], data_bounds(sample.rows, False), rtol=1e-12
        )


# -- composite rules -----------------------------------------------------------------------
def test_composite_line_integrates_polynomials_exactly():
    L = 3.0
    x, w = G.composite_line(L, panels=5, ell_hi=50.0)  # graded near 0 as well
    assert np.all(np.diff(x) > 0) and np.all(w > 0)
    for k in range(8):  # even powers up to 14: exact on every panel (>= 8 nodes each)
        assert w @ x ** (2 * k) == pytest.approx(2 * L ** (2 * k + 1) / (2 * k + 1), rel=1e-12)


def test_grading_at_zero_resolves_the_largest_lengthscale(monkeypatch):
    # panels of width 4 on [0, 20]: the spectrum at lengthscale 10 (sd 0.016) lies in the
    # first panel's first percent
    L, width, ell_hi, tol = 20.0, 1.0, 10.0, 1e-3
    delta = G.probe_differences(np.array([width]), seed=7)
    graded = G.composite_line(L, 5, ell_hi)
    err = G.kernel_error("gaussian", graded[0][:, None], graded[1], delta, np.array([[ell_hi]]))
    assert err <= tol
    monkeypatch.setattr(G, "GRADE_SIGMAS", np.inf)  # the same panels, no split at 0
    plain = G.composite_line(L, 5, ell_hi)
    assert len(plain[0]) < len(graded[0])
    err = G.kernel_error("gaussian", plain[0][:, None], plain[1], delta, np.array([[ell_hi]]))
    assert err > 10 * tol


def test_composite_rule_where_one_rule_needs_more_nodes():
    width, ranges, tol = np.array([3.5]), np.array([[0.01, 10.0]]), 1e-3
    rule = G.design_rule("gaussian", width, ranges, tol, rule="auto")
    assert rule["rules"] == ["composite"]
    # the tolerance holds at lengthscales and differences that were not probed
    delta = G.probe_differences(width, seed=123)
    ells = np.geomspace(0.01, 10.0, 40)[:, None]
    assert G.kernel_error("gaussian", rule["H"], rule["w"], delta, ells) <= tol
    # one Gauss-Legendre rule with as many nodes does not
    H, w = G.half_space_nodes(np.array(rule["L"]), np.array([rule["q"][0]]))
    assert G.kernel_error("gaussian", H, w, delta, ells) > 3 * tol
    # over a narrow range one rule is the smaller, and "auto" takes it
    narrow = np.array([[0.015, 0.035]])
    sizes = {
        r: len(G.design_rule("gaussian", width, narrow, tol, rule=r)["w"])
        for r in ("single", "composite", "auto")
    }
    assert sizes["auto"] == sizes["single"] < sizes["composite"]


def test_composite_glf_lml_matches_the_exact_gp():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (300, 1))
    y = np.sin(12 * X[:, 0]) + 0.1 * rng.normal(size=300)
    y = (y - y.mean()) / y.std()
    fmap = GaussLegendreMap(lengthscale_bounds=(0.02, 3.0), tol=1e-6, rule="composite")
    fmap.fit(1, box=(X.min(0), X.max(0)))
    assert fmap.rules_ == ["composite"]
    st = GPStats(fmap.n_features)
    st.update(fmap.transform_raw(X)[0], y)
    red, sp = st.reduced(), glf_spectral(fmap, ard=False)
    for ell in (0.02, 0.1, 0.5, 3.0):
        theta = np.log([1.3, ell, 0.05])
        assert lml_and_grad(theta, red, sp, False)[0] == pytest.approx(
            exact_lml(X, y, theta), rel=1e-4
        )


# -- the global scan -----------------------------------------------------------------------
def test_profile_maximizes_signal_and_noise():
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, (200, 1))
    y = np.sin(8 * X[:, 0]) + 0.3 * rng.normal(size=200)
    y = (y - y.mean()) / y.std()
    lml, a, b = exact_profile(X, y, "gaussian", (1e-3, 1e3), (1e-6, 10))([0.2])
    assert lml == pytest.approx(exact_lml(X, y, np.array([a, np.log(0.2), b])), rel=1e-10)
    # no (s2, lambda) does better: a fine grid and L-BFGS from elsewhere
    for s2 in np.geomspace(0.1, 10, 9):
        for lam in np.geomspace(1e-3, 1, 9):
            assert exact_lml(X, y, np.log([s2, 0.2, lam])) <= lml + 1e-9
    # profile() is the same maximization for eigenvalues given directly
    K = G.stationary_kernel("gaussian", X, X, 0.2)
    mu, U = np.linalg.eigh(K)
    assert profile(mu, (U.T @ y) ** 2, 0.0, 200, (1e-3, 1e3), (1e-6, 10))[0] == pytest.approx(lml)


@pytest.mark.parametrize(
    "s2_bounds,lam_bounds",
    [
        ((1e-3, 1e3), (1e-6, 10)),
        ((0.5, 2.0), (1e-6, 10)),
        ((1e-3, 1e3), (0.3, 10)),
        ((1e-3, 1e3), (1e-6, 0.08)),
    ],
)
def test_profile_finds_the_maximum_and_its_place_inside_and_on_the_bounds(s2_bounds, lam_bounds):
    """profile()'s grids in log(lambda / s2) and the root of the profiled slope: the same
    maximum as L-BFGS-B over (log s2, log lambda) from several starts (within 1e-9 of its
    size), and the same place (within 1e-6) where the maximum is inside the
    box or on an edge of lambda's or s2's bounds; a wrong slope on a lambda edge leaves the
    grid's 1e-4 spacing and fails the place."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, (150, 2))
    y = np.sin(6 * X[:, 0]) * X[:, 1] + 0.2 * rng.normal(size=150)
    y = (y - y.mean()) / y.std()
    la, lb = np.log(s2_bounds), np.log(lam_bounds)
    for ell, rest, n in ((0.1, 0.0, 150), (0.5, 0.0, 150), (0.3, 4.0, 190)):
        mu, U = np.linalg.eigh(G.stationary_kernel("gaussian", X, X, ell))
        mu, z2 = np.maximum(mu, 0.0), (U.T @ y) ** 2

        def neg(t, mu=mu, z2=z2, rest=rest, n=n):
            e = np.exp(t[0]) * mu + np.exp(t[1])
            return 0.5 * (np.sum(z2 / e + np.log(e)) + rest * np.exp(-t[1]) + (n - len(mu)) * t[1]
                          + n * np.log(2 * np.pi))  # fmt: skip

        ref = min(
            (minimize(neg, [a, b], method="L-BFGS-B", bounds=[tuple(la), tuple(lb)],
                      options={"ftol": 1e-15, "gtol": 1e-11}) for a in np.linspace(*la, 3)
             for b in np.linspace(*lb, 3)),
            key=lambda r: r.fun,
        )  # fmt: skip
        lml, a, b = profile(mu, z2, rest, n, s2_bounds, lam_bounds)
        assert lml == pytest.approx(-neg([a, b]), rel=1e-12)
        assert -ref.fun - 1e-9 * abs(ref.fun) <= lml <= -ref.fun + 1e-9 * abs(ref.fun)
        assert np.allclose([a, b], ref.x, atol=1e-6), ([a, b], ref.x)


def _glf_statistics(X, y, bounds, nodes, ard):
    """(Reduced statistics, Spectral) of a fixed Gauss-Legendre grid on rows X, targets y."""
    fmap = GaussLegendreMap(lengthscale_bounds=bounds, nodes=nodes)
    fmap.fit(X.shape[1], box=(X.min(0), X.max(0)))
    st = GPStats(fmap.n_features)
    st.update(fmap.transform_raw(X)[0], y)
    return st.reduced(), glf_spectral(fmap, ard=ard)


def test_glf_profile_equals_the_glf_lml():
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 1, (250, 2))
    y = np.sin(5 * X[:, 0]) * X[:, 1] + 0.1 * rng.normal(size=250)
    y = (y - y.mean()) / y.std()
    # the profile must equal the LML whatever the quadrature: a small fixed grid
    red, sp = _glf_statistics(X, y, [[0.2, 1.0], [0.3, 2.0]], [20, 16], ard=True)
    lml, a, b = glf_profile(red, sp, (1e-3, 1e3), (1e-6, 10))(np.array([0.4, 0.9]))
    theta = np.array([a, np.log(0.4), np.log(0.9), b])
    assert lml == pytest.approx(lml_and_grad(theta, red, sp, False)[0], rel=1e-10)
    res, _ = fit_hyperparameters(
        glf_objective(red, sp), [(1e-3, 1e3), (0.4, 0.4), (0.9, 0.9), (1e-6, 10)], [np.exp(theta)]
    )
    assert -res.fun <= lml + 1e-6 * abs(lml)


def test_eig_projection_gives_eighs_eigenvalues_and_profile():
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, (300, 2))
    y = rng.normal(size=300)
    A = rng.normal(size=(40, 40))
    cases = [
        G.stationary_kernel("gaussian", X, X, 0.3),  # smooth: many eigenvalues near 0
        A @ A.T,
        np.diag(np.r_[np.ones(20), 2 * np.ones(20)]),  # repeated eigenvalues
        A[:1, :1] ** 2,
        (A @ A.T)[:2, :2],
        (A @ A.T)[:3, :3],
    ]
    for M in cases:
        v = y[: len(M)]
        mu, z = eig_projection(M, v)
        ref, U = np.linalg.eigh(M)
        scale = np.abs(ref).max()
        assert np.allclose(mu, ref, rtol=0, atol=1e-12 * scale)
        # what the LML uses: sums of z^2 weighted by a function of the eigenvalue
        for a, b in ((1.0, 1e-3), (0.1, 1.0)):
            w = 1 / (a * np.maximum(ref, 0) / scale + b)
            assert np.sum(z**2 * w) == pytest.approx(np.sum((U.T @ v) ** 2 * w), rel=1e-10)
        assert np.sum(z**2) == pytest.approx(np.sum(v**2), rel=1e-12)
    # the profiles evaluated one at a time (the tridiagonal path) or at once (eigh) agree
    y = (y - y.mean()) / y.std()
    for ell in (0.05, 0.3, 2.0):
        a = exact_profile(X, y, "gaussian", (1e-3, 1e3), (1e-6, 10))([ell])
        b = exact_profile(X, y, "gaussian", (1e-3, 1e3), (1e-6, 10), concurrent=False)([ell])
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("kept", [True, False])
def test_exact_profile_with_a_lengthscale_per_input(monkeypatch, kept):
    # ARD points and one-lengthscale points from the same profile, with the squared
    # differences kept or (over their byte limit) formed at each point: the LML at the
    # profiled (s2, lambda) is the exact GP's there
    from rfcli.learn import gpr_search

    if not kept:
        monkeypatch.setattr(gpr_search, "DIFFERENCES_BYTES", 0)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 3))
    y = np.sin(2 * X[:, 0]) + 0.2 * X[:, 1] + 0.1 * rng.normal(size=150)
    y = (y - y.mean()) / y.std()
    ev = exact_profile(X, y, "gaussian", (1e-3, 1e3), (1e-6, 10))
    for ell in ([0.7, 3.0, 40.0], [1.5]):
        lml, a, b = ev(ell)
        theta = np.array([a, *np.log(np.broadcast_to(ell, (3,))), b])
        assert lml == pytest.approx(exact_lml(X, y, theta), rel=1e-10)


def test_polish_moves_the_best_grid_point_to_the_maximum_between_its_neighbours():
    # a concave quadratic in log lengthscale (per coordinate): one parabolic step lands on
    # its maximum exactly; the grid's best point is a grid step away from it
    top = np.array([0.37, 2.2])

    def evaluate(ell):
        u = np.log(np.asarray(ell) / top)
        return float(-np.sum([4.0, 9.0] * u**2)), 0.0, 0.0

    grids = [lengthscale_grid(0.01, 10.0, 4), lengthscale_grid(0.1, 50.0, 4)]
    pts = scan(evaluate, grids, sweeps=1)
    grid_best = max(pts, key=lambda p: p["lml"])
    assert np.max(np.abs(np.log(grid_best["ell"] / top))) > 0.05
    n_before = len(pts)
    best = polish(evaluate, pts, grids)
    assert best["ell"] == pytest.approx(top, rel=1e-9)
    assert best["lml"] == pytest.approx(0.0, abs=1e-12)
    assert len(pts) - n_before <= 2 * 3  # at most neighbours + steps per coordinate

    # an edge of a grid stays where it is (nothing beyond it to bracket the maximum)
    def first(ell):
        return evaluate([ell[0], top[1]])

    edge = [lengthscale_grid(0.5, 10.0, 4)]
    pts = scan(first, edge)
    assert polish(first, pts, edge)["ell"][0] == pytest.approx(0.5)
    assert len(pts) == len(edge[0])


def test_polish_improves_the_exact_sample_profile():
    rng = np.random.default_rng(4)
    X = rng.uniform(0, 1, (150, 1))
    y = np.sin(9 * X[:, 0]) + 0.2 * rng.normal(size=150)
    y = (y - y.mean()) / y.std()
    ev = exact_profile(X, y, "gaussian", (1e-3, 1e3), (1e-6, 10))
    grids = [lengthscale_grid(0.01, 3.0, 6)]
    pts = scan(ev, grids)
    grid_best = max(pts, key=lambda p: p["lml"])
    best = polish(ev, pts, grids)
    from scipy.optimize import minimize_scalar

    g = grids[0]
    i = int(np.argmin(np.abs(g - grid_best["ell"][0])))
    top = minimize_scalar(lambda u: -ev([np.exp(u)])[0], bounds=np.log(g[[i - 1, i + 1]]),
                          method="bounded", options={"xatol": 1e-6})  # fmt: skip
    assert best["lml"] >= grid_best["lml"]
    # most of the way from the grid's best to the maximum between its neighbours
    assert -top.fun - best["lml"] <= 0.05 * (-top.fun - grid_best["lml"]) + 1e-9


def _global_check(rep, fmap, X, y):
    """GLF's optimum against the exact GP's (refined from the exact profile scan's best grid
    point and from GLF's optimum).  With Delta the largest |GLF LML - exact LML| at the two
    optima (GLF's from the final map's statistics), maximizing GLF's LML gives
    exact(theta_glf) >= exact(theta_exact) - 2 Delta, up to the optimizers' tolerance."""
    from scipy.optimize import minimize

    th_glf = theta_of(rep, y)  # y standardized: variance 1
    ev = exact_profile(X, y, "gaussian", (1e-3, 1e3), (1e-6, 10))
    pts = [(ev([v]), v) for v in lengthscale_grid(*rep["lengthscale_bounds"][0], 8)]
    (_, a, b), v = max(pts, key=lambda p: p[0][0])
    best = None
    for x0 in (np.array([a, np.log(v), b]), th_glf):
        r = minimize(
            lambda t: -exact_lml(X, y, t),
            x0,
            method="Nelder-Mead",
            options={"xatol": 1e-6, "fatol": 1e-8, "maxiter": 4000},
        )
        best = r if best is None or r.fun < best.fun else best
    st = GPStats(fmap.n_features)
    st.update(fmap.transform_raw(X)[0], y)
    red, sp = st.reduced(), glf_spectral(fmap, ard=False)
    delta = max(
        abs(lml_and_grad(t, red, sp, False)[0] - exact_lml(X, y, t)) for t in (th_glf, best.x)
    )
    assert delta < 0.1  # the final rule is accurate at both points
    assert exact_lml(X, y, th_glf) >= -best.fun - 2 * delta - 1e-3
    return best.x


def train_and_map(path, tmp_path, **kw):
    model = str(tmp_path / "m.npz")
    kw.setdefault("exact", False)
    rep = train_gpr(str(path), model, GPRSettings(**kw), ReadSettings(label="y")).report
    return rep, load_model(model)[1].fmap


def test_scan_reaches_the_global_optimum(two_basins, tmp_path):
    path, x, y = two_basins
    X, ys = standardize(x, y)
    std = write_parquet(tmp_path / "std.parquet", x=x, y=ys)
    rep, fmap = train_and_map(std, tmp_path)
    theta = _global_check(rep, fmap, X, ys)
    assert rep["lengthscale"][0] == pytest.approx(np.exp(theta[1]), rel=0.02)
    assert rep["lengthscale"][0] < 0.06  # the oscillation, not the trend
    # a single start in the middle of the bounds (no scan) climbs to the trend's maximum
    from scipy.optimize import minimize

    mid = np.log([1.0, np.sqrt(np.prod(rep["lengthscale_bounds"][0])), 0.1])
    r = minimize(lambda t: -exact_lml(X, ys, t), mid, method="L-BFGS-B")
    assert np.exp(r.x[1]) > 0.5 and -r.fun < exact_lml(X, ys, theta) - 100


def test_sample_scan_finds_what_the_coarse_rule_cannot_resolve(two_basins, tmp_path):
    path, x, y = two_basins
    X, ys = standardize(x, y)
    std = write_parquet(tmp_path / "std.parquet", x=x, y=ys)
    # a coarse rule that resolves only lengthscales far above the optimum
    rep, fmap = train_and_map(std, tmp_path, coarse_nodes=40)
    coarse = rep["levels"][0]
    assert coarse["kind"] == "coarse" and coarse["lengthscale_range"][0][0] > 0.2
    assert rep["sample_scan"]["start"][0] < 0.06
    _global_check(rep, fmap, X, ys)
    assert rep["lengthscale"][0] < 0.06


# -- levels: nodes follow the optimum, tolerance at the optimum ------------------------------
def _smooth(tmp_path, name, scale, n=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    y = np.sin(x / scale) + 0.5 * np.cos(0.7 * x / scale) + 0.1 * rng.normal(size=n)
    return write_parquet(tmp_path / f"{name}.parquet", x=x, y=y), x, y


def test_nodes_follow_the_optimum_and_meet_tol_there(tmp_path):
    out = {}
    for name, scale in (("short", 0.15), ("long", 0.6)):
        path, x, y = _smooth(tmp_path, name, scale)
        model = tmp_path / f"{name}.npz"
        rep = train_gpr(
            path, str(model), GPRSettings(tol=1e-4, exact=False), ReadSettings(label="y")
        ).report
        _, encoder, _ = load_model(str(model))
        fmap = encoder.fmap
        ell = rep["lengthscale"][0]
        lo, hi = fmap.lengthscale_bounds  # the lengthscales the final rule serves
        # the rule serves a trust region around the optimum, not the data bounds
        assert lo <= ell / job.F_IN and ell * job.F_IN <= hi
        assert lo >= rep["lengthscale_bounds"][0][0] * 3 and hi <= ell * job.F_OUT**2
        # kernel error at the optimum on the training pairs' own differences (not probes)
        Xs = encoder.preprocess.transform(x[:, None])
        i, j = np.random.default_rng(1).integers(0, len(x), (2, 3000))
        delta = Xs[i] - Xs[j]
        exact = G.stationary_kernel("gaussian", delta, np.zeros((1, 1)), ell)[:, 0]
        approx = G.quadrature_kernel("gaussian", fmap.H_, fmap.w_, delta, ell)
        assert np.abs(approx - exact).max() <= 1e-4
        assert rep["probe_error"] <= 1e-4 and rep["converged"]
        out[name] = (ell, len(fmap.w_), rep)
        # far fewer nodes than a rule for the whole bounds (the worst case) would need
        width = np.ptp(Xs)
        worst = G.design_rule(
            "gaussian", np.array([width]), np.array(rep["lengthscale_bounds"]), 1e-4
        )
        assert len(fmap.w_) * 10 < len(worst["w"])
    (l_s, n_s, _), (l_l, n_l, _) = out["short"], out["long"]
    assert l_l / l_s > 2.5
    # nodes grow as width / lengthscale (plus a few per rule): more for the shorter one
    assert n_s > 1.8 * n_l


def test_levels_stop_when_the_optimum_stops_moving(tmp_path):
    path, x, y = _smooth(tmp_path, "walk", 0.3, seed=4)
    # a coarse rule far above the optimum: the levels walk down to it
    rep = train(path, coarse_nodes=16)
    levels = [lv for lv in rep["levels"] if lv["kind"] == "level"]
    assert len(levels) >= 2 and rep["converged"]
    last = levels[-1]
    ell = rep["lengthscale"][0]
    lo, hi = last["lengthscale_range"][0]
    assert lo <= ell / job.F_IN and ell * job.F_IN <= hi
    # a fresh rule around the final optimum (another pass) moves nothing
    again = train(path, lengthscale_bounds=(ell / job.F_OUT, ell * job.F_OUT))
    # (to what L-BFGS-B leaves: each fit stops within GAIN_NATS of the maximum, which lets
    # the lengthscale move by 1e-3 here)
    assert again["lengthscale"][0] == pytest.approx(ell, rel=3e-3)
    assert again["log_marginal_likelihood"] == pytest.approx(
        rep["log_marginal_likelihood"], abs=2 * GAIN_NATS
    )


def test_ard_bounds_and_levels_per_dimension(tmp_path):
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, (300, 2))
    y = np.sin(9 * X[:, 0]) + 0.3 * X[:, 1] + 0.05 * rng.normal(size=300)
    path = write_parquet(tmp_path / "ard.parquet", a=X[:, 0], b=X[:, 1], y=y)
    rep = train(path, ard=True)
    assert len(rep["lengthscale_bounds"]) == 2 and len(rep["lengthscale"]) == 2
    l0, l1 = rep["lengthscale"]
    assert l1 > 4 * l0  # x2 enters linearly: a long lengthscale
    ranges = [lv for lv in rep["levels"] if lv["kind"] == "level"][-1]["lengthscale_range"]
    for (lo, hi), ell, (blo, bhi) in zip(ranges, (l0, l1), rep["lengthscale_bounds"], strict=True):
        assert (lo <= ell / job.F_IN or lo == blo) and (ell * job.F_IN <= hi or hi == bhi)
    assert rep["probe_error"] <= 1e-3


# -- refusals ------------------------------------------------------------------------------
def test_refused_with_the_memory_it_needs_when_the_rule_does_not_fit(tmp_path):
    path, _, _ = _smooth(tmp_path, "tight", 0.1)
    budget = gp_memory_need(2 * 40 + 1, 1)  # room for 40 nodes on one thread
    assert max_gp_nodes(budget, 1) == 40
    with pytest.raises(UsageError) as e:
        train_gpr(str(path), None, GPRSettings(exact=False), ReadSettings(label="y"), threads=1,
                  memory=budget)  # fmt: skip
    msg = str(e.value)
    assert "more than 40 nodes" in msg and "q=" in msg and "L=" in msg and "lengthscales" in msg
    # the memory named is what the rule it names would need
    nodes = int(re.search(r"more than 40 nodes \((\d+)", msg).group(1))
    assert nodes > 40
    assert f"need about {human(gp_memory_need(2 * nodes, 1))} of memory" in msg
    assert f"over the budget of {human(budget)}" in msg


def test_the_budget_is_checked_after_pruning():
    """A tensor rule far larger than the budget before pruning is accepted when its pruned
    node count fits (Matern 5/2 in 2-D loses most of its corners)."""
    width, ranges = np.array([3.0, 3.0]), np.array([[0.3, 1.0], [0.3, 1.0]])
    rule = G.design_rule("matern52", width, ranges, 1e-3, ard=False)
    full, pruned = int(np.prod(rule["q"])) // 2, len(rule["w"])
    assert full > 2 * pruned  # what a check before pruning at twice the budget refused
    again = G.design_rule("matern52", width, ranges, 1e-3, ard=False, max_nodes=pruned)
    assert len(again["w"]) == pruned
    with pytest.raises(G.RuleTooLarge):
        G.design_rule("matern52", width, ranges, 1e-3, ard=False, max_nodes=pruned - 1)


def test_a_tensor_past_what_can_be_pruned_is_counted_not_built(monkeypatch):
    """A tensor rule of more nodes than TENSOR_MAX is refused by its count before pruning,
    without an array of that many nodes (Matern 1/2 on ggplot2::diamonds' 3-D box asked for
    9e9 nodes: an allocation of 404 GiB, reported as out of memory)."""
    monkeypatch.setattr(G, "TENSOR_MAX", 1000)
    zeros = np.zeros

    def small_zeros(shape, *a, **k):  # a node array past the budget would be a bug here
        assert np.prod(shape) < 10**6, shape
        return zeros(shape, *a, **k)

    monkeypatch.setattr(G.np, "zeros", small_zeros)
    width, ranges = np.array([3.0, 3.0, 3.0]), np.array([[0.05, 1.0]] * 3)
    with pytest.raises(G.RuleTooLarge) as e:
        G.design_rule("matern12", width, ranges, 1e-3, ard=False, max_nodes=500)
    assert "before pruning" in str(e.value) and e.value.nodes > 1000
    assert not e.value.pruned  # the refusal's memory: "up to", an upper bound


def test_the_kernel_tolerance_follows_a_small_learned_noise(tmp_path):
    """Nearly noise-free targets (noise/signal ~1e-5): the default tol (1e-3 of the signal)
    would be far above the noise; the levels refine the rule until the kernel matrix's error
    on the data at the optimum is at most NOISE_SHARE x the learned noise/signal, and report
    both."""
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 10, 300)
    y = np.sin(x) + 0.5 * np.cos(0.7 * x) + 3e-3 * rng.normal(size=300)
    path = write_parquet(tmp_path / "clean.parquet", x=x, y=y)
    rep = train(path)
    ratio = rep["noise_to_signal"]
    assert ratio < 1e-3  # the tolerance's default, in units of the signal
    assert rep["kernel_error_data"] <= NOISE_SHARE * ratio
    assert rep["kernel_tol"] < 1e-3 and rep["converged"]
    assert any("refine_for_noise" in lv for lv in rep["levels"])


def test_the_first_level_is_refined_for_the_scans_noise_before_its_pass(tmp_path):
    """The scans' noise/signal at the start (1e-7 here) sets the first level's tolerance
    before its pass: one level meets the noise check, where the default tolerance's rule
    needed a second level of a finer rule at the same lengthscales."""
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 10, 600)
    y = np.sin(x) + 0.5 * np.cos(0.7 * x) + 1e-3 * rng.normal(size=600)
    rep = train(write_parquet(tmp_path / "clean.parquet", x=x, y=y))
    (prior,) = rep["prior_refine"]
    assert prior["kernel_tol"] < 1e-3 and prior["noise_to_signal"] < 1e-6
    levels = [lv for lv in rep["levels"] if lv["kind"] == "level"]
    assert len(levels) == 1 and "refine_for_noise" not in levels[0]
    assert rep["kernel_error_data"] <= NOISE_SHARE * rep["noise_to_signal"]
    assert rep["converged"]


def test_the_factor_of_G_has_its_numerical_rank_and_the_exact_likelihood():
    """Fewer rows than features: G = V'V has rank n; the pivoted-Cholesky factor keeps n rows,
    reproduces G and c, and the LML from it equals the dense n x n one."""
    rng = np.random.default_rng(4)
    n, nodes = 60, 100
    X = rng.uniform(-1, 1, (n, 2))
    H = rng.normal(0, 1.5, (nodes, 2))
    V = np.hstack([np.cos(2 * np.pi * X @ H.T), np.sin(2 * np.pi * X @ H.T)])
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=n)
    G_, c = V.T @ V, V.T @ y
    red = Reduced(G_, c, float(y @ y), n)
    assert red.r == n
    scale = np.abs(G_).max()
    assert np.abs(red.P.T @ red.P - G_).max() <= 1e-10 * scale
    assert np.abs(red.P.T @ red.z - c).max() <= 1e-8 * np.abs(c).max()
    D = rng.uniform(0, 2.0 / nodes, 2 * nodes)
    spectral = Spectral(0, lambda ell: (D, np.zeros((2 * nodes, 0))))
    lam = 0.05
    K = (V * D) @ V.T + lam * np.eye(n)
    L = np.linalg.cholesky(K)
    a = np.linalg.solve(L, y)
    dense = -0.5 * a @ a - np.log(np.diag(L)).sum() - 0.5 * n * LOG2PI
    lml, _ = lml_and_grad(np.log([1.0, lam]), red, spectral, need_grad=False)
    assert lml == pytest.approx(dense, rel=1e-9)


def test_the_kernel_error_on_the_data_is_the_spectral_norm_of_the_matrix_error(tmp_path):
    """With every row in the sample (n <= sample_rows) the reported error on the data is the
    spectral norm of K~ - K on the training rows, computed here densely."""
    path, x, _ = _smooth(tmp_path, "norm", 0.5, n=200)
    model = tmp_path / "norm.npz"
    rep = train_gpr(str(path), str(model), GPRSettings(exact=False), ReadSettings(label="y")).report
    _, encoder, _ = load_model(str(model))
    Xs = encoder.preprocess.transform(x[:, None])
    ell = np.array(rep["lengthscale"])
    F = encoder.fmap.transform(Xs)
    E = (F * encoder.fmap.weights(ell)) @ F.T - G.stationary_kernel("gaussian", Xs, Xs, ell)
    dense = np.abs(np.linalg.eigvalsh(E)).max()
    assert rep["kernel_error_data"] == pytest.approx(dense, rel=1e-6)
    assert rep["kernel_error_data"] > rep["probe_error"]  # n entries add up


def test_a_group_on_its_edge_heading_for_a_finished_optimum_joins_it():
    """The rule that stops a second group from chasing the first one's lengthscale."""
    from rfcli.jobs.gpr_levels import Levels

    lv = Levels.__new__(Levels)
    lv.bounds = np.array([[0.001, 10.0], [0.001, 10.0]])
    ranges = np.array([[0.02, 0.04], [0.5, 2.0]])
    on_lo = np.array([0.02, 1.0])  # on the lower edge in dimension 1, inside in dimension 2
    assert lv._heading_for(on_lo, ranges, np.array([0.002, 1.5]))
    assert not lv._heading_for(on_lo, ranges, np.array([0.03, 1.5]))  # not beyond the edge
    assert not lv._heading_for(on_lo, ranges, np.array([0.002, 3.0]))  # off in dimension 2
    assert not lv._heading_for(np.array([0.03, 1.0]), ranges, np.array([0.002, 1.0]))  # inside
    # an edge that is the bound itself: the optimum goes no further
    at_bound = np.array([[0.001, 0.04], [0.5, 2.0]])
    assert not lv._heading_for(np.array([0.001, 1.0]), at_bound, np.array([0.0005, 1.0]))


def test_a_level_is_final_a_factor_f_final_inside_its_range():
    """An optimum 1.1 inside its range is final (ggplot2::diamonds with --ard: 1.14, where a
    third level moved it by 0.07%); one on the range's edge, or just inside it, is not,
    unless that edge is the bound."""
    from rfcli.jobs.gpr_levels import Levels
    from rfcli.jobs.gpr_ranges import F_FINAL

    lv = Levels.__new__(Levels)
    lv.bounds = np.array([[0.01, 20.0], [0.01, 20.0]])
    ranges = np.array([[0.56, 1.26], [10.0, 22.6]])
    lv.bounds[1, 1] = 30.0
    assert lv._inside(np.array([0.56 * 1.1, 15.0]), ranges)
    assert not lv._inside(np.array([0.56, 15.0]), ranges)  # held by the edge
    assert not lv._inside(np.array([0.56 * F_FINAL * 0.99, 15.0]), ranges)
    assert not lv._inside(np.array([0.8, 22.6 / 1.01]), ranges)  # near the upper edge
    lv.bounds[1, 1] = 22.6  # that edge is the bound: the optimum goes no further
    assert lv._inside(np.array([0.8, 22.6]), ranges)


def test_levels_reach_the_sample_scans_best_point_at_once(tmp_path):
    """An AR(1) series on a random subset of the years: the likelihood peaks near the
    smallest lengthscales, where the sample scan puts its best point; the first level's
    optimum sits on its range's lower edge, and the next range reaches that point (not
    only F_OUT further: one level less)."""
    rng = np.random.default_rng(0)
    e, ar = rng.normal(size=1000), np.zeros(1000)
    for i in range(1, 1000):
        ar[i] = 0.3 * ar[i - 1] + e[i]
    x = rng.permutation(1000)[:400]
    path = write_parquet(tmp_path / "ar.parquet", x=x.astype(float), y=ar[x])
    rep = train_gpr(str(path), None, GPRSettings(exact=False), ReadSettings(label="y")).report
    best = rep["sample_scan"]["best_lengthscale"][0]
    first, second = rep["levels"][1], rep["levels"][2]
    assert first["lengthscale"][0] == pytest.approx(first["lengthscale_range"][0][0])
    assert best < first["lengthscale"][0] / 1.5  # beyond the range F_OUT would give
    assert second["lengthscale_range"][0][0] <= best * 1.0001


def test_a_long_reach_is_cut_to_the_nodes_the_walk_may_grow_by():
    """An optimum on its lower edge again and again: the next range reaches F_OUT^hits beyond
    it, cut down (by sqrt(F_OUT) a step, to F_OUT at least) until its rule has at most
    REACH_GROWTH x the current level's nodes; edges not hit stay, an upper edge hit reaches
    all the way."""
    from types import SimpleNamespace

    from rfcli.jobs.gpr_levels import Levels
    from rfcli.jobs.gpr_ranges import F_OUT, REACH_GROWTH

    lv = Levels.__new__(Levels)
    lv.bounds = np.array([[0.001, 10.0], [0.001, 10.0]])
    lv.d = lv.n_ell = 2  # a lengthscale per input
    designed = []

    def fake_map(ranges):  # nodes grow as 1 / the product of the smallest lengthscales
        designed.append(ranges[0, 0])
        return SimpleNamespace(w_=np.zeros(int(100 / (ranges[0, 0] * ranges[1, 0]))))

    lv._map = fake_map
    lv._exact_ready = lambda: False
    ell, nxt = np.array([0.3, 1.0]), np.array([[0.2, 0.45], [0.5, 1.5]])
    lo_hit, hi_hit = np.array([True, False]), np.array([False, False])
    nodes = len(fake_map(nxt).w_)
    designed.clear()
    far = lv._reach(nxt, ell, lo_hit, hi_hit, F_OUT**4, nodes, 0.1)
    reach = ell[0] / far[0, 0]
    # designed: the whole reach, then the longest predicted to fit (the prediction is exact
    # here), none between
    assert designed == pytest.approx([ell[0] / F_OUT**4, far[0, 0]])
    assert len(fake_map(far).w_) <= REACH_GROWTH * nodes
    assert len(fake_map(np.array([[ell[0] / (reach * F_OUT**0.5), 0.45], [0.5, 1.5]])).w_) > (
        REACH_GROWTH * nodes
    )  # the next longer step would be too many nodes
    assert F_OUT < reach < F_OUT**4
    np.testing.assert_array_equal(far[:, 1], nxt[:, 1])
    np.testing.assert_array_equal(far[1], nxt[1])
    # an upper edge hit as well (the other input): it reaches all the way up, at no cut
    both = lv._reach(nxt, ell, lo_hit, np.array([False, True]), F_OUT**4, nodes, 0.1)
    np.testing.assert_array_equal(both[0], far[0])
    assert both[1, 1] == pytest.approx(ell[1] * F_OUT**4)
    # a growth the budget allows: the whole reach; one no reach allows: F_OUT, no less
    assert lv._reach(nxt, ell, lo_hit, hi_hit, F_OUT**2, 10**6, 0.1)[0, 0] == pytest.approx(
        ell[0] / F_OUT**2
    )
    assert lv._reach(nxt, ell, lo_hit, hi_hit, F_OUT**4, 1, 0.1)[0, 0] == pytest.approx(
        ell[0] / F_OUT
    )
    # where the exact GP could run and costs less than the whole reach's rule, the whole
    # reach is kept: the exact route takes over from there
    lv._exact_ready = lambda: True
    lv._exact_cheaper = lambda fmap, ranges, noise: True
    assert lv._reach(nxt, ell, lo_hit, hi_hit, F_OUT**4, nodes, 0.1)[0, 0] == pytest.approx(
        ell[0] / F_OUT**4
    )
    lv._exact_cheaper = lambda fmap, ranges, noise: False
    assert lv._reach(nxt, ell, lo_hit, hi_hit, F_OUT**4, nodes, 0.1)[0, 0] == far[0, 0]


def test_a_walk_reaches_as_far_as_its_slowing_rise_predicts():
    """walk_reach: on a likelihood quadratic along the walk (log lengthscales on a line, the
    step measured by the largest change of one), the secants' slopes are the derivative at
    the steps' midpoints, so the predicted optimum is the true one: the reach is F_OUT x
    e^(its distance beyond the last level), F_OUT where it lies behind it (the rise slowed
    but still positive); no limit (inf) with fewer than three levels, a rise that did not
    slow, or a falling one."""
    from rfcli.jobs.gpr_ranges import F_OUT, walk_reach

    direction = np.array([-1.0, -0.4])  # the first input moves most: the step's length

    def walk(ts, t_opt, a=30.0, way=direction):
        return [(np.log([2.0, 0.5]) + t * way, -a * (t - t_opt) ** 2) for t in ts]

    ts = [0.0, 0.4, 1.0]  # steps of 0.4 and 0.6
    for t_opt in (1.3, 2.5):
        want = F_OUT * np.exp(t_opt - ts[-1])
        assert walk_reach(walk(ts, t_opt)) == pytest.approx(want)
        assert walk_reach(walk(ts, t_opt, way=-direction)) == pytest.approx(want)  # upward
    # the optimum between the last step's midpoint and the last level: F_OUT
    assert walk_reach(walk(ts, 0.9)) == pytest.approx(F_OUT)
    # only the last three levels count
    assert walk_reach([(np.zeros(2), -1e9), *walk(ts, 2.5)]) == pytest.approx(F_OUT * np.exp(1.5))
    assert walk_reach(walk(ts[:2], 2.5)) == np.inf
    convex = [(x, -lml) for x, lml in walk(ts, -1.0)]  # a rise that grows
    assert walk_reach(convex) == np.inf
    assert walk_reach(walk(ts, 0.3)) == np.inf  # the LML fell on the last step
    with warnings.catch_warnings():  # a rise that barely slowed: no limit, no overflow
        warnings.simplefilter("error")
        assert walk_reach(walk(ts, 1e6, a=1e-9)) == np.inf


def test_a_shrinking_level_takes_the_coarsest_tolerance_that_meets_the_noise_target():
    """Before a level around an inside optimum, the tolerance rises by REFINE_FACTOR a step,
    up to the fit's own, while the rule's error on the data at the optimum stays within the
    target: the coarsest that does is returned, the current one kept meanwhile; None where
    the first step already errs too much, or the tolerance is the fit's own; a rule over
    the budget ends the steps."""
    from types import SimpleNamespace

    from rfcli.jobs.gpr_levels import Levels
    from rfcli.jobs.gpr_tolerance import REFINE_FACTOR

    lv = Levels.__new__(Levels)
    lv.s = SimpleNamespace(tol=1e-3)
    lv.tol = 1e-3 / REFINE_FACTOR**3
    tried = []
    lv._map = lambda ranges, tol=None: tried.append(tol) or SimpleNamespace(tol=tol)
    lv._data_error = lambda fmap, ell, n: 30 * fmap.tol  # the error grows with the tolerance
    ranges, ell = np.array([[0.2, 0.5]]), np.array([0.3])
    # 1e-3 / 9 errs by 3.3e-3, 1e-3 / 3 by 1e-2, 1e-3 by 3e-2
    assert lv._coarser_tol(ranges, ell, 100, 0.015) == pytest.approx(1e-3 / REFINE_FACTOR)
    assert lv.tol == pytest.approx(1e-3 / REFINE_FACTOR**3)
    assert tried == pytest.approx([1e-3 / 9, 1e-3 / 3, 1e-3])
    assert lv._coarser_tol(ranges, ell, 100, 0.1) == pytest.approx(1e-3)  # never above
    lv.tol = 4e-4  # a step would pass the fit's own tolerance: it stops there
    assert lv._coarser_tol(ranges, ell, 100, 0.1) == pytest.approx(1e-3)
    lv.tol = 1e-3 / REFINE_FACTOR**3
    assert lv._coarser_tol(ranges, ell, 100, 1e-3) is None
    lv.tol = 1e-3
    assert lv._coarser_tol(ranges, ell, 100, 1.0) is None

    def too_large(ranges, tol=None):
        if tol > 2e-4:
            raise G.RuleTooLarge("over", 10**6, [1], [1.0])
        return SimpleNamespace(tol=tol)

    lv._map, lv.tol = too_large, 1e-3 / REFINE_FACTOR**3
    assert lv._coarser_tol(ranges, ell, 100, 1.0) == pytest.approx(1e-3 / 9)


def test_a_groups_coarsened_tolerance_does_not_reach_the_next_group():
    """A shrinking level's coarser tolerance serves its own group: the next group of starts
    begins from the finer tolerance the group had refined to (mosaicData::SaratogaHouses
    with --ard: the second group's level at 1e-3 erred on the data by 0.63 x noise/signal,
    at 1.1e-4 by 0.06 x)."""
    from rfcli.jobs.gpr_levels import Levels

    lv = Levels.__new__(Levels)
    lv.tol, lv._before_coarsening, lv.report, lv.later_done = 1e-3, None, {}, False
    lv._groups = lambda starts: [[s] for s in starts]
    seen = []

    def refine(starts, group, finished):
        seen.append(lv.tol)
        if group == 0:  # refines for the noise, then a shrinking level coarsens
            lv.tol = 1e-3 / 9
            lv._before_coarsening, lv.tol = lv.tol, 1e-3
        state = (None,) * 6 + ({"kind": "level"},)
        return state, -float(group), True, np.ones(1)

    lv._refine = refine
    lv._done = lambda *state: state
    lv._refine_all([{"ell": np.ones(1)}, {"ell": np.ones(1) * 3}])
    assert seen == pytest.approx([1e-3, 1e-3 / 9])
    assert lv._before_coarsening is None


def _legendre_weights_extended(x, q):
    """2 / ((1 - x^2) P_q'(x)^2) at the nodes x, in extended precision (long double)."""
    xl = np.asarray(x, dtype=np.longdouble)
    p0, p1 = np.ones_like(xl), xl.copy()
    for k in range(1, q):
        p0, p1 = p1, ((2 * k + 1) * xl * p1 - k * p0) / (k + 1)
    dp = q * (xl * p1 - p0) / ((xl - 1) * (xl + 1))
    return 2 / ((1 - xl) * (1 + xl) * dp * dp)


def test_gauss_legendre_rules_match_numpys_and_integrate_exactly():
    from rfcli.maps.glf_rules import _leggauss

    for q in (1, 2, 3, 7, 64, 501, 1200, 1783):
        x, w = _leggauss(q)
        x0, w0 = np.polynomial.legendre.leggauss(q)
        np.testing.assert_allclose(x, x0, rtol=0, atol=4e-16)
        # NumPy's weights lose digits as q grows (2e-8 relative at q = 1,782): the weights
        # are checked against the formula evaluated in extended precision at the same nodes
        np.testing.assert_allclose(w, w0, rtol=1e-6)
        if np.finfo(np.longdouble).eps < 1e-18:  # x86's 80-bit long double
            ref = _legendre_weights_extended(x, q)
            assert float(np.abs(w / ref - 1).max()) < 2e-9
        for k in {0, min(2, 2 * q - 2), min(2 * q - 2, 40)}:  # x^k exactly to degree 2q - 1
            assert abs(w @ x**k - 2 / (k + 1)) < 1e-13


def _single_by_steps(L, width, tol, cap, max_nodes, hi=3.0):
    """The single-rule search one step at a time: (the first step that passes or, when none
    does, the largest tried; whether it passed)."""
    delta = G.probe_differences(np.array([width]), 0)
    ells = G.probe_lengthscales(np.array([[0.3, hi]]), ard=False)
    line = last = G._Line("single", L, hi, 2 * max(4, int(0.4 * np.pi * L * width)))
    while line.kind == "single" and line.q <= cap and line.q // 2 <= max_nodes:
        H, w = line.nodes()
        if G.kernel_error("gaussian", H[:, None], w, delta, ells) <= tol:
            return line, True
        last, line = line, line.grow()
    return last, False


@pytest.mark.parametrize("kernel", ["gaussian", "matern52", "matern32"])
def test_cutoff_leaves_the_tail_asked_of_the_spectral_marginal(kernel):
    """cutoff_for's L: the 1-D marginal of the kernel's spectral density at lengthscale ell
    has mass ``tail`` outside [-L, L] (Gaussian: eta ~ N(0, 1/(2 pi ell)^2), by erfc;
    Matern nu: 2 pi ell eta / sqrt(2 nu) ~ Student t with 2 nu degrees of freedom)."""
    import math

    from scipy import stats

    nu = {"matern52": 2.5, "matern32": 1.5}.get(kernel)
    for ell in (0.013, 0.7, 25.0):
        for tail in (1e-14, 1e-9, 1e-4, 0.05):
            L = G.cutoff_for(kernel, ell, tail)
            u = 2 * math.pi * ell * L
            left = (
                math.erfc(u / math.sqrt(2))
                if nu is None
                else 2 * stats.t.sf(u / math.sqrt(2 * nu), 2 * nu)
            )
            assert left == pytest.approx(tail, rel=1e-9)


def test_the_single_rule_search_finds_the_first_step_that_passes():
    """The single-rule search computes a few rules by bisection; it returns the step the
    steps one by one would stop at: the smallest q meeting the tolerance, the largest tried
    when none does (a single rule asked for), none when a composite rule is smaller."""
    cases = [
        (3.0, 4.0, 1e-3, 5000),
        (8.0, 3.5, 1e-5, 5000),
        (20.0, 2.0, 1e-4, 5000),
        (20.0, 2.0, 1e-4, 300),
    ]  # fmt: skip  (the last: no step within the budget passes)
    for L, width, tol, max_nodes in cases:
        got = G._search_lines("gaussian", L, width, 0.3, 3.0, tol, 0, ("single",), max_nodes)
        want, passed = _single_by_steps(L, width, tol, 2 * max_nodes, max_nodes)
        assert got["single"].size == want.size and passed == (max_nodes > 300)
    found = []
    for L, width, tol, hi in [(10.0, 6.0, 1e-6, 1.0), (20.0, 2.0, 1e-4, 3.0)]:
        both = G._search_lines("gaussian", L, width, 0.3, hi, tol, 0, ("single", "composite"),
                               5000)  # fmt: skip
        cap = min(G.SINGLE_MAX, both["composite"].q)
        want, passed = _single_by_steps(L, width, tol, cap, 5000, hi)
        assert (both["single"].size if both["single"] else None) == (want.size if passed else None)
        found.append(both["single"] is not None)
    assert found == [True, False]  # a single rule smaller than the composite; none below it


def test_statistics_summed_from_the_first_row_equal_the_kept_rows_folded():
    """keep_rows=False (more rows in all than features) sums every row at once; groups that
    kept their rows (30 each, below m = 40) and were folded when added give the same
    statistics to rounding."""
    rng = np.random.default_rng(7)
    V, y = rng.standard_normal((90, 40)), rng.standard_normal(90) + 3.0
    summed, parts = GPStats(40, shift=3.0, keep_rows=False), []
    for a in range(0, 90, 30):
        summed.update(V[a : a + 30], y[a : a + 30])
        parts.append(GPStats(40, shift=3.0))
        parts[-1].update(V[a : a + 30], y[a : a + 30])
    assert summed.blocks is None and all(p.blocks is not None for p in parts)
    both = parts[0] + parts[1] + parts[2]
    np.testing.assert_allclose(summed.G, both.G, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(summed.G, V.T @ V, rtol=1e-12, atol=1e-10)
    for x, z in zip(summed.standardized(), both.standardized(), strict=True):
        np.testing.assert_allclose(x, z, rtol=1e-12, atol=1e-12)


def test_a_prior_tolerance_that_no_longer_fits_falls_back_to_the_finest_that_does():
    """Where the levels go after the prior refined the tolerance, the rule may exceed the
    budget: the finest coarser tolerance (tol x 3^k, at most the one before the prior) that
    fits is taken; none fitting is refused."""
    from rfcli.jobs.gpr_levels import Levels
    from rfcli.jobs.gpr_tolerance import REFINE_FACTOR

    lv = Levels.__new__(Levels)
    fits_from = 1e-3 / REFINE_FACTOR**2  # rules at finer tolerances are too large

    def fake_map(ranges, tol=None):  # (as Levels._map: the current tolerance by default)
        tol = lv.tol if tol is None else tol
        if tol < fits_from * (1 - 1e-9):
            raise G.RuleTooLarge("too large", 10**6, [1000], [1.0])
        return ("rule at", tol)

    lv._map = fake_map
    lv.tol = 1e-3 / REFINE_FACTOR**4
    assert lv._coarser_fit(None, 1e-3) == ("rule at", pytest.approx(fits_from))
    assert lv.tol == pytest.approx(fits_from)  # the levels go on at the tolerance taken
    lv.tol = 1e-3 / REFINE_FACTOR**4
    with pytest.raises(G.RuleTooLarge):
        lv._coarser_fit(None, fits_from / REFINE_FACTOR)  # not even the limit fits


def test_feature_chunks_are_as_equal_as_the_block_size_allows():
    from rfcli.jobs.train_gpr import FEATURE_BLOCK_BYTES, _feature_rows

    cap = FEATURE_BLOCK_BYTES // (8 * 1783)
    assert _feature_rows(1783, 65536) == cap  # rows unknown (a stream): the block size
    assert _feature_rows(1783, 65536, 3000) == 1500  # not 2,352 + 648
    # rows within one block: two chunks (two threads' work) from 257 rows on
    assert _feature_rows(100, 65536, 3000) == 1500
    assert _feature_rows(100, 65536, 256) == 256
    assert _feature_rows(100, 65536, 300) == 150  # two chunks, made equal
    for n in (1, 255, 256, 257, 512, cap, cap + 1, 3000, 10_000, 123_457):
        step = _feature_rows(1783, 65536, n)
        chunks = -(-n // step)
        assert step <= max(cap, 256)
        assert chunks == max(-(-n // max(cap, 256)), min(2, -(-n // 256)))
        assert n - (chunks - 1) * step >= step - chunks  # the last chunk nearly full
    assert _feature_rows(1783, 1000, 3000) == 1000  # a smaller chunk_rows still bounds it


def test_a_pass_that_keeps_its_rows_keeps_the_maps_output_in_one_chunk(tmp_path, monkeypatch):
    """Fewer rows than features: each GLF pass reads every row as one chunk and keeps the
    map's output itself (no copy per chunk, no stacking); other callers' rows are copied."""
    V = np.ones((5, 8))
    st = GPStats(8)
    st.update(V, np.zeros(5), copy=False)
    assert st.rows()[0] is V
    st = GPStats(8)
    st.update(V, np.zeros(5))
    assert not np.shares_memory(st.rows()[0], V)

    seen = []
    update = GPStats.update

    def spy(self, V, y, copy=True, inputs=None):
        seen.append((self.m, len(y), copy))
        return update(self, V, y, copy, inputs)

    monkeypatch.setattr(GPStats, "update", spy)
    path, _, _ = _smooth(tmp_path, "few", 0.05, n=400)
    train_gpr(path, str(tmp_path / "m.npz"), GPRSettings(exact=False),
              ReadSettings(label="y", chunk_rows=50))  # fmt: skip
    kept = [k for m, k, _ in seen if m >= 400]
    assert kept and all(k == 400 for k in kept)  # one chunk of every row, not 256 + 144
    assert all(not copy for *_, copy in seen)


def test_profile_maximum_finds_an_interior_maximum_and_an_end_exactly():
    def evaluate(top):
        def ev(ell):
            return float(-3.0 * np.log(ell[0] / top) ** 2), 0.5, -1.0

        return ev

    best, evals = profile_maximum(evaluate(0.7), 0.3, 2.0)
    assert best["ell"][0] == pytest.approx(0.7, rel=2e-4) and evals <= 12
    assert (best["log_s2"], best["log_lam"]) == (0.5, -1.0)
    for top, end in ((0.1, 0.3), (9.0, 2.0)):  # beyond an end: that end itself
        assert profile_maximum(evaluate(top), 0.3, 2.0)[0]["ell"][0] == end


def test_the_profiled_search_equals_l_bfgs_b_on_the_same_statistics():
    """Many features on few rows (rank << features): the profiled search's maximum is
    L-BFGS-B's."""
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, (150, 2))
    y = np.sin(6 * X[:, 0]) * np.cos(4 * X[:, 1]) + 0.05 * rng.normal(size=150)
    y = (y - y.mean()) / y.std()
    red, sp = _glf_statistics(X, y, [[0.1, 0.6], [0.1, 0.6]], [30, 30], ard=False)
    assert red.P.shape[1] >= job.PROFILE_RATIO * red.r
    sb, nb = (1e-3, 1e3), (1e-6, 10)
    best, _ = profile_maximum(glf_profile(red, sp, sb, nb), 0.15, 0.5)
    res, _ = fit_hyperparameters(glf_objective(red, sp), [sb, (0.15, 0.5), nb],
                                 [np.array([1.0, 0.3, 0.1])])  # fmt: skip
    assert best["lml"] >= -res.fun - 1e-6
    assert best["ell"][0] == pytest.approx(np.exp(res.x[1]), rel=1e-3)
    theta = np.array([best["log_s2"], np.log(best["ell"][0]), best["log_lam"]])
    assert lml_and_grad(theta, red, sp, False)[0] == pytest.approx(best["lml"], rel=1e-10)


def test_an_isotropic_level_with_many_features_per_rank_takes_the_profiled_search(
    tmp_path, monkeypatch
):
    """Clustered inputs with a few far rows: the box asks for many features, the data's
    rank is low (ggplot2::diamonds' case).  The level takes the profiled search and reaches
    L-BFGS-B's optimum."""
    rng = np.random.default_rng(0)
    x1, x2 = rng.normal(0, 1, 400), rng.normal(0, 1, 400)
    x1[:4], x2[:4] = [12, -10, 11, -9], [-10, 12, 9, -11]
    y = np.sin(x1) + np.cos(0.7 * x2) + 0.1 * rng.normal(size=400)
    path = write_parquet(tmp_path / "clusters.parquet", x1=x1, x2=x2, y=y)

    def fit(name):
        return train_gpr(path, str(tmp_path / name), GPRSettings(exact=False),
                         ReadSettings(label="y")).report  # fmt: skip

    rep = fit("p.npz")
    assert rep["features"] >= job.PROFILE_RATIO * rep["rank"]
    assert [h.get("method") for h in rep["starts"]][-1] == "profile"
    assert "profile search" in rep["timing"] and rep["seconds_per_iteration"] > 0
    monkeypatch.setattr(job, "PROFILE_RATIO", 1e9)  # L-BFGS-B everywhere
    ref = fit("l.npz")
    assert all("method" not in h for h in ref["starts"])
    assert ref["levels"][-1]["nodes"] == rep["levels"][-1]["nodes"]
    assert rep["log_marginal_likelihood"] >= ref["log_marginal_likelihood"] - 1e-6 * abs(
        ref["log_marginal_likelihood"]
    )
    assert rep["lengthscale"][0] == pytest.approx(ref["lengthscale"][0], rel=1e-3)
    assert rep["noise_variance"] == pytest.approx(ref["noise_variance"], rel=1e-3)


def test_polish_never_returns_less_than_the_best_point_it_or_the_scan_evaluated():
    """ARD: after one sweep a neighbour along an earlier lengthscale may be higher than the
    grid's best point; the polish goes on from it and returns the best point evaluated."""
    rng = np.random.default_rng(1)
    gains = []
    for _ in range(200):
        c, (a, b) = rng.uniform(-0.95, 0.95), rng.uniform(-2, 2, 2)

        def ev(ell, c=c, a=a, b=b):
            u = np.log(ell) - np.array([a, b])
            return float(-(u[0] ** 2 + u[1] ** 2 + 2 * c * u[0] * u[1])), 0.0, 0.0

        grids = [lengthscale_grid(0.05, 20.0), lengthscale_grid(0.1, 10.0)]
        pts = scan(ev, grids, sweeps=1)
        grid_best = max(p["lml"] for p in pts)
        best = polish(ev, pts, grids)
        assert best["lml"] == max(p["lml"] for p in pts) >= grid_best
        gains.append(best["lml"] - grid_best)
    assert np.median(gains) > 0  # it does move


def _line_through(pts, base, j):
    """The scan points on the line of parameter j through ``base`` (``base`` itself not)."""
    return [
        p["ell"][j]
        for p in pts
        if np.allclose(np.delete(p["ell"], j), np.delete(base, j), rtol=1e-12)
        and not np.isclose(p["ell"][j], base[j], rtol=1e-9)
    ]


def test_a_coordinate_scan_walks_out_to_its_lines_maximum_in_fewer_points():
    """ARD scans sweep each lengthscale from the best point, walking out while the LML
    rises: on lines with one maximum they reach the point the whole grid's line reaches,
    evaluating each side's rising points and its first lower one (and at most one point
    more a line: two are taken at a time), not the whole line."""
    rng = np.random.default_rng(2)
    grids = [lengthscale_grid(0.05, 20.0), lengthscale_grid(0.1, 10.0), lengthscale_grid(0.2, 30.0)]
    saved = []
    for _ in range(100):
        A = rng.normal(size=(3, 3))
        H, c = A @ A.T + 0.3 * np.eye(3), rng.uniform(-2, 2.5, 3)

        def ev(ell, H=H, c=c):
            u = np.log(ell) - c
            return float(-u @ H @ u), 0.0, 0.0

        pts = scan(ev, grids, sweeps=1)
        # the whole lines: the diagonal, then every grid point of each line in turn
        k = max(len(g) for g in grids)
        seen = [np.array([g[0] * (g[-1] / g[0]) ** t for g in grids]) for t in np.linspace(0, 1, k)]
        best = max(seen, key=lambda e: ev(e)[0])
        for j, g in enumerate(grids):
            line = [np.where(np.arange(3) == j, v, best) for v in g]
            # the points the walk needs: on each side, outward up to its first lower one
            need = []
            for side in (g[g < best[j] * (1 - 1e-9)][::-1], g[g > best[j] * (1 + 1e-9)]):
                last = ev(best)[0]
                for v in side:
                    need.append(v)
                    f = ev(np.where(np.arange(3) == j, v, best))[0]
                    if f < last:
                        break
                    last = f
            walked = _line_through(pts, best, j)
            assert all(np.isclose(walked, v, rtol=1e-12).any() for v in need)
            assert len(walked) <= len(need) + 1
            seen += line
            best = max([best, *line], key=lambda e: ev(e)[0])
        walked = max(pts, key=lambda p: p["lml"])
        assert np.allclose(walked["ell"], best)
        assert walked["lml"] == pytest.approx(ev(best)[0], rel=1e-12)
        saved.append(1 - len(pts) / len({tuple(np.round(e, 12)) for e in seen}))
    assert min(saved) >= 0 and np.median(saved) > 0.3


def test_a_one_lengthscale_scan_finds_the_grids_maximum_at_about_half_its_points():
    """One lengthscale (rfcli.learn.gpr_search._halves): every other grid point, then those
    beside their local maxima.  On curves with one maximum it finds the whole grid's best
    point, with both of its grid neighbours evaluated (what polish needs), at about half of
    the points (a peak on an odd point is found through its neighbours); a grid shorter
    than HALVES_MIN is scanned whole."""
    from rfcli.learn.gpr_search import HALVES_MIN

    rng = np.random.default_rng(3)
    g = lengthscale_grid(0.01, 30.0)  # 22 points
    odd = 0
    for _ in range(200):
        peak, width = rng.uniform(np.log(g[0]) - 1, np.log(g[-1]) + 1), rng.uniform(0.2, 3.0)

        def ev(ell, peak=peak, width=width):
            return float(-(((np.log(ell[0]) - peak) / width) ** 2)), 0.0, 0.0

        pts = scan(ev, [g], sweeps=1)
        got = {round(float(np.log(p["ell"][0])), 9) for p in pts}
        full = [ev([x])[0] for x in g]
        i = int(np.argmax(full))
        odd += i % 2
        for j in (i - 1, i, i + 1):
            if 0 <= j < len(g):
                assert round(float(np.log(g[j])), 9) in got
        assert max(p["lml"] for p in pts) == full[i]
        assert len(pts) <= len(g) // 2 + 3
    assert odd > 50  # peaks between the first round's points were met
    short = lengthscale_grid(0.5, 2.0, 6)[: HALVES_MIN - 1]
    assert len(scan(lambda e: (0.0, 0.0, 0.0), [short], sweeps=1)) == len(short)


def test_a_coordinate_scan_walks_across_a_flat_stretch():
    """Equal LMLs do not end a walk: from a point on a plateau (the diagonal never leaves
    it) the sweep crosses it to the maximum beyond, as the whole line did."""
    grids = [lengthscale_grid(0.05, 20.0), lengthscale_grid(0.1, 10.0)]
    c = np.log([10.0, 0.1])  # the diagonal runs from (low, low) to (high, high): far from c

    def ev(ell):
        u = np.log(ell) - c
        return float(max(-(u @ u), -1.0)), 0.0, 0.0

    pts = scan(ev, grids, sweeps=1)
    best = max(pts, key=lambda p: p["lml"])
    assert best["lml"] > -0.2  # near the maximum, 0 at c; the plateau is -1


def _assert_at_maximum(best: dict, evaluate, peak: float) -> None:
    """The profiled search's point is within PROFILE_XATOL of the maximum ``peak`` (log
    lengthscale), or its value within PROFILE_GAIN of the maximum's (its two stops; the
    test functions here are 1 nat wide, where 1e-4 nats lie 0.014 from a smooth peak)."""
    u = np.log(best["ell"][0])
    top = evaluate(np.exp([peak]))[0]
    assert abs(u - peak) <= 2 * PROFILE_XATOL or top - best["lml"] <= PROFILE_GAIN


def test_vertex_gain_is_the_parabolas_rise_to_its_vertex():
    """On a parabola the bracket's vertex is the maximum and the promised gain its height
    over the middle point, exactly; a bracket that opens upwards promises nothing to stop
    on (inf)."""
    from rfcli.learn.gpr_search import _vertex, _vertex_gain

    c, p, h = 37.0, 0.31, -5.0
    f = lambda u: h - c * (u - p) ** 2  # noqa: E731
    x1, x2, x3 = 0.2, 0.27, 0.45
    v = _vertex(x1, f(x1), x2, f(x2), x3, f(x3))
    assert v == pytest.approx(p, abs=1e-12)
    gain = _vertex_gain(x1, f(x1), x2, f(x2), x3, f(x3), v)
    assert gain == pytest.approx(h - f(x2), rel=1e-9)
    assert _vertex_gain(x1, -f(x1), x2, -f(x2), x3, -f(x3), v) == np.inf


def test_profile_maximum_from_a_start_walks_to_the_maximum_and_narrows_on_it():
    """From a start the search brackets the maximum around it (walking uphill where it lies
    beyond the start's neighbours) and narrows on it by parabolas: within the tolerance;
    from a start within a factor 1.35 of it (a scan's point), in fewer evaluations than
    Brent's search over the whole range (5-6 against 9 here); from far, in about as many."""
    peak = 0.37

    def evaluate(ell):
        u = np.log(ell[0]) - peak
        return float(-np.cosh(u) - 0.05 * u**3), 0.0, 0.0

    _, brent = profile_maximum(evaluate, 0.05, 20.0)
    for off in (0.02, -0.1, 0.3, 0.6, -1.3):
        best, evals = profile_maximum(evaluate, 0.05, 20.0, start=np.exp(peak + off))
        _assert_at_maximum(best, evaluate, peak)
        assert evals < brent if abs(off) <= 0.3 else evals <= brent + 3
    assert profile_maximum(evaluate, 0.05, np.exp(peak - 0.5), start=0.3)[0]["ell"][0] == (
        np.exp(peak - 0.5)  # rising to the range's end: hi exactly
    )
    # a kink: the walk's bracket puts the first vertex right on its middle point, which is
    # 0.1 off; golden steps go on until the parabolas converge or the bracket is narrow
    for off in (0.6, -1.3):
        kink = lambda e: (-abs(np.log(e[0]) - peak), 0.0, 0.0)  # noqa: E731
        best, _ = profile_maximum(kink, 0.05, 20.0, start=np.exp(peak + off))
        _assert_at_maximum(best, kink, peak)


@pytest.mark.parametrize("side", [-1, 1])
def test_profile_maximum_finds_a_maximum_its_doubling_steps_jumped_over_to_the_end(side):
    """The uphill walk's doubling step lands on the range's end, higher than the points it
    came from, though the maximum lies between them (ggplot2::txhousing: a level over
    [0.184, 0.508] from 0.338 returned its end 0.184 for a maximum at 0.211, and the walk
    ran a level more): a point just inside the end decides; an end still rising is kept."""
    # log lengthscale; the range's end at +-1, the start at 0: the walk steps to 0.3, 0.7,
    # then the end, higher than 0.7 (the peak above 0.85), and 0.9 just inside it is higher
    peak = side * 0.88

    def evaluate(ell):
        return float(-((np.log(ell[0]) - peak) ** 2)), 0.0, 0.0

    lo, hi = np.exp(-1.0), np.exp(1.0)
    best, _ = profile_maximum(evaluate, lo, hi, start=1.0)
    _assert_at_maximum(best, evaluate, peak)
    rising = profile_maximum(lambda e: (side * float(np.log(e[0])), 0.0, 0.0), lo, hi, start=1.0)
    assert rising[0]["ell"][0] == (hi if side > 0 else lo)


def test_profile_maximum_keeps_its_start_on_a_flat_likelihood_and_ends_exact():
    evals = []

    def flat(ell):
        evals.append(ell[0])
        return 1e-12 * np.sin(40 * np.log(ell[0])), 0.0, 0.0

    best, _ = profile_maximum(flat, 0.1, 10.0, start=0.7)
    assert best["ell"][0] == 0.7 and evals[0] == 0.7  # L-BFGS-B would not leave it either

    def rising(ell):
        return float(np.log(ell[0])), 0.0, 0.0

    assert profile_maximum(rising, 0.1, 10.0, start=0.7)[0]["ell"][0] == 10.0  # exactly hi
    assert profile_maximum(lambda e: rising(1 / e), 0.1, 10.0)[0]["ell"][0] == 0.1


@pytest.mark.parametrize("edge", [True, False])
def test_an_edge_optimum_whose_next_rule_does_not_fit_takes_the_exact_gp(edge):
    """A level whose kernel error on the data exceeds the noise's share, where no finer rule
    fits the budget: an optimum inside its range ends the group with the report's note; one
    on the range's edge, heading where no rule fits either, takes the dense exact GP from it
    where the rows allow (survival::flchain, Matern 5/2 with --ard: the levels stopped there
    unconverged at 1.15x the exact GP's test MSE)."""
    from types import SimpleNamespace

    from rfcli.jobs.gpr_levels import Levels

    lv = Levels.__new__(Levels)
    lv.s = SimpleNamespace(max_levels=10)
    lv.bounds, lv.n_ell, lv.d = np.array([[0.01, 100.0]]), 1, 1
    lv.tol, lv.report, lv.levels, lv.history, lv.sample_best = 1e-3, {}, [], [], None
    lv._before_coarsening = None
    ell = 0.5 if edge else 1.0  # the range below is 0.5 .. 2
    fmap = SimpleNamespace(w_=np.ones(100))
    lv._exact_first = lambda ranges, noise: False
    lv._tol_for_prior = lambda ranges, start: None
    lv._map = lambda ranges, tol=None: fmap
    lv._exact_ready = lambda: True
    lv._exact_cheaper = lambda fmap, ranges, noise: False
    lv._keep_sample_features = lambda fmap: None
    lv._pass = lambda fmap, what, ranges, noise: (None, None, SimpleNamespace(n=100), None)
    theta = np.log([1.0, ell, 1e-4])
    lv._learn = lambda red, spectral, ranges, thetas, where: (theta, [])
    lv._refactored = lambda fmap, ranges, st, red, spectral, th, noise, history, where: (
        red, th, None)  # fmt: skip
    lv._record = lambda kind, fmap, ranges, th, red, spectral, history: {
        "lml": -1.0,
        "probe_error": 1e-4,
        "kernel_error_data": 1e-3,
        "noise_to_signal": 1e-4,
    }
    lv._finer_tol = lambda nxt, ell, n, target: (None, G.RuleTooLarge("over", 10**6, [1], [1.0]))
    lv._fits = lambda ranges: False
    lv._too_large = lambda e, what: "too large"
    exact = []
    lv._exact = lambda thetas, group: exact.append(thetas) or "exact"
    out = lv._refine([{"ell": np.array([1.0]), "log_s2": 0.0, "log_lam": np.log(1e-4)}], 0, [])
    if edge:
        assert out == "exact"
        np.testing.assert_allclose(exact[0][0], np.exp(theta))
        assert "kernel_error_note" not in lv.report
    else:
        assert not exact and out[2] is True  # converged within the range
        assert "kernel_error_note" in lv.report
