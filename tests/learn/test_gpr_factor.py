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
    monkeypatch.setattr(gf, "PIVOT_SPARSE", 2 if finish < 0.5 else gf.PIVOT_SPARSE)
    V = _smooth_features(700, 300, 5)
    tol = rel_tol * (V * V).sum(0).max()
    F, r, _ = gf.rows_pivoted_cholesky(V, rel_tol)
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


def test_the_rows_factor_forms_the_columns_of_its_pivots_only(monkeypatch):
    """Each block's pivots are chosen on the candidates' own block of W (2 k^2 m flops),
    so only the pivots' columns of W are formed (2 n m flops each): as many columns as
    the rank, where forming every candidate's column took about twice as many."""
    V = _smooth_features(700, 300, 5)
    formed = []  # columns of all 700 rows (a candidates' block is their own rows only)
    real = gf.gram_columns

    def columns(A, rows, weights=None):
        if len(A) == len(V):
            formed.append(len(rows))
        return real(A, rows, weights)

    monkeypatch.setattr(gf, "gram_columns", columns)
    F, r, _ = gf.rows_pivoted_cholesky(V, 1e-12)
    assert len(formed) >= 3 and sum(formed) == r


def test_the_rows_factor_is_the_same_on_any_number_of_threads():
    V = _smooth_features(600, 250, 6)
    with tile_threads(1):
        F1, _, _ = gf.rows_pivoted_cholesky(V, 1e-12)
    with tile_threads(3):
        F3, _, _ = gf.rows_pivoted_cholesky(V, 1e-12)
    assert np.array_equal(F1, F3)


def test_features_without_signal_have_rank_zero():
    assert gf.rows_pivoted_cholesky(np.zeros((5, 8)), 1e-12) == (None, 0, 0.0)
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

    def a_pass(self, fmap, what, ranges, noise=None):
        held_at_pass.append(self._sample_map is None or self._sample_map is fmap)
        return real_pass(self, fmap, what, ranges, noise)

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
    monkeypatch.setattr(gf, "PIVOT_SPARSE", 2 if finish < 0.5 else gf.PIVOT_SPARSE)
    V = _smooth_features(300, 600, 7).T  # 1,200 features' columns as rows
    G = V @ V.T
    tol = 1e-12 * np.diag(G).max()
    upper = np.triu(G) + np.tril(np.full_like(G, np.nan), -1)  # below the diagonal: unread
    F, r, piv, _ = gf.gram_pivoted_cholesky(upper, 1e-12)
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
        F3, _, piv3, _ = gf.gram_pivoted_cholesky(G, 1e-12)
    with tile_threads(1):
        F1, _, piv1, _ = gf.gram_pivoted_cholesky(G, 1e-12)
    assert np.array_equal(F1, F3) and np.array_equal(piv1, piv3)
    assert gf.gram_pivoted_cholesky(np.zeros((4, 4)), 1e-12)[:2] == (None, 0)


@pytest.mark.parametrize("kernel", ["gaussian", "matern12", "matern32", "matern52"])
@pytest.mark.parametrize("ard", [False, True])
def test_the_weight_envelope_bounds_the_density_over_the_box_and_is_its_maximum(kernel, ard):
    """max_log_spectral_density: at least log p(eta) at every lengthscale of the box (a
    grid, its corners, random points), and within 1e-6 of the maximum that L-BFGS-B finds
    from the grid's best point (the bound is the maximum, not merely a bound)."""
    from itertools import product

    from scipy.optimize import minimize

    from rfcli.maps.glf_rules import log_spectral_density, max_log_spectral_density

    rng = np.random.default_rng(11)
    d = 3 if ard else 2
    eta = rng.normal(0, 1.5, (300, d)) * rng.uniform(0.01, 3, (300, 1))
    eta[0] = 0.0  # the zero frequency: largest at the longest lengthscales
    eta[1, 0] = 0.0  # a zero component
    lo, hi = np.array([0.05, 0.3, 0.1][:d]), np.array([2.0, 1.2, 8.0][:d])
    if not ard:
        lo, hi = lo[:1], hi[:1]
    top = max_log_spectral_density(kernel, eta, lo, hi, ard)
    assert np.all(np.isfinite(top))
    grid = [np.geomspace(a, b, 15) for a, b in zip(lo, hi, strict=True)]
    points = [np.array(p) for p in product(*grid)]
    points += [np.exp(rng.uniform(np.log(lo), np.log(hi))) for _ in range(50)]
    dens = np.array([log_spectral_density(kernel, eta, np.broadcast_to(p, (d,))) for p in points])
    assert np.all(dens <= top + 1e-9)
    for i in range(0, len(eta), 10):  # the maximum, from the grid's best point

        def neg(t, i=i):
            return -log_spectral_density(kernel, eta[i : i + 1], np.broadcast_to(np.exp(t), (d,)))[
                0
            ]

        start = np.log(points[int(np.argmax(dens[:, i]))])
        box = list(zip(np.log(lo), np.log(hi), strict=True))
        res = minimize(neg, start, bounds=box, method="L-BFGS-B", options={"ftol": 1e-15})
        assert top[i] <= -res.fun + 1e-6, (i, top[i], -res.fun)


def _weighted_case(kernel: str, ard: bool):
    """GLF features of 500 rows of a 2-D surface (noise variance 0.014 of the standardized
    targets' 1), a rule for lengthscales from 0.15 (Gaussian; 0.3 Matern) to 3, and the
    weights of the box [0.3, 1.5] x [0.4, 3.0] (ARD; else [0.3, 1.5])."""
    return _weighted_case_inputs(kernel, ard)[:4]


def _weighted_case_inputs(kernel: str, ard: bool):
    """:func:`_weighted_case` (fmap, V, y, weights) and the rows' inputs X and the box."""
    from rfcli.learn.gpr_factor import box_weights
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
    return fmap, V, y, box_weights(fmap, ranges), X, ranges


def test_the_weighted_rows_factor_is_the_factor_of_the_weighted_features():
    """rows_pivoted_cholesky with FeatureWeights: the factor of ``(V w^1/2)(V w^1/2)'`` at
    the threshold rel_tol x the weights' scale (the least largest weighted diagonal entry
    at the box's points), with every residual at most that threshold."""
    from rfcli.learn.gpr_factor import FeatureWeights

    fmap, V, _, fw = _weighted_case("gaussian", True)
    assert fw.points.shape == (5, V.shape[1])  # 4 corners and the centre
    assert np.all(fw.points <= fw.envelope * (1 + 1e-12))
    g = (V * V).sum(0)
    scale = fw.scale(g)
    assert 0 < scale < np.max(g * fw.envelope)
    F, r, _ = gf.rows_pivoted_cholesky(V, 1e-12, fw)
    Vw = V * np.sqrt(fw.envelope)
    F0, r0, _ = gf.rows_pivoted_cholesky(Vw, 1e-12 * scale / np.max(g * fw.envelope))
    tol = 1e-12 * scale
    assert abs(r - r0) <= 2  # (the last pivots may differ by rounding)
    # both approximate (V w^1/2)(V w^1/2)' within the threshold: residuals at most tol on
    # the diagonal, so at most tol off it, and each other within twice that
    resid = (Vw * Vw).sum(1) - (F * F).sum(1)
    assert resid.max() <= tol * (1 + 1e-6)
    assert np.abs(F @ F.T - F0 @ F0.T).max() <= 2 * tol + 1e-14
    bad = FeatureWeights(np.where(np.arange(V.shape[1]) == 3, np.nan, fw.envelope), fw.points)
    with pytest.raises(ValueError, match="finite"):
        gf.rows_pivoted_cholesky(V, 1e-12, bad)


@pytest.mark.parametrize(
    "kernel,ard", [("gaussian", True), ("matern52", True), ("gaussian", False)]
)
def test_a_factor_weighted_by_the_envelope_keeps_the_likelihood_at_every_lengthscale_of_its_range(
    kernel, ard
):
    """Reduced.from_rows with the weights of a box: a smaller rank than the unweighted
    factor (Gaussian: Matern's heavy tails keep both near the rows' count), and the dense
    low-rank likelihood (V D V' + lambda I) at lengthscales across the box (its corners
    too) within 1e-6 of its size: measured up to 1.4e-7 (at a noise 14x below the data's,
    with OpenBLAS's Haswell kernels; 1e-8 for the unweighted factor; within 2e-5 nats at
    the data's noise), against 0.1-0.3 nats with weights applied as w instead of w^1/2."""
    from rfcli.learn.gpr import Reduced, glf_spectral, lml_and_grad

    fmap, V, y, fw = _weighted_case(kernel, ard)
    n = len(y)
    sp = glf_spectral(fmap, ard)
    weighted = Reduced.from_rows(V, y, weights=fw)
    if kernel == "gaussian":
        plain = Reduced.from_rows(V, y)
        assert weighted.r < 0.6 * plain.r, (plain.r, weighted.r)
    for ell in ([0.3, 0.4], [1.5, 3.0], [0.3, 3.0], [0.6, 0.5], [1.0, 2.0]):
        ell = ell if ard else ell[:1]
        D = fmap.weights(np.asarray(ell) if ard else ell[0])
        for s2, lam in ((1.0, 0.05), (1.0, 0.014), (2.0, 1e-3)):
            K = s2 * (V * D) @ V.T + lam * np.eye(n)
            L = np.linalg.cholesky(K)
            a = np.linalg.solve(L, y)
            ref = -0.5 * a @ a - np.log(np.diag(L)).sum() - 0.5 * n * np.log(2 * np.pi)
            theta = np.log([s2, *ell, lam])
            lml, _ = lml_and_grad(theta, weighted, sp, need_grad=False)
            assert abs(lml - ref) <= 1e-6 * abs(ref) + 1e-4, (ell, s2, lam, lml, ref)


@pytest.mark.parametrize("finish", [0.5, 0.05])  # blocks to the end; the rest at once
def test_the_trace_stop_takes_the_shortest_prefix_of_the_factor_within_the_trace(
    finish, monkeypatch
):
    """rows_pivoted_cholesky with trace_tol: the factor without it, cut at the first column
    after which the residual's trace (tr W - ||F||^2) is at most trace_tol -- bit for bit
    the same columns, one column fewer would leave more than trace_tol; also where the
    rest is factored at once (_finish_factor)."""
    monkeypatch.setattr(gf, "PIVOT_FINISH", finish)
    monkeypatch.setattr(gf, "PIVOT_SPARSE", 1 if finish < 0.5 else gf.PIVOT_SPARSE)
    fmap, V, _, fw = _weighted_case("gaussian", True)
    W = (V * fw.envelope) @ V.T
    F, r, _ = gf.rows_pivoted_cholesky(V, 1e-12, fw)
    left = np.trace(W) - np.cumsum((F * F).sum(0))
    for trace_tol in (1e-2, 1e-4, 1e-6):
        Ft, rt, _ = gf.rows_pivoted_cholesky(V, 1e-12, fw, trace_tol)
        assert 0 < rt < r
        assert np.array_equal(Ft, F[:, :rt])
        assert rt >= 2 and left[rt - 1] <= trace_tol < left[rt - 2]
        assert gf.feature_rank(V, weights=fw, trace_tol=trace_tol) == rt
    assert gf.rows_pivoted_cholesky(V, 1e-12, fw, 0.0)[1] == r  # 0: no such stop


def _loss_over_estimate(full, cut, sp, noise: float, estimate, most: float = 1.25):
    """At lengthscales across _weighted_case's box and noise/signal ratios of at least
    ``noise``: the likelihood ``cut`` loses against ``full``, asserted at most ``most`` x
    ``estimate(theta)``; their ratios."""
    from rfcli.learn import gpr

    ratios = []
    for ell in ([0.3, 0.4], [1.5, 3.0], [0.3, 3.0], [0.6, 0.5], [1.0, 2.0], [1.5, 0.4]):
        for s2, ratio in ((1.0, noise), (2.0, 3 * noise), (0.5, 1.5 * noise)):
            theta = np.log([s2, *ell, s2 * ratio])
            a, _ = gpr.lml_and_grad(theta, full, sp, need_grad=False)
            b, _ = gpr.lml_and_grad(theta, cut, sp, need_grad=False)
            est = estimate(theta)
            assert abs(a - b) <= most * est, (ell, s2, ratio, a - b, est)
            ratios.append(abs(a - b) / est)
    return ratios


@pytest.mark.parametrize("kernel", ["gaussian", "matern52"])
@pytest.mark.parametrize("noise", [0.05, 1e-3])
def test_the_likelihood_a_factor_stopped_for_the_noise_loses_is_its_estimate(kernel, noise):
    """Reduced.from_rows with ``noise`` stops at the residual trace FACTOR_NATS x noise,
    at a smaller rank; at noise/signal ratios of at least ``noise`` and lengthscales
    across the box, the low-rank likelihood's distance to the full factor's is at most
    1.25 x factor_nats' estimate (measured: up to 1.05; the median 0.2-0.96) and the
    estimate is not vacuous (some point loses at least half of it).  Without its data
    term (the fitted function off the factor's span) the estimate falls 3-30x short."""
    from rfcli.learn import gpr

    fmap, V, y, fw = _weighted_case(kernel, True)
    sp = gpr.glf_spectral(fmap, True)
    full = gpr.Reduced.from_rows(V, y, weights=fw)
    cut = gpr.Reduced.from_rows(V, y, weights=fw, noise=noise)
    assert cut.r < full.r
    assert full.trace_left < cut.trace_left <= gpr.FACTOR_NATS * noise
    assert gpr.Reduced.from_rows(V, y).trace_left is None  # unweighted: no estimate
    ratios = _loss_over_estimate(
        full, cut, sp, noise, lambda theta: gpr.factor_nats(theta, cut, sp, V, y)
    )
    assert max(ratios) >= 0.5


@pytest.mark.parametrize("kernel", ["gaussian", "matern52"])
@pytest.mark.parametrize("noise", [0.05, 1e-3])
def test_a_factor_of_summed_rows_stops_for_the_noise_as_the_rows_factor_does(kernel, noise):
    """Reduced from G = V'V (a pass that summed its rows) with the weights and a noise: the
    candidates by their weighted residual, the stop at the weighted residual trace
    FACTOR_NATS x noise, the factor unweighted; a smaller rank than without them, its
    trace what it leaves of ``V diag(w) V'`` (the weighted diagonal of G - P'P), and the
    likelihood it loses against G's full factor at most 1.25 x factor_nats' estimate, which
    the sums (G, c) give as the rows do (the same terms: f'f = mu'G mu, y'f = c'mu).  Ranks
    62 and 114 of 291 (Gaussian, noise 0.05 and 1e-3), 416 and 471 of 500 (Matern 5/2)."""
    from rfcli.learn import gpr

    fmap, V, y, fw = _weighted_case(kernel, True)
    n = len(y)
    sp = gpr.glf_spectral(fmap, True)
    G, c = V.T @ V, V.T @ y
    upper = np.triu(G) + np.tril(np.full_like(G, np.nan), -1)  # only the upper triangle read
    full = gpr.Reduced(upper, c, float(y @ y), n)
    cut = gpr.Reduced(upper, c, float(y @ y), n, weights=fw, noise=noise)
    assert full.trace_left is None and cut.r < full.r
    left = float(fw.envelope @ (np.diag(G) - (cut.P * cut.P).sum(0)))
    assert cut.trace_left == pytest.approx(left, rel=1e-6, abs=1e-12)
    assert cut.trace_left <= gpr.FACTOR_NATS * noise

    def estimate(theta):
        est = gpr.factor_nats(theta, cut, sp, sums=(upper, c))
        assert est == pytest.approx(gpr.factor_nats(theta, cut, sp, V, y), rel=1e-6)
        return est

    ratios = _loss_over_estimate(full, cut, sp, noise, estimate)
    # not vacuous: measured up to 0.97 and 1.00 (Gaussian), 0.31 and 0.97 (Matern 5/2)
    assert max(ratios) >= 0.25


def test_a_level_whose_factor_lost_too_much_is_factored_again(tmp_path, monkeypatch):
    """Levels: a rows' factor stopped for a noise far too large (FACTOR_NATS 1e5 x its
    default) loses more than REFACTOR_NATS at the level's optimum; the level factors again
    for less and learns on, so every level's estimate ends at most REFACTOR_NATS and the
    fit's likelihood is the one of factors that never stop early (within 0.1 nats)."""
    from rfcli.io.settings import ReadSettings
    from rfcli.jobs import gpr_levels
    from rfcli.jobs.train_gpr import GPRSettings, train_gpr
    from rfcli.learn import gpr
    from tests.learn.test_gpr_exact_route import write_parquet

    rng = np.random.default_rng(11)
    X = rng.uniform(0, 1, (300, 2))
    y = np.sin(9 * X[:, 0]) * np.cos(6 * X[:, 1]) + 0.05 * rng.normal(size=len(X))
    path = write_parquet(tmp_path / "surface.parquet", x0=X[:, 0], x1=X[:, 1], y=y)
    fits, real, factors = {}, gpr.GPStats.reduced, []
    monkeypatch.setattr(gpr.GPStats, "reduced",
                        lambda st, *a, **k: factors.append(1) or real(st, *a, **k))  # fmt: skip
    for nats in (0.0, 100.0):
        monkeypatch.setattr(gpr, "FACTOR_NATS", nats)
        factors.clear()
        rep = train_gpr(str(path), None, GPRSettings(exact=False), ReadSettings(label="y")).report
        levels = [lv for lv in rep["levels"] if lv["kind"] == "level"]
        fits[nats] = (rep["log_marginal_likelihood"], levels, len(factors))
    (lml0, levels0, factors0), (lml1, levels1, factors1) = fits[0.0], fits[100.0]
    assert all(lv["factor_nats"] <= 1e-4 for lv in levels0)  # no early stop: next to none
    assert factors1 > factors0  # factored again
    assert all(lv["factor_nats"] <= gpr_levels.REFACTOR_NATS for lv in levels1)
    assert abs(lml1 - lml0) <= 0.1


def test_a_factor_at_its_rounding_threshold_is_not_made_again(tmp_path, monkeypatch):
    """Noise-free targets: the level's factor stops at the 1e-12 threshold before its trace
    stop, so a smaller noise would give the same factor; the estimate (above
    REFACTOR_NATS here) is recorded and the factor is made once per pass."""
    from rfcli.io.settings import ReadSettings
    from rfcli.jobs import gpr_levels
    from rfcli.jobs.train_gpr import GPRSettings, train_gpr
    from rfcli.learn import gpr
    from tests.learn.test_gpr_exact_route import write_parquet

    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, (800, 2))
    y = np.sin(9 * X[:, 0]) * np.cos(6 * X[:, 1])
    path = write_parquet(tmp_path / "exact.parquet", x0=X[:, 0], x1=X[:, 1], y=y)
    made, real = [], gpr.GPStats.reduced
    monkeypatch.setattr(gpr.GPStats, "reduced",
                        lambda st, *a, **k: made.append(real(st, *a, **k)) or made[-1])  # fmt: skip
    # the rows' own factor (the exact kernel's basis meets the trace here: no threshold)
    monkeypatch.setattr(gpr_levels.Levels, "_basis_kernel", lambda self, ranges: None)
    rep = train_gpr(str(path), None, GPRSettings(exact=False), ReadSettings(label="y")).report
    levels = [lv for lv in rep["levels"] if lv["kind"] == "level"]
    assert len(made) == len(rep["levels"])  # one factor a pass
    assert any(lv["factor_nats"] > gpr_levels.REFACTOR_NATS for lv in levels)
    last = made[-1]
    assert last.trace_left > gpr.trace_tolerance(levels[-1]["noise_to_signal"])


@pytest.mark.parametrize("kernel", ["gaussian", "matern52"])
def test_the_exact_kernels_factor_leaves_at_most_its_trace(kernel):
    """kernel_pivoted_cholesky: a factor of the dense exact kernel matrix whose residual's
    trace is at most trace_tol (and one column fewer would leave more), every residual
    diagonal entry non-negative."""
    from rfcli.maps.exact import correlation, scaled_sq_dists

    *_, X, _ = _weighted_case_inputs(kernel, True)
    ell = np.array([0.3, 0.4])
    K = correlation(kernel, scaled_sq_dists(X, X, ell))
    for trace_tol in (1e-1, 1e-3):
        F, r = gf.kernel_pivoted_cholesky(X, kernel, ell, 1e-12, trace_tol)
        left = np.trace(K) - np.cumsum((F * F).sum(0))
        assert 0 < r < len(X) and left[-1] <= trace_tol < left[-2]
        assert np.min(np.diag(K) - (F * F).sum(1)) >= -1e-10


@pytest.mark.parametrize("kernel", ["gaussian", "matern52"])
@pytest.mark.parametrize("noise", [0.05, 1e-3])
def test_a_factor_on_the_exact_kernels_basis_leaves_out_the_trace_it_reports(kernel, noise):
    """Reduced.from_rows with a ``basis`` (the exact kernel's factor at the box's short
    corner): the span Q of its fewest first columns that leave at most FACTOR_NATS x noise
    of the envelope's trace, which ``trace_left`` is (``tr (I - QQ') V diag(w) V'``, dense
    here); a rank near the rows' own factor's; and factor_nats' estimate with that trace
    stays near the likelihood it loses against the full factor across the box: within 1.5x
    (measured up to 1.36x, where the rows' own factor's residual trace, which bounds the
    projection's, keeps that factor's estimate within 1.25x)."""
    from functools import partial

    from rfcli.learn import gpr

    fmap, V, y, fw, X, ranges = _weighted_case_inputs(kernel, True)
    sp = gpr.glf_spectral(fmap, True)
    basis = partial(gf.kernel_pivoted_cholesky, X, kernel, ranges[:, 0], 1e-12)
    red = gpr.Reduced.from_rows(V, y, weights=fw, noise=noise, basis=basis)
    own = gpr.Reduced.from_rows(V, y, weights=fw, noise=noise)
    tol = gpr.FACTOR_NATS * noise
    W = (V * fw.envelope) @ V.T
    F, _ = basis(gf.BASIS_SLACK * tol * len(y) / np.trace(W))
    Q = np.linalg.qr(F)[0]

    def left(k):
        return np.trace(W) - np.trace(Q[:, :k].T @ W @ Q[:, :k])

    assert red.trace_left == pytest.approx(left(red.r), rel=1e-6, abs=1e-12 * np.trace(W))
    assert left(red.r) <= tol < left(red.r - 1)
    assert np.allclose(red.P, Q[:, : red.r].T @ V, atol=1e-12)
    assert red.P.base is None  # its own rows, not a view that holds the columns cut off
    assert red.r <= 1.1 * own.r, (red.r, own.r)
    full = gpr.Reduced.from_rows(V, y, weights=fw)
    estimate = lambda theta: gpr.factor_nats(theta, red, sp, V, y)  # noqa: E731
    # not vacuous: somewhere it loses a good share of the estimate (measured: 0.45-1.36)
    assert max(_loss_over_estimate(full, red, sp, noise, estimate, most=1.5)) >= 0.25


def test_a_basis_that_leaves_out_too_much_gives_the_rows_own_factor():
    """A basis whose span misses the features (the exact kernel at a lengthscale far above
    the box's): from_rows factors the rows' own Gram matrix instead, the same numbers."""
    from functools import partial

    from rfcli.learn import gpr

    fmap, V, y, fw, X, _ = _weighted_case_inputs("gaussian", True)
    far = partial(gf.kernel_pivoted_cholesky, X, "gaussian", np.array([30.0, 30.0]), 1e-12)
    red = gpr.Reduced.from_rows(V, y, weights=fw, noise=0.05, basis=far)
    own = gpr.Reduced.from_rows(V, y, weights=fw, noise=0.05)
    assert red.r == own.r and np.array_equal(red.P, own.P) and red.trace_left == own.trace_left


def test_a_trace_tolerance_within_rounding_gives_the_rows_own_factor():
    """At a noise/signal ratio of 1e-9 the trace tolerance (FACTOR_NATS x it, 1e-12) is
    below what the envelope's trace minus the basis's part of it resolves in float64 (about
    eps x the trace x sqrt(r), 1e-13 x 400 here): from_rows factors the rows' own Gram
    matrix, the same numbers (without that check, rounding let the basis pass with rank 56
    against the rows' own 47); at 1e-3 the basis serves."""
    from functools import partial

    from rfcli.learn import gpr
    from rfcli.learn.gpr_factor import box_weights
    from rfcli.maps.gauss_legendre import GaussLegendreMap

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (400, 1))
    y = np.sin(6 * X[:, 0]) + 0.01 * rng.normal(size=400)
    y = (y - y.mean()) / y.std()
    ranges = np.array([[0.05, 0.2]])
    fmap = GaussLegendreMap(kernel="gaussian", lengthscale_bounds=[0.05, 0.2], tol=1e-8)
    fmap.fit(1, box=(X.min(0), X.max(0)))
    V, _ = fmap.transform_raw(X)
    fw = box_weights(fmap, ranges)
    basis = partial(gf.kernel_pivoted_cholesky, X, "gaussian", ranges[:, 0], 1e-12)
    for noise, same in ((1e-9, True), (1e-3, False)):
        red = gpr.Reduced.from_rows(V, y, weights=fw, noise=noise, basis=basis)
        own = gpr.Reduced.from_rows(V, y, weights=fw, noise=noise)
        assert (red.P.shape == own.P.shape and np.array_equal(red.P, own.P)) == same, noise


def test_statistics_keep_their_rows_inputs_for_the_basis_while_they_keep_the_rows():
    """GPStats keeps the inputs that come with kept rows (in row order, through ``+``) and
    hands the exact kernel's basis to the rows' factor; rows without inputs, or summed
    rows, have none (the rows' own factor)."""
    from functools import partial

    from rfcli.learn import gpr

    fmap, V, y, fw, X, ranges = _weighted_case_inputs("gaussian", True)
    a, b = gpr.GPStats(V.shape[1]), gpr.GPStats(V.shape[1])
    a.update(V[:200], y[:200], inputs=X[:200])
    b.update(V[200:], y[200:], inputs=X[200:])
    st = a + b
    kernel = ("gaussian", ranges[:, 0])
    red = st.reduced(weights=fw, noise=0.05, kernel=kernel)
    Vs, ys, _, _ = st._standardized_rows()
    basis = partial(gf.kernel_pivoted_cholesky, X, "gaussian", ranges[:, 0], 1e-12)
    ref = gpr.Reduced.from_rows(Vs, ys, weights=fw, noise=0.05, basis=basis)
    assert np.array_equal(red.P, ref.P) and red.r == ref.r
    bare = gpr.GPStats(V.shape[1])
    bare.update(V[:200], y[:200], inputs=X[:200])
    bare.update(V[200:], y[200:])  # without its inputs
    assert bare.inputs is None
    own = gpr.Reduced.from_rows(Vs, ys, weights=fw, noise=0.05)
    assert np.array_equal(bare.reduced(weights=fw, noise=0.05, kernel=kernel).P, own.P)
    summed = gpr.GPStats(10)  # more rows than features: summed, no inputs
    summed.update(V[:20, :10], y[:20], inputs=X[:20])
    assert summed.inputs is None


def test_a_factor_on_the_exact_kernels_basis_is_the_same_on_any_number_of_threads():
    from functools import partial

    from rfcli.learn import gpr

    fmap, V, y, fw, X, ranges = _weighted_case_inputs("matern52", True)
    basis = partial(gf.kernel_pivoted_cholesky, X, "matern52", ranges[:, 0], 1e-12)
    out = []
    for threads in (1, 3):
        with tile_threads(threads):
            out.append(gpr.Reduced.from_rows(V, y, weights=fw, noise=1e-3, basis=basis))
    assert np.array_equal(out[0].P, out[1].P) and out[0].trace_left == out[1].trace_left


def test_only_gaussian_levels_take_the_exact_kernels_basis():
    """A Gaussian level's basis is its kernel at the range's smallest lengthscales (one per
    input); a Matern level keeps the rows' own factor (None)."""
    from types import SimpleNamespace

    from rfcli.jobs.gpr_levels import Levels

    ranges = np.array([[0.2, 0.5], [0.3, 0.9]])
    for kernel in ("gaussian", "matern12", "matern32", "matern52"):
        lv = SimpleNamespace(s=SimpleNamespace(kernel=kernel), n_ell=2, d=2)
        lv._full = lambda ell, lv=lv: Levels._full(lv, ell)
        out = Levels._basis_kernel(lv, ranges)
        if kernel == "gaussian":
            assert out[0] == "gaussian" and np.array_equal(out[1], [0.2, 0.3])
        else:
            assert out is None
