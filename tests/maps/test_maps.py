"""Each map's kernel estimate against independently written exact kernels.

Tolerances come from the estimator's variance: for each pair, the m products
``m F_i(x) F_i(y)`` are iid with mean k(x, y), so ``(K_hat - K) / sqrt(s^2/m)`` is
approximately standard normal (s^2 their sample variance).
"""

import math

import numpy as np
import pytest
from scipy.special import gamma as gamma_fn
from scipy.special import kv

from rfcli.errors import ConfigError, UsageError
from rfcli.maps import FeatureMap, make_map
from tests.helpers import letter_matrix


def unit_rows(n=10):
    X = letter_matrix(200)[::20][:n]
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def ref_kernel(kind, X, gamma):
    diff = X[:, None, :] - X[None, :, :]
    r2 = (diff**2).sum(-1)
    if kind == "gaussian":
        return np.exp(-gamma * r2)
    if kind == "laplacian":
        return np.exp(-gamma * np.abs(diff).sum(-1))
    if kind.startswith("matern"):
        nu = {"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}[kind]
        ell = 1 / np.sqrt(2 * gamma)
        t = np.sqrt(2 * nu) * np.sqrt(r2) / ell
        with np.errstate(invalid="ignore"):
            k = 2 ** (1 - nu) / gamma_fn(nu) * t**nu * kv(nu, t)
        return np.where(t == 0, 1.0, k)
    norms = np.linalg.norm(X, axis=1)
    cos = np.clip(X @ X.T / np.outer(norms, norms), -1, 1)
    th = np.arccos(cos)
    if kind == "arccos0":
        return 1 - th / np.pi
    return np.outer(norms, norms) * (np.sin(th) + (np.pi - th) * np.cos(th)) / np.pi


KINDS = ["gaussian", "laplacian", "matern12", "matern32", "matern52", "arccos0", "arccos1"]


def sample_rows():
    """Rows with kernel values spread over (0, 1): 12 letter rows, centred and scaled."""
    X = letter_matrix(240)[::20]
    X = (X - X.mean(0)) / X.std(0).mean()
    return X / np.sqrt(X.shape[1]) * 1.5


def estimates(kind, m, seeds, gamma=1.0):
    """Kernel estimates over independent seeds: (len(seeds), n_pairs), and the exact values."""
    X = sample_rows()
    K = ref_kernel(kind, X, gamma)
    iu = np.triu_indices(len(X))
    out = []
    for seed in seeds:
        fmap = make_map(kind, m, gamma=gamma, seed=seed).fit(X.shape[1])
        F = fmap.transform(X).astype(np.float64)
        out.append((F @ F.T)[iu])
    np.testing.assert_allclose(fmap.kernel(X, X), K, rtol=1e-7, atol=1e-10)
    return np.array(out), K[iu]


@pytest.mark.parametrize("kind", KINDS)
def test_kernel_estimate_unbiased_within_variance(kind):
    # 20 independent maps of m=1000: per pair, t = (mean - k) / (sd / sqrt(20)) ~ t_19
    est, K = estimates(kind, 1000, range(20))
    t = (est.mean(0) - K) / (est.std(0, ddof=1) / np.sqrt(len(est)))
    assert np.abs(t).max() < 5.0
    assert 0.25 < np.mean(t**2) < 4.0
    assert np.ptp(K) > 0.3  # the test rows really span a range of kernel values


@pytest.mark.parametrize("kind", KINDS)
def test_kernel_error_falls_like_one_over_sqrt_m(kind):
    small, K = estimates(kind, 250, range(5))
    big, _ = estimates(kind, 16000, range(5))
    rms_small = np.sqrt(np.mean((small - K) ** 2))
    rms_big = np.sqrt(np.mean((big - K) ** 2))
    # expected ratio sqrt(16000/250) = 8; allow for the sampling noise of the RMS itself
    assert rms_big < rms_small / 4


@pytest.mark.parametrize("kind", KINDS)
def test_state_round_trip_and_determinism(kind):
    fmap = make_map(kind, 64, gamma=0.7, seed=5).fit(16)
    config, arrays = fmap.to_state()
    back = FeatureMap.from_state(config, arrays)
    assert back == fmap
    X = unit_rows()
    np.testing.assert_array_equal(back.transform(X), fmap.transform(X))
    again = make_map(kind, 64, gamma=0.7, seed=5).fit(16)
    np.testing.assert_array_equal(again.transform(X), fmap.transform(X))
    other = make_map(kind, 64, gamma=0.7, seed=6).fit(16)
    assert not np.array_equal(other.transform(X), fmap.transform(X))


def test_fourier_values_lie_in_unit_interval_with_arcsine_law():
    fmap = make_map("gaussian", 4000, gamma=2.0, seed=0).fit(16)
    z, scale = fmap.transform_raw(unit_rows())
    assert scale is None and np.abs(z).max() <= 1.0
    # arcsine CDF F(t) = 1/2 + arcsin(t)/pi; KS distance at n=40000 ~ 1.36/sqrt(n) at 5%
    s = np.sort(z.ravel())
    ecdf = np.arange(1, s.size + 1) / s.size
    assert np.abs(ecdf - (0.5 + np.arcsin(s) / np.pi)).max() < 1.63 / np.sqrt(s.size) * 2


def test_gamma_auto_needs_sample_and_median_heuristic():
    X = unit_rows()
    fmap = make_map("gaussian", 16, gamma="auto")
    assert fmap.needs_sample
    fmap.fit(16, X)
    iu = np.triu_indices(len(X), 1)
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)[iu]
    assert fmap.gamma_ == pytest.approx(1 / np.median(d2))


@pytest.mark.parametrize("metric", ["sqeuclidean", "l1"])
def test_sample_distances_are_the_direct_ones(metric):
    """The Gram-matrix distances of the heuristics equal the direct sums of squared
    differences, on rows far from the origin (an offset of 1e4 against a spread of 1: the
    centring keeps the cancellation at the spread's rounding), exactly 0 between equal rows."""
    from rfcli.maps.bandwidth import distances

    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 12)) + 1e4
    X[7] = X[3]
    diff = X[:, None] - X[None]
    direct = (diff**2).sum(-1) if metric == "sqeuclidean" else np.abs(diff).sum(-1)
    D = distances(X, metric)
    assert np.array_equal(D, D.T) and D[3, 7] == 0 and not D.diagonal().any()
    off = ~np.eye(len(X), dtype=bool) & (direct > 0)
    assert np.abs(D[off] / direct[off] - 1).max() < 1e-9


@pytest.mark.parametrize("bad", [0, -1, 2.5])
def test_bad_m(bad):
    with pytest.raises(UsageError):
        make_map("gaussian", bad, gamma=1.0)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "x"])
def test_bad_gamma(bad):
    with pytest.raises(UsageError):
        make_map("gaussian", 8, gamma=bad)


def test_corrupt_state_rejected():
    config, arrays = make_map("gaussian", 8, gamma=1.0).fit(4).to_state()
    with pytest.raises(ConfigError):
        FeatureMap.from_state(config, {"W": arrays["W"][:2], "tau": arrays["tau"]})
    with pytest.raises(ConfigError):
        FeatureMap.from_state({**config, "kind": "bogus"}, arrays)


def test_glf_features_are_the_same_whatever_the_tiles_and_threads():
    """transform_raw computes by row tiles, on the tile threads when a block opens them:
    each row's features are the same bits as the row's alone."""
    from rfcli.maps.gauss_legendre import TRANSFORM_ROWS, GaussLegendreMap
    from rfcli.threads import tile_threads

    rng = np.random.default_rng(0)
    X = rng.standard_normal((2 * TRANSFORM_ROWS + 37, 2))
    fmap = GaussLegendreMap(lengthscale_bounds=[[0.3, 2.0], [0.5, 3.0]], nodes=[12, 10])
    fmap.fit(2, box=(X.min(0), X.max(0)))
    with tile_threads(3):
        tiled_out = fmap.transform_raw(X)[0]
    alone = np.vstack([fmap.transform_raw(X[i : i + 7])[0] for i in range(0, len(X), 7)])
    assert tiled_out.tobytes() == alone.tobytes()
    Z = 2 * np.pi * X @ fmap.H_.T
    np.testing.assert_allclose(tiled_out, np.hstack([np.cos(Z), np.sin(Z)]), atol=1e-12)


def test_glf_features_from_per_input_factors_match_the_phases():
    """A tensor rule's features come from per-input factors, ``e^{2 pi i x'h} = prod_j
    e^{2 pi i x_j h_j}``, multiplied along the nodes' distinct prefixes: the prefixes rebuild
    every node exactly, and the features are within a few units of the last place of cos
    and sin of the phases taken in extended precision (closer than cos of the float64
    phase, which carries the phase's rounding).  One input, or nodes without few distinct
    coordinates per input, take the phases' cos and sin."""
    from rfcli.maps.gauss_legendre import GaussLegendreMap
    from rfcli.maps.glf_phases import tensor_factors

    rng = np.random.default_rng(5)
    X = rng.uniform(-3.0, 3.0, size=(300, 3))
    fmap = GaussLegendreMap(lengthscale_bounds=[[1.0, 2.0], [1.5, 3.0], [2.0, 4.0]], tol=1e-3)
    fmap.fit(3, box=(X.min(0), X.max(0)))
    H = fmap.H_
    factors = tensor_factors(H)
    assert factors is not None and len(factors) == 3
    # rebuild the nodes from the factors: each prefix's coordinates, input by input
    (u0, _, _), (u1, parent1, coord1), (u2, prefix, coord2) = factors
    pairs = np.column_stack([u0[parent1], u1[coord1]])  # the distinct (h_1, h_2) prefixes
    rebuilt = np.column_stack([pairs[prefix], u2[coord2]])
    assert rebuilt.tobytes() == H.tobytes()
    F = fmap.transform_raw(X)[0]
    m = len(H)
    Z = (X.astype(np.longdouble) @ H.astype(np.longdouble).T) * (2 * np.arccos(np.longdouble(-1)))
    err = max(np.max(np.abs(F[:, :m] - np.cos(Z))), np.max(np.abs(F[:, m:] - np.sin(Z))))
    direct = 2 * np.pi * X @ H.T
    err_direct = np.max(np.abs(np.cos(direct) - np.cos(Z)))
    assert err <= 1e-14 and err <= 2 * err_direct
    assert tensor_factors(H[:, :1]) is None  # one input
    assert tensor_factors(rng.standard_normal((400, 3))) is None  # scattered nodes


@pytest.mark.parametrize("sizes", [[12, 30], [12, 30, 8], [40, 6, 8]])
def test_grid_sums_equal_the_nodes_cosine_sums(sizes):
    """The rule design's weighted cosine sums on the grid of the nodes' distinct coordinates
    (glf_phases.grid_sums) equal ``cos(2 pi delta H') @ wp'`` over the nodes themselves, for
    pruned tensor rules (random nodes dropped), several weight vectors, the largest axis
    first or not (it is contracted first), batches of one vector and a partial last batch;
    None for one input, scattered nodes and repeated nodes."""
    from rfcli.maps import glf_phases
    from rfcli.maps.glf_rules import tensor_half

    d = len(sizes)
    rng = np.random.default_rng(7 + sum(sizes))
    lines = []
    for q in sizes:
        x = np.sort(rng.uniform(0.1, 3.0, q // 2))
        w = rng.uniform(0.5, 1.5, q // 2)
        lines.append((np.concatenate([-x[::-1], x]), np.concatenate([w[::-1], w])))
    H, w = tensor_half(lines)
    keep = rng.random(len(w)) < 0.6
    H, w = H[keep], w[keep]
    delta = rng.uniform(-2.0, 2.0, (40, d))
    wp = w * rng.uniform(0.1, 1.0, (5, len(w)))
    direct = np.cos(2 * np.pi * delta @ H.T) @ wp.T
    atol = 1e-13 * np.abs(wp).sum(axis=1).max()
    np.testing.assert_allclose(glf_phases.grid_sums(H, wp, delta), direct, rtol=0, atol=atol)
    rest = math.prod(len(np.unique(H[:, j])) for j in range(d)) // max(
        len(np.unique(H[:, j])) for j in range(d)
    )
    for batch in (1, 2 * len(delta) * rest):  # one vector a batch; batches of 2, 2, 1
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(glf_phases, "GRID_BATCH", batch)
            got = glf_phases.grid_sums(H, wp, delta)
        np.testing.assert_allclose(got, direct, rtol=0, atol=atol)
    assert glf_phases.grid_sums(H[:, :1], wp, delta[:, :1]) is None
    assert glf_phases.grid_sums(rng.standard_normal((400, d)), np.ones((1, 400)), delta) is None
    twice = np.vstack([H, H[:3]])  # three nodes repeated: one cell cannot hold both
    assert glf_phases.grid_sums(twice, np.ones((1, len(twice))), delta) is None
