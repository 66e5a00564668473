"""Quantizer designs checked against independent numerical integration (scipy quad on
the arcsine density written out directly, not the closed-form cell integrals)."""

import numpy as np
import pytest
from scipy.integrate import quad

from rfcli.errors import ConfigError, UsageError
from rfcli.quantize import Quantizer, make_quantizer
from rfcli.quantize.lloyd_max import arcsine_distortion


def arcsine_integral(h, a, b):
    """int_a^b h(z) / (pi sqrt(1 - z^2)) dz by adaptive quadrature; cells touching +-1
    use quad's algebraic end-point weight for the (1 -+ z)^(-1/2) singularity."""
    if b >= 1.0:
        return quad(
            lambda z: h(z) / (np.pi * np.sqrt(1 + z)), a, 1.0, weight="alg", wvar=(0, -0.5)
        )[0]
    if a <= -1.0:
        return quad(
            lambda z: h(z) / (np.pi * np.sqrt(1 - z)), -1.0, b, weight="alg", wvar=(-0.5, 0)
        )[0]
    return quad(lambda z: h(z) / (np.pi * np.sqrt(1 - z * z)), a, b)[0]


def cells(q):
    edges = np.concatenate(([-1.0], q.borders, [1.0]))
    return list(zip(edges[:-1], edges[1:], strict=True))


def quad_distortion(q, power=1):
    """E[(z^p - Q(z)^p)^2] under the arcsine law, by quadrature."""
    return sum(
        arcsine_integral(lambda z, mu=mu: (z**power - mu**power) ** 2, a, b)
        for (a, b), mu in zip(cells(q), q.levels, strict=True)
    )


def test_lm_one_bit_closed_form():
    q = make_quantizer("lm", 1)
    np.testing.assert_allclose(q.borders, [0.0], atol=1e-12)
    np.testing.assert_allclose(q.levels, [-2 / np.pi, 2 / np.pi], rtol=1e-10)
    assert arcsine_distortion(q.borders, q.levels) == pytest.approx(0.5 - 4 / np.pi**2, rel=1e-10)


@pytest.mark.parametrize("b", [1, 2, 3, 4, 5, 8])  # 5 and 8: Newton's method (laws.py)
def test_lm_lloyd_conditions_by_quadrature(b):
    q = make_quantizer("lm", b)
    for (a, c), mu in zip(cells(q), q.levels, strict=True):
        mass = arcsine_integral(lambda z: 1.0, a, c)
        mean = arcsine_integral(lambda z: z, a, c) / mass
        assert mu == pytest.approx(mean, abs=1e-8)
    np.testing.assert_allclose(q.borders, (q.levels[:-1] + q.levels[1:]) / 2, atol=1e-9)
    np.testing.assert_allclose(q.levels, -q.levels[::-1], atol=1e-12)  # symmetric
    d1 = quad_distortion(q)
    assert arcsine_distortion(q.borders, q.levels) == pytest.approx(d1, rel=1e-6)


def test_many_cells_meet_the_high_resolution_distortion():
    """At 256 cells the Lloyd-Max distortion approaches the high-resolution value
    ``(int p^(1/3))^3 / (12 N^2)`` (Panter & Dite, Proc. IRE 1951), within the O(1/N)
    relative correction: from above for the arcsine law, to 2% for the ReLU-normal law's
    continuous part (its atom sits inside the first cell, where z = 0 is met exactly)."""
    from scipy.stats import norm

    from rfcli.quantize.laws import ArcsineLaw, ReluNormalLaw, lloyd_max

    n = 256
    _, _, d = lloyd_max(ArcsineLaw(), n)
    hr = quad(lambda z: (np.pi * np.sqrt(1 - z * z)) ** (-1 / 3), -1, 1)[0] ** 3 / (12 * n**2)
    assert hr < d < hr * 1.02
    borders, levels, d = lloyd_max(ReluNormalLaw(), n)
    assert levels[0] == pytest.approx(0.0, abs=1e-4)  # the atom's cell
    hr = quad(lambda z: norm.pdf(z) ** (1 / 3), 0, 40)[0] ** 3 / (12 * n**2)
    assert d == pytest.approx(hr, rel=0.02)
    # centroids of the normal density between the borders (the conditions, by quadrature)
    for a, c, mu in zip(borders[:-1], borders[1:], levels[1:-1], strict=True):
        mass = quad(norm.pdf, a, c)[0]
        assert mu == pytest.approx(quad(lambda z: z * norm.pdf(z), a, c)[0] / mass, abs=1e-9)


@pytest.mark.parametrize("b", [2, 3])
def test_lm_is_a_local_minimum_and_beats_uniform(b):
    q = make_quantizer("lm", b)
    best = quad_distortion(q)
    assert best < quad_distortion(make_quantizer("uniform", b))
    rng = np.random.default_rng(b)
    for _ in range(5):
        levels = np.sort(q.levels + rng.normal(0, 0.01, q.levels.size))
        moved = Quantizer.__new__(type(q))
        Quantizer.__init__(moved, b, (levels[:-1] + levels[1:]) / 2, levels)
        assert quad_distortion(moved) > best


@pytest.mark.parametrize("b", [1, 2, 3, 4, 8])
def test_lm2_conditions_by_quadrature(b):
    q = make_quantizer("lm2", b)
    assert q.borders[len(q.borders) // 2] == 0.0
    np.testing.assert_allclose(q.levels, -q.levels[::-1], atol=1e-12)
    # on each cell, level^2 = E[z^2 | cell] (centroid on s = z^2)
    for (a, c), mu in zip(cells(q), q.levels, strict=True):
        mass = arcsine_integral(lambda z: 1.0, a, c)
        assert mu**2 == pytest.approx(arcsine_integral(lambda z: z * z, a, c) / mass, abs=1e-8)
    # borders in s are midpoints of neighbouring s-levels (positive half)
    pos = q.levels[q.levels > 0] ** 2
    np.testing.assert_allclose(q.borders[q.borders > 0] ** 2, (pos[:-1] + pos[1:]) / 2, atol=1e-9)
    if b >= 2:  # LM2 minimizes D2, LM minimizes D1
        lm = make_quantizer("lm", b)
        assert quad_distortion(q, 2) < quad_distortion(lm, 2)
        assert quad_distortion(lm, 1) < quad_distortion(q, 1)
        assert q.levels[-1] > lm.levels[-1]  # reaches further toward 1


@pytest.mark.parametrize("b", [1, 2, 3])
def test_stoc_unbiased(b):
    q = make_quantizer("stoc", b, seed=3)
    zs = np.linspace(-0.99, 0.99, 23)
    n = 20000
    z = np.tile(zs.astype(np.float32), (n, 1))
    decoded = q.levels[q.codes(z, row0=0)]
    step = 2 / (2**b - 1)
    low = -1 + np.floor((zs + 1) / step) * step
    var = (zs - low) * (low + step - zs)  # Bernoulli rounding variance
    tol = 5 * np.sqrt(var / n) + 1e-6
    assert np.all(np.abs(decoded.mean(axis=0) - zs) <= tol)
    # the draws really are random: empirical variance close to the Bernoulli variance
    np.testing.assert_allclose(decoded.var(axis=0), var, atol=0.05 * var.max() + 1e-6)


def test_stoc_codes_independent_of_chunking():
    q = make_quantizer("stoc", 2, seed=7)
    z = np.random.default_rng(0).uniform(-1, 1, (1000, 33)).astype(np.float32)
    whole = q.codes(z, row0=500)
    parts = np.concatenate([q.codes(z[:137], 500), q.codes(z[137:], 637)])
    np.testing.assert_array_equal(whole, parts)
    assert not np.array_equal(whole, make_quantizer("stoc", 2, seed=8).codes(z, row0=500))


def test_uniform_and_sign():
    u = make_quantizer("uniform", 2)
    np.testing.assert_allclose(u.levels, [-1, -1 / 3, 1 / 3, 1])
    z = np.array([[-0.9, -0.5, 0.1, 0.7]], dtype=np.float32)
    np.testing.assert_array_equal(u.codes(z), [[0, 1, 2, 3]])
    s = make_quantizer("sign", 1)
    np.testing.assert_array_equal(s.levels[s.codes(z)], [[-1, -1, 1, 1]])
    with pytest.raises(UsageError):
        make_quantizer("sign", 2)


@pytest.mark.parametrize("kind", ["lm", "lm2", "stoc", "uniform", "sign", "none"])
def test_config_round_trip(kind):
    q = make_quantizer(kind, {"sign": 1, "none": 16}.get(kind, 3))
    assert Quantizer.from_config(q.to_config()) == q


@pytest.mark.parametrize(
    "cfg",
    [
        {"kind": "lm", "bits": 2, "borders": [0.0], "levels": [-1, 1]},
        {"kind": "lm", "bits": 1, "borders": [0.5], "levels": [1, -1]},
        {"kind": "lm", "bits": 9, "borders": [], "levels": []},
        {"kind": "nope", "bits": 1, "borders": [0.0], "levels": [-1, 1]},
        {"kind": "lm", "bits": "2"},
        ["not", "a", "dict"],
    ],
)
def test_malformed_configs_rejected(cfg):
    with pytest.raises(ConfigError):
        Quantizer.from_config(cfg)


@pytest.mark.parametrize("kind", ["lm", "lm2", "uniform", "stoc"])
@pytest.mark.parametrize("b", [1, 3, 4, 8])
def test_encode_decode_rows(kind, b):
    q = make_quantizer(kind, b)
    z = np.random.default_rng(b).uniform(-1, 1, (50, 37)).astype(np.float32)
    packed, norms = q.encode_rows(z, 0)
    decoded = q.decode_rows(packed, 37)
    np.testing.assert_array_equal(decoded, q.levels.astype(np.float32)[q.codes(z, 0)])
    np.testing.assert_allclose(norms, np.linalg.norm(decoded, axis=1), rtol=1e-5)


def test_none_quantizer_is_lossless_float32():
    q = make_quantizer("none", 32)
    z = np.random.default_rng(0).uniform(-1, 1, (5, 9)).astype(np.float32)
    packed, _ = q.encode_rows(z)
    assert packed.shape == (5, 36)
    np.testing.assert_array_equal(q.decode_rows(packed, 9), z)
    with pytest.raises(UsageError):
        make_quantizer("none", 8)
