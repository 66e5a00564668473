"""The LM bias identity (docs/methods.md, Quantizers; Li & Li, "Quantization Algorithms for
Random Fourier Features", ICML 2021, Section 4): with an LM quantizer Q and Chebyshev
coefficients alpha_k = (2/pi) int_0^pi Q(cos t) cos(k t) dt, the quantized Gaussian-kernel
estimator has mean E[2 Q(z_x) Q(z_y)] = sum_{k odd} alpha_k^2 rho^(k^2), rho = k(x, y)."""

import numpy as np
import pytest

from rfcli.maps import make_map
from rfcli.quantize import make_quantizer


def chebyshev_alpha(q, kmax=401):
    """alpha_k for odd k: Q(cos t) is piecewise constant in t (cell i is
    t in [arccos t_i, arccos t_{i-1}]), so each integral is a sum of sin differences."""
    edges_t = np.arccos(np.concatenate(([1.0], q.borders[::-1], [-1.0])))  # increasing t
    levels_t = q.levels[::-1]  # t small <-> z large
    ks = np.arange(1, kmax + 1, 2)
    a = np.zeros(ks.size)
    for lv, t0, t1 in zip(levels_t, edges_t[:-1], edges_t[1:], strict=True):
        a += lv * (np.sin(ks * t1) - np.sin(ks * t0)) / ks
    return ks, 2 / np.pi * a


def predicted_mean(q, rho):
    ks, alpha = chebyshev_alpha(q)
    return float(np.sum(alpha**2 * rho ** (ks.astype(float) ** 2)))


@pytest.mark.parametrize("b", [1, 2, 3])
def test_lm_mean_matches_chebyshev_identity(b):
    q = make_quantizer("lm", b)
    ks, alpha = chebyshev_alpha(q)
    # alpha_1 = 1 - 2 D1 (docs/methods.md, Quantizers)
    from rfcli.quantize.lloyd_max import arcsine_distortion

    assert alpha[0] == pytest.approx(1 - 2 * arcsine_distortion(q.borders, q.levels), rel=1e-9)
    m, gamma = 400_000, 0.5
    fmap = make_map("gaussian", m, gamma=gamma, seed=11).fit(2)
    dists = np.array([0.3, 0.8, 1.3, 2.0])
    X = np.zeros((1 + dists.size, 2))
    X[1:, 0] = dists
    z, _ = fmap.transform_raw(X)
    Qz = q.levels[q.codes(z)]
    for j, dist in enumerate(dists, start=1):
        rho = np.exp(-gamma * dist**2)
        prods = 2 * Qz[0] * Qz[j]
        mean, se = prods.mean(), prods.std() / np.sqrt(m)
        expected = predicted_mean(q, rho)
        assert abs(mean - expected) < 5 * se, (b, rho, mean, expected, se)
        if b == 1:
            # the identity is sharp enough to tell the biased mean from rho itself
            assert abs(expected - rho) > 20 * se
