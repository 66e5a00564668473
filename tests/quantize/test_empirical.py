"""Empirical (sample-fitted) Lloyd-Max, the relu-normal law design, ternary codes and trits."""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import norm

from rfcli.errors import ConfigError, UsageError
from rfcli.quantize import Quantizer, make_quantizer
from rfcli.quantize.empirical import EmpiricalQuantizer, lloyd_max_sorted
from rfcli.quantize.laws import ReluNormalLaw, lloyd_max
from rfcli.random import generator


def test_lloyd_conditions_hold_on_the_sample():
    v = generator(0, 1).gamma(2.0, size=20000)
    borders, levels, mse, iters = lloyd_max_sorted(v, 8)
    codes = np.searchsorted(borders, v, side="left")
    for c in range(8):
        assert levels[c] == pytest.approx(v[codes == c].mean(), rel=1e-8)
    np.testing.assert_allclose(borders, (levels[:-1] + levels[1:]) / 2, rtol=1e-8)
    assert mse == pytest.approx(np.mean((v - levels[codes]) ** 2))
    assert 0 < iters < 10000


def test_empirical_on_arcsine_sample_approaches_the_closed_form_design():
    z = np.cos(generator(0, 2).uniform(0, 2 * np.pi, 400_000))
    for b in (1, 2, 3):
        borders, levels, _, _ = lloyd_max_sorted(z, 2**b)
        lm = make_quantizer("lm", b)
        # sampling error of the centroids ~ 1/sqrt(n_cell); 0.01 is > 5 sigma at 400k
        np.testing.assert_allclose(levels, lm.levels, atol=0.01)
        np.testing.assert_allclose(borders, lm.borders, atol=0.01)


def test_few_distinct_values_are_exact():
    v = np.repeat([0.0, 0.5, 2.0], 10)
    borders, levels, mse, _ = lloyd_max_sorted(v, 4)
    assert mse == 0.0 and np.all(np.diff(borders) > 0)
    q = EmpiricalQuantizer.fit(v, 2)
    packed, _ = q.encode_rows(v.reshape(3, 10).astype(np.float32))
    np.testing.assert_array_equal(q.decode_rows(packed, 10), v.reshape(3, 10))


def test_log_domain_fits_logs_and_maps_back():
    v = np.exp(generator(0, 3).normal(-3, 2, 50_000))
    q = EmpiricalQuantizer.fit(v, 3, domain="log")
    b, lv, _, _ = lloyd_max_sorted(np.log(v), 8)
    np.testing.assert_allclose(q.levels, np.exp(lv), rtol=1e-12)
    np.testing.assert_allclose(q.borders, np.exp(b), rtol=1e-12)
    assert q.info["domain"] == "log" and q.info["sample_values"] == v.size
    with pytest.raises(UsageError):
        EmpiricalQuantizer.fit(-v, 2, domain="log")


def test_config_round_trip_and_validation():
    q = EmpiricalQuantizer.fit(np.arange(100.0), 2, info={"map_fingerprint": "abc"})
    back = Quantizer.from_config(q.to_config())
    assert back == q and back.map_fingerprint == "abc"
    with pytest.raises(ConfigError):
        Quantizer.from_config({**q.to_config(), "domain": "cube"})
    with pytest.raises(ConfigError):
        Quantizer.from_config({**q.to_config(), "levels": [1, 2]})
    with pytest.raises(UsageError):
        make_quantizer("empirical", 2)


def test_relu_normal_law_moments_against_quadrature():
    law = ReluNormalLaw()
    for a, b in ((-1.0, 0.3), (0.0, 0.7), (0.3, 1.5), (1.5, 40.0)):
        atom = 0.5 if a < 0 <= b else 0.0
        assert law.mass(a, b) == pytest.approx(atom + quad(norm.pdf, max(a, 0), b)[0], abs=1e-12)
        assert law.moment1(a, b) == pytest.approx(
            quad(lambda t: t * norm.pdf(t), max(a, 0), b)[0], abs=1e-12
        )
        assert law.moment2(a, b) == pytest.approx(
            quad(lambda t: t * t * norm.pdf(t), max(a, 0), b)[0], abs=1e-12
        )


def test_relu_normal_design_matches_empirical_fit_and_is_lloyd_optimal():
    z = np.maximum(generator(0, 4).standard_normal(1_000_000), 0)
    for b in (1, 2):
        q = make_quantizer("lm", b, law="relu-normalized")
        assert q.law == "relu-normalized" and q.laws == ("relu-normalized",)
        borders, levels, _, _ = lloyd_max_sorted(z, 2**b)
        np.testing.assert_allclose(q.levels, levels, atol=0.01)
        np.testing.assert_allclose(q.borders, borders, atol=0.01)
        # centroid condition in closed form
        law = ReluNormalLaw()
        lo = np.concatenate(([law.lo], q.borders))
        hi = np.concatenate((q.borders, [law.hi]))
        np.testing.assert_allclose(q.levels, law.moment1(lo, hi) / law.mass(lo, hi), rtol=1e-9)
    # the closed-form distortion against the sample's
    _, _, d1 = lloyd_max(ReluNormalLaw(), 2)
    q1 = make_quantizer("lm", 1, law="relu-normalized")
    Z = z.reshape(1000, 1000).astype(np.float32)
    packed, _ = q1.encode_rows(Z)
    assert d1 == pytest.approx(np.mean((Z - q1.decode_rows(packed, 1000)) ** 2), rel=0.01)


def test_lm_config_of_arcsine_unchanged_and_law_round_trips():
    assert "law" not in make_quantizer("lm", 2).to_config()  # store fingerprints unchanged
    q = make_quantizer("lm", 3, law="relu-normalized")
    assert Quantizer.from_config(q.to_config()) == q
    assert Quantizer.from_config(q.to_config()).law == "relu-normalized"


@pytest.mark.parametrize("m", [1, 4, 5, 6, 13, 100])
def test_ternary_and_trits_are_lossless(m):
    z = generator(0, m).integers(-1, 2, size=(7, m)).astype(np.float32)
    for kind, row_bytes in (("ternary", -(-2 * m // 8)), ("trits", -(-m // 5))):
        q = make_quantizer(kind, 2)
        packed, norms = q.encode_rows(z)
        assert packed.shape == (7, row_bytes) and q.row_bytes(m) == row_bytes
        np.testing.assert_array_equal(q.decode_rows(packed, m), z)
        np.testing.assert_allclose(norms, np.linalg.norm(z, axis=1), rtol=1e-6)
        np.testing.assert_array_equal(q.decode_rows(packed, m, scale=0.5), 0.5 * z)
    assert make_quantizer("trits", 2).bits_per_feature == 1.6


def test_trits_byte_layout():
    # features k=0..4 of a group: byte = sum 3^k (s_k + 1)
    z = np.array([[1, -1, 0, 0, 1, -1]], dtype=np.float32)
    packed, _ = make_quantizer("trits", 2).encode_rows(z)
    assert packed[0, 0] == 2 * 1 + 0 * 3 + 1 * 9 + 1 * 27 + 2 * 81
    assert packed[0, 1] == 0 + 1 * 3 + 1 * 9 + 1 * 27 + 1 * 81  # padded with symbol 0
