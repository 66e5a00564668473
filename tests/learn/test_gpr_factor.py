"""The rows' pivoted Cholesky factor (rfcli.learn.gpr_factor.rows_pivoted_cholesky): formed by
blocks of candidate pivots, it must leave every residual diagonal of W = V V' at most the
threshold, span V's rows as LAPACK's one-shot factor does, and keep about its rank."""

import numpy as np
import pytest
from scipy.linalg.lapack import dpstrf

from rfcli.learn import gpr_factor as gf
from rfcli.threads import tile_threads


def _smooth_features(n: int, nodes: int, seed: int) -> np.ndarray:
    """GLF-like features (cos, sin of 2-D inputs, spectral weights) of rows that each come
    twice (a candidate block meets its duplicates), of numerical rank well below n and m."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n // 2, 2))
    X = np.vstack([X, X[: n - len(X)]])  # every row twice
    H = rng.normal(0, 3.0, (nodes, 2))
    w = np.exp(-0.05 * (H**2).sum(1))
    w /= w.sum()
    Z = X @ H.T
    return np.hstack([np.cos(Z) * np.sqrt(w), np.sin(Z) * np.sqrt(w)])


@pytest.mark.parametrize("finish", [0.5, 0.05])  # blocks to the end; the rest at once
@pytest.mark.parametrize("rel_tol", [1e-12, 1e-8])
def test_the_rows_factor_leaves_every_residual_at_most_the_threshold(rel_tol, finish, monkeypatch):
    monkeypatch.setattr(gf, "PIVOT_FINISH", finish)
    V = _smooth_features(700, 300, 5)
    tol = rel_tol * (V * V).sum(0).max()
    F, r = gf.rows_pivoted_cholesky(V, rel_tol)
    assert r > 2 * gf.PIVOT_BLOCK  # several blocks of candidates
    W = V @ V.T
    resid = np.diag(W) - (F * F).sum(1)
    assert resid.max() <= tol * (1 + 1e-6)
    assert resid.min() >= -1e-10  # no growth: rounding stays at rounding's size
    # the rows' span: V off the span of F's columns carries at most the residuals' sum
    Q = np.linalg.qr(F)[0]
    off = V - Q @ (Q.T @ V)
    assert (off * off).sum() <= 1.01 * max(resid.clip(0).sum(), len(V) * 1e-30) + 1e-20
    # LAPACK's one-shot factor of the whole W (complete pivoting): about the same rank
    _, _, r_lapack, _ = dpstrf(W, lower=1, tol=tol)
    assert r_lapack <= r <= r_lapack + 6  # a few more than complete pivoting takes


def test_the_rows_factor_is_the_same_on_any_number_of_threads():
    V = _smooth_features(600, 250, 6)
    with tile_threads(1):
        F1, _ = gf.rows_pivoted_cholesky(V, 1e-12)
    with tile_threads(3):
        F3, _ = gf.rows_pivoted_cholesky(V, 1e-12)
    assert np.array_equal(F1, F3)


def test_features_without_signal_have_rank_zero():
    assert gf.rows_pivoted_cholesky(np.zeros((5, 8)), 1e-12) == (None, 0)
    assert gf.feature_rank(np.zeros((0, 8))) == 0


def test_a_rules_sample_features_are_made_once_and_not_kept_through_another_rules_pass(
    tmp_path, monkeypatch
):
    """The row sample's features serve the rank estimate and the kernel error on the data of
    the same rule (Levels._sample_features); a pass of another rule does not hold them."""
    from rfcli.io.settings import ReadSettings
    from rfcli.jobs import gpr_levels
    from rfcli.jobs.train_gpr import GPRSettings, train_gpr
    from tests.learn.test_gpr_exact_route import _rough

    made, held_at_pass = [], []
    real_features, real_pass = gpr_levels.Levels._sample_features, gpr_levels.Levels._pass

    def features(self, fmap):
        if self._sample_map is not fmap:
            made.append(fmap)
        return real_features(self, fmap)

    def a_pass(self, fmap, what, ranges):
        held_at_pass.append(self._sample_map is None or self._sample_map is fmap)
        return real_pass(self, fmap, what, ranges)

    monkeypatch.setattr(gpr_levels.Levels, "_sample_features", features)
    monkeypatch.setattr(gpr_levels.Levels, "_pass", a_pass)
    path, _, _ = _rough(tmp_path)
    rep = train_gpr(str(path), None, GPRSettings(exact=False), ReadSettings(label="y")).report
    levels = [lv for lv in rep["levels"] if lv["kind"] == "level"]
    assert len(levels) >= 2 and all(held_at_pass)
    assert len(made) == len({id(f) for f in made})  # each rule's sample transformed once


@pytest.mark.parametrize("finish", [0.5, 0.05])
def test_the_factor_of_g_leaves_every_residual_at_most_the_threshold(finish, monkeypatch):
    """G = V'V given whole (a pass that summed its rows): the same blocked factor from G's
    own columns; F[pivots] is lower triangular, the residual of G is at most the threshold
    everywhere, and Reduced's z solves c = P'z."""
    from rfcli.learn.gpr import Reduced

    monkeypatch.setattr(gf, "PIVOT_FINISH", finish)
    V = _smooth_features(300, 600, 7).T  # 1,200 features' columns as rows
    G = V @ V.T
    tol = 1e-12 * np.diag(G).max()
    upper = np.triu(G) + np.tril(np.full_like(G, np.nan), -1)  # below the diagonal: unread
    F, r, piv = gf.gram_pivoted_cholesky(upper, 1e-12)
    assert r > 2 * gf.PIVOT_BLOCK and len(piv) == r and len(set(piv)) == r
    assert np.allclose(np.triu(F[piv], 1), 0.0)  # lower triangular in pivot order
    resid = np.diag(G) - (F * F).sum(1)
    assert resid.max() <= tol * (1 + 1e-6) and resid.min() >= -1e-10
    assert np.abs(G - F @ F.T).max() <= 10 * np.sqrt(tol * np.diag(G).max())
    _, _, r_lapack, _ = dpstrf(G, lower=1, tol=tol)
    assert r_lapack <= r <= 1.03 * r_lapack + 6
    y = np.random.default_rng(0).standard_normal(V.shape[1])
    red = Reduced(upper, V @ y, float(y @ y), len(y))
    assert red.r == r
    # exact on the pivots' rows; elsewhere within a row's residual norm times |y|
    c = V @ y
    np.testing.assert_allclose((red.P.T @ red.z)[piv], c[piv], rtol=1e-9, atol=1e-10 * abs(c).max())
    off = np.abs(red.P.T @ red.z - c)
    assert np.all(off <= np.sqrt(np.maximum(resid, tol)) * np.linalg.norm(y) * 1.01)
    with tile_threads(3):
        F3, _, piv3 = gf.gram_pivoted_cholesky(G, 1e-12)
    with tile_threads(1):
        F1, _, piv1 = gf.gram_pivoted_cholesky(G, 1e-12)
    assert np.array_equal(F1, F3) and np.array_equal(piv1, piv3)
    assert gf.gram_pivoted_cholesky(np.zeros((4, 4)), 1e-12)[:2] == (None, 0)


@pytest.mark.parametrize("kernel", ["gaussian", "matern32", "matern52"])
@pytest.mark.parametrize("ard", [False, True])
def test_the_weight_envelope_bounds_the_density_over_the_box_and_reaches_its_maximum(kernel, ard):
    """max_log_spectral_density: at least log p(eta) at every lengthscale of the box (random
    points, its corners and a fine grid), and no more than the grid's maximum plus the
    grid's own resolution (the bound is the maximum, not merely a bound)."""
    from itertools import product

    from rfcli.maps.glf_rules import log_spectral_density, max_log_spectral_density

    rng = np.random.default_rng(11)
    d = 3 if ard else 2
    eta = rng.normal(0, 1.5, (400, d)) * rng.uniform(0.01, 3, (400, 1))
    eta[0] = 0.0  # the zero frequency: largest at the longest lengthscales
    lo, hi = np.array([0.05, 0.3, 0.1][:d]), np.array([2.0, 1.2, 8.0][:d])
    if not ard:
        lo, hi = lo[:1], hi[:1]
    top = max_log_spectral_density(kernel, eta, lo, hi, ard)
    grid = [np.geomspace(a, b, 25) for a, b in zip(lo, hi, strict=True)]
    points = [np.array(p) for p in product(*grid)] if ard else [np.full(d, g) for g in grid[0]]
    points += [np.exp(rng.uniform(np.log(lo), np.log(hi))) * np.ones(d) for _ in range(50)]
    dens = np.array([log_spectral_density(kernel, eta, p) for p in points])
    assert np.all(dens <= top + 1e-9)
    # the grid's maximum is within its spacing's reach of the true one (a concave function
    # of log ell with slopes of at most d + (nu + d/2) 2: a step of log(hi/lo)/24 each way)
    slope = d * 6.0 * max(np.log(hi / lo)) / 24
    assert np.all(top <= dens.max(axis=0) + slope)
    if not ard:  # one lengthscale: the maximum in closed form (u = d), attained exactly
        best = np.clip(np.sqrt(d) / (2 * np.pi * np.linalg.norm(eta[1:6], axis=1)), lo[0], hi[0])
        reached = [
            log_spectral_density(kernel, eta[k + 1 : k + 2], b)[0] for k, b in enumerate(best)
        ]
        np.testing.assert_allclose(top[1:6], reached, rtol=1e-12)


@pytest.mark.parametrize(
    "kernel,ard", [("gaussian", True), ("matern52", True), ("gaussian", False)]
)
def test_a_factor_weighted_by_the_envelope_keeps_the_likelihood_at_every_lengthscale_of_its_range(
    kernel, ard
):
    """Reduced with the weights' envelope over a range (from G and from the rows): a smaller
    rank than the unweighted factor, and the same log marginal likelihood as the dense
    low-rank one, V D V' + lambda I, at lengthscales across the range (its corners too)."""
    from rfcli.learn.gpr import GPStats, Reduced, glf_spectral, lml_and_grad
    from rfcli.maps.gauss_legendre import GaussLegendreMap

    rng = np.random.default_rng(4)
    n = 500
    X = rng.uniform(0, 1, (n, 2))
    y = np.sin(5 * X[:, 0]) * X[:, 1] + 0.05 * rng.normal(size=n)
    y = (y - y.mean()) / y.std()
    ranges = np.array([[0.3, 1.5], [0.4, 3.0]] if ard else [[0.3, 1.5]])
    lo = 0.15 if kernel == "gaussian" else 0.3  # Matern's heavy tails: more nodes
    wide = np.array([[lo, 3.0], [lo, 3.0]] if ard else [[lo, 3.0]])  # the rule's range
    fmap = GaussLegendreMap(kernel=kernel, lengthscale_bounds=wide, tol=1e-4).fit(
        2, box=(X.min(0), X.max(0))
    )
    V, _ = fmap.transform_raw(X)
    st = GPStats(fmap.n_features)
    st.update(V, y)
    env = fmap.weight_envelope(ranges)
    sp = glf_spectral(fmap, ard)
    plain = Reduced(np.triu(V.T @ V), V.T @ y, float(y @ y), n)
    weighted = [Reduced(np.triu(V.T @ V), V.T @ y, float(y @ y), n, weights=env),
                Reduced.from_rows(V, y, weights=env)]  # fmt: skip
    # (Matern's heavy tails keep the rank near the rows' count either way)
    smaller = 0.8 if kernel == "gaussian" else 1.0
    assert all(w.r <= smaller * plain.r for w in weighted), (plain.r, [w.r for w in weighted])
    for ell in ([0.3, 0.4], [1.5, 3.0], [0.6, 0.5], [1.0, 2.0]):
        ell = ell if ard else ell[:1]
        D = fmap.weights(np.asarray(ell) if ard else ell[0])
        for s2, lam in ((1.0, 0.05), (2.0, 1e-3)):
            K = s2 * (V * D) @ V.T + lam * np.eye(n)
            L = np.linalg.cholesky(K)
            a = np.linalg.solve(L, y)
            ref = -0.5 * a @ a - np.log(np.diag(L)).sum() - 0.5 * n * np.log(2 * np.pi)
            theta = np.log([s2, *ell, lam])
            for red in weighted:
                lml, _ = lml_and_grad(theta, red, sp, need_grad=False)
                # the unweighted factor's own distance here: up to 4e-4 nats at lambda 1e-3
                assert abs(lml - ref) <= 1e-2, (ell, s2, lam, lml, ref)
