"""GLF-GPR exactness: the low-rank log marginal likelihood from one pass of statistics
against the exact GP (dense Cholesky), and its analytic gradient against finite differences."""

import numpy as np
import pytest

from rfcli.learn.gpr import GPStats, glf_spectral, lml_and_grad
from rfcli.maps.gauss_legendre import GaussLegendreMap
from rfcli.maps.glf_rules import stationary_kernel


def exact_lml(X, y, kernel, s2, ell, lam):
    K = s2 * stationary_kernel(kernel, X, X, ell) + lam * np.eye(len(X))
    L = np.linalg.cholesky(K)
    a = np.linalg.solve(L, y)
    return -0.5 * a @ a - np.log(np.diag(L)).sum() - 0.5 * len(y) * np.log(2 * np.pi)


def data(d, n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, d))
    y = np.sin(6 * X[:, 0]) + (X[:, 1] if d > 1 else 0) + 0.1 * rng.normal(size=n)
    return X, (y - y.mean()) / y.std()


def glf_stats(X, y, kernel, bounds, tol, nodes=None):
    fmap = GaussLegendreMap(kernel=kernel, lengthscale_bounds=bounds, tol=tol, nodes=nodes).fit(
        X.shape[1], box=(X.min(0), X.max(0))
    )
    st = GPStats(fmap.n_features)
    for i in range(0, len(X), 150):  # chunked, as from a stream
        V, _ = fmap.transform_raw(X[i : i + 150])
        st.update(V, y[i : i + 150])
    return fmap, st


@pytest.mark.parametrize(
    "kernel,d,bounds",
    [("gaussian", 1, (0.1, 1.0)), ("gaussian", 2, (0.5, 1.0)), ("matern52", 1, (0.2, 1.0))],
)
def test_glf_lml_matches_exact_gp(kernel, d, bounds):
    X, y = data(d)
    # heavy Matern tails need a wide cutoff: a looser probe tolerance keeps the test quick
    fmap, st = glf_stats(X, y, kernel, bounds, tol=1e-6 if kernel == "gaussian" else 1e-5)
    sp = glf_spectral(fmap, ard=False)
    red = st.reduced()
    for ell in (bounds[0], np.sqrt(bounds[0] * bounds[1]), bounds[1]):
        for s2, lam in ((1.0, 0.05), (2.5, 0.3)):
            theta = np.log([s2, ell, lam])
            lml, _ = lml_and_grad(theta, red, sp, need_grad=False)
            ref = exact_lml(X, y, kernel, s2, ell, lam)
            assert lml == pytest.approx(ref, rel=1e-4), (ell, s2, lam)


@pytest.mark.parametrize(
    "kernel,ard", [("gaussian", False), ("gaussian", True), ("matern52", True)]
)
def test_lml_gradient_matches_finite_differences(kernel, ard):
    X, y = data(2, n=300, seed=1)
    # the gradient must match the function whatever the quadrature: a small fixed grid
    fmap, st = glf_stats(X, y, kernel, (0.3, 1.0), tol=1e-2, nodes=[16, 12])
    sp = glf_spectral(fmap, ard=ard)
    red = st.reduced()
    theta = np.log([1.7, *([0.5, 0.7] if ard else [0.6]), 0.08])
    _, g = lml_and_grad(theta, red, sp)
    h = 1e-5
    for i in range(len(theta)):
        e = np.zeros_like(theta)
        e[i] = h
        fp, _ = lml_and_grad(theta + e, red, sp, need_grad=False)
        fm, _ = lml_and_grad(theta - e, red, sp, need_grad=False)
        fd = (fp - fm) / (2 * h)
        assert g[i] == pytest.approx(fd, rel=1e-5, abs=1e-6 * abs(fp)), i


def test_glf_refuses_high_dimension():
    from rfcli.errors import UsageError

    with pytest.raises(UsageError, match="rff"):
        GaussLegendreMap().fit(4)


def test_posterior_matches_exact_gp_prediction():
    from rfcli.learn.gpr import posterior

    X, y = data(1, n=300, seed=2)
    fmap, st = glf_stats(X, y, "gaussian", (0.1, 1.0), tol=1e-6)
    sp = glf_spectral(fmap, ard=False)
    red = st.reduced()
    s2, ell, lam = 1.3, 0.2, 0.05
    mean_w, (D, Xf), _ = posterior(np.log([s2, ell, lam]), red, sp)
    cov_w = np.diag(D) - Xf.T @ Xf
    Xs = np.linspace(0, 1, 25)[:, None]
    Vs, _ = fmap.transform_raw(Xs)
    K = s2 * stationary_kernel("gaussian", X, X, ell) + lam * np.eye(len(X))
    Ks = s2 * stationary_kernel("gaussian", Xs, X, ell)
    mean = Ks @ np.linalg.solve(K, y)
    var = s2 - np.einsum("ij,ji->i", Ks, np.linalg.solve(K, Ks.T))
    np.testing.assert_allclose(Vs @ mean_w, mean, atol=1e-4)
    np.testing.assert_allclose(np.einsum("ij,jk,ik->i", Vs, cov_w, Vs), var, atol=1e-4)


def test_rows_and_sums_give_the_same_gp():
    """Up to m rows a pass keeps the rows and factors their Gram matrix; beyond, it sums
    G = V'V and factors G by pivoted Cholesky: the same LML, gradient and posterior (float64
    round-off), whichever way the pass's parts were added."""
    from rfcli.learn.gpr import posterior

    X, y = data(2, n=120, seed=3)
    y = 50.0 + 3.0 * y  # an offset target: standardized from the pass's own mean and std
    fmap = GaussLegendreMap(lengthscale_bounds=(0.3, 1.0), nodes=[20, 16]).fit(
        2, box=(X.min(0), X.max(0))
    )
    V, _ = fmap.transform_raw(X)
    assert fmap.n_features > len(X)  # rows are kept
    parts = []
    for i in range(0, len(X), 50):
        p = GPStats(fmap.n_features)
        p.update(V[i : i + 50], y[i : i + 50])
        parts.append(p)
    rows = parts[0] + parts[1] + parts[2]
    assert rows.blocks is not None and rows.G is None
    sums = rows._folded()
    assert sums.blocks is None and sums.n == 120
    small = GPStats(40)  # m < n: the second part folds what the first kept
    small.update(V[:30, :40], y[:30])
    small.update(V[30:, :40], y[30:])
    assert small.blocks is None and small.n == 120
    np.testing.assert_allclose(small.G, V[:, :40].T @ V[:, :40], rtol=1e-12)
    sp = glf_spectral(fmap, ard=True)
    theta = np.log([1.3, 0.5, 0.7, 0.05])
    a, b = rows.reduced(), sums.reduced()
    # the same rank rule on two matrices (V V' and V'V) whose eigenvalues run smoothly
    # through the threshold here (1.5e-12 .. 1.3e-13 of the largest at ranks 108-113): the
    # cut may differ by a few directions that carry at most 1e-12 of the signal
    assert abs(a.r - b.r) <= 3
    la, ga = lml_and_grad(theta, a, sp)
    lb, gb = lml_and_grad(theta, b, sp)
    # against the dense n x n likelihood of the same features: the rows' factor is within
    # 1e-6 of it (measured 3.5e-8 with OpenBLAS's Haswell kernels, 1.9e-7 with its
    # SkylakeX ones: the factor's rounding follows the BLAS kernels); G's smallest kept
    # pivots carry V'V's float64 rounding (measured 2.4e-6 here)
    wp = sp.fn(np.exp(theta[1:-1]))[0]
    ys = (y - y.mean()) / y.std()
    K = (V * (np.exp(theta[0]) * wp)) @ V.T + np.exp(theta[-1]) * np.eye(len(y))
    dense = -0.5 * ys @ np.linalg.solve(K, ys) - np.linalg.slogdet(K)[1] / 2
    dense -= len(y) / 2 * np.log(2 * np.pi)
    assert la == pytest.approx(dense, abs=1e-6)
    assert lb == pytest.approx(dense, abs=1e-5)
    np.testing.assert_allclose(ga, gb, rtol=1e-5, atol=1e-6 * np.abs(gb).max())
    # rows are centred exactly: the offset does not touch the likelihood
    moved = GPStats(fmap.n_features)
    moved.update(V, y - 50.0)
    assert lml_and_grad(theta, moved.reduced(), sp)[0] == pytest.approx(la, rel=1e-12)
    # the posterior at the rows against the dense one (measured: mean 1.4e-8 of its largest
    # value from the rows, 6.0e-8 from G; covariance 1.1e-13 and 1.3e-12)
    Kf = K - np.exp(theta[-1]) * np.eye(len(y))
    f = Kf @ np.linalg.solve(K, ys)
    cov = Kf - Kf @ np.linalg.solve(K, Kf)
    for red, tol in ((a, 5e-8), (b, 3e-7)):
        mean, (D, X), _ = posterior(theta, red, sp)
        np.testing.assert_allclose(V @ mean, f, atol=tol * np.abs(f).max())
        C = V @ (np.diag(D) - X.T @ X) @ V.T
        np.testing.assert_allclose(C, cov, atol=1e-10 * np.abs(cov).max())


def test_a_model_with_the_full_covariance_predicts_as_its_factors():
    """Older model files hold the m x m weight covariance (``cov``): such a model gives the
    predictive std that the factored form (cov_diag, cov_factor) gives."""
    from rfcli.learn.gpr import GPRModel, posterior
    from rfcli.learn.targets import Targets

    X, y = data(1, n=200, seed=4)
    fmap, st = glf_stats(X, y, "gaussian", (0.1, 1.0), tol=1e-4)
    mean_w, (D, Xf), lam = posterior(np.log([1.1, 0.3, 0.05]), st.reduced(),
                                     glf_spectral(fmap, ard=False))  # fmt: skip
    args = (Targets("regression"), mean_w[:, None], np.zeros(1), False)
    new = GPRModel(*args, cov_diag=D, cov_factor=Xf, noise=lam)
    old = GPRModel(*args, cov=np.diag(D) - Xf.T @ Xf, noise=lam)
    cfg, arrays = old.to_state()
    assert "cov" in arrays and "cov_factor" not in arrays
    assert set(new.to_state()[1]) >= {"cov_diag", "cov_factor"}
    Vs, _ = fmap.transform_raw(np.linspace(-0.2, 1.2, 30)[:, None])
    np.testing.assert_allclose(new.std(Vs), old.std(Vs), rtol=1e-9)
    assert np.all(new.std(Vs) > np.sqrt(lam) * 0.999)


def test_a_shift_keeps_the_digits_of_offset_targets():
    """Summed statistics (n > m) of targets near 1e8: with the first target subtracted
    first, the standardization equals the exact one to float64 rounding; without, y'y -
    n mean^2 is a difference of numbers near 1e16 * n and the std is off."""
    rng = np.random.default_rng(5)
    V = rng.normal(size=(3000, 20))
    y = 1e8 + V[:, 0] + rng.normal(size=3000)
    exact_sd = float(np.std(y - 1e8))
    c_exact = V.T @ ((y - y.mean()) / exact_sd)
    shifted, plain = GPStats(20, shift=float(y[0])), GPStats(20)
    for st in (shifted, plain):
        for a in range(0, 3000, 1000):
            st.update(V[a : a + 1000], y[a : a + 1000])
        assert st.blocks is None  # summed: n > m
    mu, sd, c, yty = shifted.standardized()
    assert mu == pytest.approx(y.mean(), rel=1e-15)
    assert sd == pytest.approx(exact_sd, rel=1e-10)
    np.testing.assert_allclose(c, c_exact, rtol=1e-8, atol=1e-8 * np.abs(c_exact).max())
    assert yty == pytest.approx(3000.0, rel=1e-10)
    assert abs(plain.standardized()[1] / exact_sd - 1) > 1e-6
