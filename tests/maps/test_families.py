"""Positive, ternary/activation, NTK and modified arc-cosine features (issue 5).

Unbiasedness: over S independent maps, per pair ``t = (mean - k) / (sd / sqrt(S))`` is
approximately t-distributed; the reference kernels here are written independently of the
modules (per-pair formulas, not the modules' matrix code).
"""

import numpy as np
import pytest

from rfcli.errors import InputError, UsageError
from rfcli.maps import FeatureMap, make_map
from rfcli.maps.activation import TARGETS, solve_thresholds, ternary_moments
from rfcli.maps.ntk import CountSketch, tensor_sketch
from rfcli.random import generator
from tests.helpers import letter_matrix


def rows(n=10, scale=1.0):
    X = letter_matrix(400)[::40][:n]
    X = (X - X.mean(0)) / X.std(0).mean()
    return X / np.linalg.norm(X, axis=1).mean() * scale


def tstats(kind, X, K, m, seeds, **opts):
    iu = np.triu_indices(len(X))
    est = []
    for s in seeds:
        f = make_map(kind, m, seed=s, **opts).fit_data(X)
        F = f.transform(X).astype(np.float64)
        est.append((F @ F.T)[iu])
    est = np.array(est)
    t = (est.mean(0) - K[iu]) / (est.std(0, ddof=1) / np.sqrt(len(est)))
    return t, est, K[iu]


def ref_arccos(x, y, order):
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    th = np.arccos(np.clip(x @ y / (nx * ny), -1, 1))
    if order == 0:
        return 1 - th / np.pi
    return nx * ny * (np.sin(th) + (np.pi - th) * np.cos(th)) / np.pi


def ref_ntk(x, y, depth):
    """Per-pair NTK recursion on the 2x2 Gram matrix of (x, y) (docs/methods.md, NTK features)."""
    kxx, kyy, kxy = x @ x, y @ y, x @ y
    theta = kxy
    for _ in range(depth):
        t = np.clip(kxy / np.sqrt(kxx * kyy), -1, 1)
        k0 = (np.pi - np.arccos(t)) / np.pi
        kxy_next = np.sqrt(kxx * kyy) * (np.sqrt(1 - t * t) + (np.pi - np.arccos(t)) * t) / np.pi
        theta = theta * k0 + kxy_next
        kxy = kxy_next  # the diagonal: F1 at t=1 keeps k(x, x)
    return theta


def pairwise(f, X):
    return np.array([[f(a, b) for b in X] for a in X])


def test_positive_features_unbiased_for_gaussian_kernel():
    X = rows(scale=0.8)
    beta = 0.5
    K = np.exp(-beta * ((X[:, None] - X[None]) ** 2).sum(-1))
    t, est, k = tstats("positive", X, K, 2000, range(30), gamma=beta)
    assert np.abs(t).max() < 5.0 and 0.2 < np.mean(t**2) < 4.0
    # kappa keeps the training features in (0, 1] before the scale
    f = make_map("positive", 64, gamma=beta).fit_data(X)
    z, _ = f.transform_raw(X)
    assert z.max() == pytest.approx(1.0, rel=1e-6) and z.min() > 0
    assert np.ptp(k) > 0.3


def test_positive_hyperbolic_pairs_draws():
    X = rows(scale=0.8)
    f = make_map("positive", 64, gamma=0.5, hyperbolic=True).fit_data(X)
    np.testing.assert_array_equal(f.W_[:, :32], -f.W_[:, 32:])
    with pytest.raises(UsageError, match="even"):
        make_map("positive", 63, gamma=0.5, hyperbolic=True)


def test_positive_kappa_out_of_range_is_input_error():
    X = rows(scale=30.0)
    with pytest.raises(InputError, match="kappa"):
        make_map("positive", 16, gamma=5.0).fit_data(X)


@pytest.mark.parametrize("modified", [False, True])
def test_arccos1_unbiased_plain_and_modified(modified):
    X = rows()
    K = pairwise(lambda a, b: ref_arccos(a, b, 1), X)
    t, _, _ = tstats("arccos1", X, K, 1000, range(20), modified=modified)
    assert np.abs(t).max() < 5.0 and 0.2 < np.mean(t**2) < 4.0


def test_modified_arccos1_has_lower_variance():
    X = rows()
    K = pairwise(lambda a, b: ref_arccos(a, b, 1), X)
    _, plain, k = tstats("arccos1", X, K, 500, range(30))
    _, mod, _ = tstats("arccos1", X, K, 500, range(30), modified=True)
    mse_plain, mse_mod = np.mean((plain - k) ** 2), np.mean((mod - k) ** 2)
    # with 30 x 55 estimates, the MSE ratio's noise is a few percent
    assert mse_mod < 0.9 * mse_plain


def test_tensor_sketch_unbiased_inner_products():
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(6, 5)), rng.normal(size=(6, 7))
    exact = (A @ A.T) * (B @ B.T)
    iu = np.triu_indices(6)
    est = []
    for s in range(200):
        g = generator(s, 7)
        c1, c2 = CountSketch.draw(g, 5, 64), CountSketch.draw(g, 7, 64)
        T = tensor_sketch(A, B, c1, c2).astype(np.float64)
        est.append((T @ T.T)[iu])
    est = np.array(est)
    t = (est.mean(0) - exact[iu]) / (est.std(0, ddof=1) / np.sqrt(len(est)))
    assert np.abs(t).max() < 5.0 and 0.2 < np.mean(t**2) < 4.0


def test_ntk_exact_kernel_matches_per_pair_recursion():
    X = rows(8)
    for depth in (1, 2, 3):
        f = make_map("ntk", 16, depth=depth).fit_data(X)
        np.testing.assert_allclose(
            f.kernel(X, X),
            pairwise(lambda a, b, L=depth: ref_ntk(a, b, L), X),
            rtol=1e-7,
            atol=1e-7,
        )
    # depth 1 closed form: ||x|| ||y|| k1 + x'y k0
    closed = pairwise(lambda a, b: ref_arccos(a, b, 1) + (a @ b) * ref_arccos(a, b, 0), X)
    np.testing.assert_allclose(make_map("ntk", 16).fit_data(X).kernel(X, X), closed, rtol=1e-7)


def test_ntk_depth1_features_unbiased():
    X = rows()
    K = pairwise(lambda a, b: ref_ntk(a, b, 1), X)
    t, _, _ = tstats("ntk", X, K, 1024, range(30))
    assert np.abs(t).max() < 5.0 and 0.2 < np.mean(t**2) < 4.0


@pytest.mark.parametrize("depth", [1, 2])
def test_ntk_kernel_mse_falls_like_one_over_m(depth):
    X = rows()
    K = pairwise(lambda a, b: ref_ntk(a, b, depth), X)
    _, small, k = tstats("ntk", X, K, 256, range(6), depth=depth)
    _, big, _ = tstats("ntk", X, K, 4096, range(6), depth=depth)
    ratio = np.mean((small - k) ** 2) / np.mean((big - k) ** 2)
    assert ratio > 6.0  # 16 expected for pure variance; depth 2 adds a small bias


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("tau", [0.25, 0.5, 1.0])
def test_ternary_thresholds_reproduce_target_moments(target, tau):
    th = solve_thresholds(target, tau)
    e1, e2 = TARGETS[target].moments(tau)
    t1, t2 = ternary_moments(th.s_minus, th.s_plus, tau, th.pattern)
    assert th.s_minus < th.s_plus
    assert abs(t1**2 - e1**2) < 1e-6 and abs(t2**2 / 4 - e2**2 / 4) < 1e-6


def test_ternary_moments_against_quadrature():
    # the closed-form jump formulas against Stein's lemma integrated numerically:
    # E[sigma'] = E[xi sigma(xi)]/tau, E[sigma''] = E[(xi^2 - tau) sigma(xi)]/tau^2
    from scipy.integrate import quad

    tau, lo, hi = 1.3, -0.4, 0.9

    def phi(t):
        return np.exp(-t * t / (2 * tau)) / np.sqrt(2 * np.pi * tau)

    for pattern, (a, b, c) in (("odd", (-1, 0, 1)), ("even", (1, -1, 1))):

        def expect(g, a=a, b=b, c=c):
            parts = ((-np.inf, lo, a), (lo, hi, b), (hi, np.inf, c))
            return sum(
                v * quad(lambda t: g(t) * phi(t), x0, x1, epsabs=1e-13)[0] for x0, x1, v in parts
            )

        m1 = expect(lambda t: t) / tau
        m2 = expect(lambda t: t * t - tau) / tau**2
        t1, t2 = ternary_moments(lo, hi, tau, pattern)
        assert abs(m1 - t1) < 1e-9 and abs(m2 - t2) < 1e-9


def test_target_moments_closed_form_against_quadrature():
    from rfcli.maps.activation import Target

    for name in ("relu", "cos", "sin", "erf", "abs"):
        t = TARGETS[name]
        q = Target(name, t.fn)  # no closed forms: Stein + adaptive quadrature
        for tau in (0.5, 2.0):
            np.testing.assert_allclose(q.moments(tau), t.moments(tau), atol=1e-7)


@pytest.mark.parametrize("target", ["relu", "cos", "erf"])
def test_activation_features_unbiased(target):
    X = rows()
    K = make_map("activation", 8, target=target).fit_data(X).kernel(X, X)
    t, _, _ = tstats("activation", X, K, 1000, range(20), target=target)
    assert np.abs(t).max() < 5.0 and 0.2 < np.mean(t**2) < 4.0


def test_tanh_kernel_monte_carlo_close_to_quadrature():
    # E[tanh(u) tanh(v)] for one pair by 2-D Gauss-Hermite (smooth integrand)
    X = rows(2)
    K = make_map("activation", 8, target="tanh").fit_data(X).kernel(X, X)
    g, w = np.polynomial.hermite_e.hermegauss(60)
    w = w / w.sum()
    C = X @ X.T
    L = np.linalg.cholesky(C + 1e-12 * np.eye(2))
    u = L[0, 0] * g[:, None] + 0 * g[None, :]
    v = L[1, 0] * g[:, None] + L[1, 1] * g[None, :]
    ref = np.sum(w[:, None] * w[None, :] * np.tanh(u) * np.tanh(v))
    assert abs(K[0, 1] - ref) < 5 * 0.5 / np.sqrt(1 << 16)


def test_ternary_map_symbols_sparsity_and_tau():
    X = rows(10)
    f = make_map("ternary", 4000, target="relu", sparsity=0.5).fit_data(X)
    assert set(np.unique(f.W_)) == {-1, 0, 1}
    assert abs(np.mean(f.W_ == 0) - 0.5) < 5 * np.sqrt(0.25 / f.W_.size)
    assert f.tau_ == pytest.approx(np.mean((X**2).sum(1)), rel=1e-12)
    z, _ = f.transform_raw(X)
    assert set(np.unique(z)) <= {-1.0, 0.0, 1.0}
    # the projection is unit-variance: weights scaled by 1/sqrt(1 - eps)
    W = f._weights()
    assert np.mean(W.astype(np.float64) ** 2) == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize("target", ["relu", "abs"])
def test_ternary_homogeneous_targets_fit_any_scale(target):
    """relu and abs are homogeneous: the thresholds of rows scaled by c are c times those
    of the rows (fitted at tau = 1 and scaled by sqrt(tau)), so raw coordinates (tau ~ 1e4,
    where no thresholds match the moments at tau itself) give the features of unit rows."""
    X = rows(50)
    a = make_map("ternary", 256, target=target).fit_data(X)
    b = make_map("ternary", 256, target=target).fit_data(X * 300.0)
    assert b.tau_ == pytest.approx(a.tau_ * 300.0**2)
    assert b.s_minus_ == pytest.approx(a.s_minus_ * 300.0)
    assert b.s_plus_ == pytest.approx(a.s_plus_ * 300.0)
    za, zb = a.transform_raw(X)[0], b.transform_raw(X * 300.0)[0]
    assert np.mean(za == zb) > 0.999  # float32 rounding may flip a value at a threshold


@pytest.mark.parametrize("target", ["cos", "sin"])
def test_ternary_degenerate_tau_is_clear_error(target):
    X = rows(10, scale=60.0)  # tau ~ 3600: exp(-tau/2) underflows, the kernel is degenerate
    with pytest.raises(InputError, match="add normalize_rows or standardize"):
        make_map("ternary", 16, target=target).fit_data(X)


@pytest.mark.parametrize("target", ["erf", "tanh"])
def test_ternary_thresholds_at_a_large_tau(target):
    tau = 1e4
    th = solve_thresholds(target, tau)
    e1, e2 = TARGETS[target].moments(tau)
    t1, t2 = ternary_moments(th.s_minus, th.s_plus, tau, th.pattern)
    assert abs(t1 - e1) < 1e-9 * abs(e1) + 1e-12 and abs(t2) < 1e-12


@pytest.mark.parametrize(
    "kind,opts",
    [
        ("positive", {"gamma": 0.5}),
        ("positive", {"gamma": "auto", "hyperbolic": True}),
        ("ternary", {"target": "cos", "sparsity": 0.3}),
        ("activation", {"target": "tanh"}),
        ("ntk", {"depth": 2, "modified": True}),
        ("arccos1", {"modified": True}),
    ],
)
def test_state_round_trip(kind, opts):
    X = rows(10)
    f = make_map(kind, 64, seed=4, **opts).fit_data(X)
    back = FeatureMap.from_state(*f.to_state())
    assert back == f
    np.testing.assert_array_equal(back.transform(X), f.transform(X))
    other = make_map(kind, 64, seed=5, **opts).fit_data(X)
    assert not np.array_equal(other.transform(X), f.transform(X))


def test_bad_options():
    with pytest.raises(UsageError):
        make_map("ternary", 8, target="softplus")
    with pytest.raises(UsageError):
        make_map("ternary", 8, sparsity=1.0)
    with pytest.raises(UsageError):
        make_map("ntk", 8, depth=0)
    from rfcli.maps import ArcCosineMap

    with pytest.raises(UsageError):
        ArcCosineMap("arccos0", 8, modified=True)
