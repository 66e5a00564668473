"""Codes of cosine features from the phase (rfcli/quantize/phase.py): the Cody-Waite
reduction against a float64 reference up to |t| = 1e4, the phase borders, and the codes
against the cosine path and against the exact (float64) codes for every threshold kind."""

import warnings

import numpy as np
import pytest

from rfcli.quantize import make_quantizer
from rfcli.quantize.empirical import EmpiricalQuantizer
from rfcli.quantize.phase import C1, C2, KMAX, phase_borders, phase_distance, reduce_phase

#: the reduction's error bounds (module docstring): 2.0e-7, 3.2e-7 where folded past pi
BOUND, FOLDED_BOUND = 2.0e-7, 3.2e-7


def reference(t: np.ndarray) -> np.ndarray:
    """|t - 2 pi round(t / 2 pi)| in float64: within 1e-12 of exact for |t| <= 1e4."""
    t64 = np.asarray(t, dtype=np.float64)
    return np.abs(t64 - 2 * np.pi * np.rint(t64 / (2 * np.pi)))


def phases(seed: int, n: int, lim: float) -> np.ndarray:
    """Uniform phases in [-lim, lim] and phases within 1e-3 of multiples of pi/2 (where k's
    rounding is closest to a half-integer and cos to 0 or +-1)."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(-lim, lim, n)
    j = rng.integers(-int(lim / (np.pi / 2)), int(lim / (np.pi / 2)), n // 2)
    t[: n // 2] = j * (np.pi / 2) + rng.uniform(-1e-3, 1e-3, n // 2)
    return t.astype(np.float32)


def test_split_of_two_pi_is_exact_where_it_must_be():
    k = np.arange(-KMAX, KMAX + 1, dtype=np.float32)
    np.testing.assert_array_equal((k * C1).astype(np.float64), k.astype(np.float64) * float(C1))
    assert abs(float(C1) + float(C2) - 2 * np.pi) < 2e-11
    mantissa = int(np.float32(C1).view(np.uint32)) & 0x7FFFFF
    assert mantissa & ((1 << 11) - 1) == 0  # 13 significant bits: KMAX's 11 + 13 <= 24


@pytest.mark.parametrize("lim", [10.0, 1e3, 1e4])
def test_reduction_is_accurate_for_large_phases(lim):
    t = phases(1, 400_000, lim).reshape(400, 1000)
    ref = reference(t)
    d = phase_distance(t)
    err = np.abs(d - ref)
    assert err.max() <= FOLDED_BOUND
    assert err[ref < 3.1].max() <= BOUND  # away from pi nothing is folded
    # the plain float32 reduction errs by |t| 6e-8 turns: the bound must separate them
    u = t * np.float32(1 / (2 * np.pi))
    plain = np.abs(u - np.rint(u)) * np.float32(2 * np.pi)
    if lim >= 1e3:
        assert np.abs(plain - ref).max() > 10 * FOLDED_BOUND


def test_elements_beyond_the_range_are_flagged():
    t = np.array([[1.0, 2 * np.pi * (KMAX + 1), -1e6, np.inf, np.nan, 12_000.0]], np.float32)
    out, k = np.empty_like(t), np.empty_like(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        beyond = reduce_phase(t, out, k)
    np.testing.assert_array_equal(beyond, [[False, True, True, True, True, False]])
    assert reduce_phase(t[:, :1], out[:, :1], k[:, :1]) is None


def test_phase_borders():
    b = np.array([-1.5, -1.0, -0.3, 0.0, 0.7, 1.0, 2.0], np.float32)
    a = phase_borders(b)
    assert a[0] == np.inf and a[-1] == -np.inf and a[-2] == -np.inf
    exact = np.arccos(b[1:5].astype(np.float64))
    inner = a[1:5]
    assert np.all(inner.astype(np.float64) >= exact)  # the least float32 at or above
    assert np.all(np.nextafter(inner, np.float32(-np.inf)).astype(np.float64) < exact)
    assert np.all(a[:-1] >= a[1:])  # decreasing (two borders at or above 1 give -inf)


def kinds():
    rng = np.random.default_rng(3)
    z = np.cos(rng.uniform(0, 2 * np.pi, 20_000))
    out = [make_quantizer("lm", b) for b in range(1, 6)]  # (designs of 6-8 bits take seconds)
    out += [make_quantizer("lm2", b) for b in (1, 2, 3)]
    out += [make_quantizer("uniform", b) for b in (2, 5, 8)]  # 31, 255 borders: binary search
    out += [make_quantizer("sign", 1), EmpiricalQuantizer.fit(z, 3)]
    # borders outside [-1, 1] (never passed above, always below) and one at cos(pi - 4e-4),
    # whose phase border is close enough to pi for the fold to matter
    out.append(EmpiricalQuantizer(2, np.array([-0.99999992, 0.25, 1.5]), np.array([-1, 0, 1, 2])))
    out.append(EmpiricalQuantizer(2, np.array([-1.5, -0.5, 0.5]), np.array([-2, -1, 0, 1])))
    return out


def exact_codes(q, t: np.ndarray) -> np.ndarray:
    """#{j: beta_j < cos(t)} with cos in float64 (the float32 borders as they are)."""
    return np.searchsorted(q._borders32.astype(np.float64), np.cos(t.astype(np.float64)))


def distance_to(values: np.ndarray, borders: np.ndarray) -> np.ndarray:
    """The distance of each value to the nearest of the borders."""
    b = np.sort(borders)
    i = np.searchsorted(b, values)
    lo, hi = b[np.clip(i - 1, 0, b.size - 1)], b[np.clip(i, 0, b.size - 1)]
    return np.minimum(np.abs(values - lo), np.abs(values - hi))


def near_a_border(q, t: np.ndarray) -> np.ndarray:
    """Where rounding may decide: the phase within the reduction's error of a phase border,
    or cos(t) within 2 float32 ulps of a border (the cosine path's rounding)."""
    b = q._borders32.astype(np.float64)
    a = np.arccos(np.clip(b, -1, 1))
    near_phase = distance_to(reference(t), a) <= FOLDED_BOUND
    near_value = distance_to(np.cos(t.astype(np.float64)), b) <= 2.4e-7
    return near_phase | near_value


@pytest.mark.parametrize("q", kinds(), ids=lambda q: f"{q.kind}{q.bits}-{q.borders[0]:.3g}")
def test_codes_equal_the_cosine_paths_except_at_borders(q):
    t = phases(7, 300 * 1001, 1e4).reshape(300, 1001)  # sub-blocks of 130 rows, a partial one
    by_cos = q.codes(np.cos(t))
    by_phase = q._phase_coder.codes(t)
    near = near_a_border(q, t)
    assert near[150:].mean() < 1e-3  # the exemption is small (uniform phases) ...
    np.testing.assert_array_equal(by_phase[~near], exact_codes(q, t)[~near])
    np.testing.assert_array_equal(by_phase[~near], by_cos[~near])
    packed, norms = q.encode_cosine_rows(t)
    packed_cos, norms_cos = q.encode_rows(np.cos(t))
    rows = ~near.any(axis=1)  # ... and most rows are byte-identical
    assert rows[150:].mean() > 0.5
    np.testing.assert_array_equal(packed[rows], packed_cos[rows])
    np.testing.assert_array_equal(norms[rows], norms_cos[rows])


@pytest.mark.parametrize("q", kinds()[::3], ids=lambda q: f"{q.kind}{q.bits}")
def test_phases_beyond_the_reduction_take_the_cosine(q):
    t = phases(8, 300 * 64, 100.0).reshape(300, 64)
    t[[5, 5, 5, 5, 5, 5, 200], [0, 1, 2, 3, 4, 5, 63]] = [
        2 * np.pi * (KMAX + 3), -3e5, 1e30, np.inf, -np.inf, np.nan, 2e4
    ]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # cos(inf), as on the cosine path
        by_cos = q.codes(np.cos(t))
        by_phase = q._phase_coder.codes(t)
    np.testing.assert_array_equal(by_phase[5, :6], by_cos[5, :6])
    assert by_phase[200, 63] == by_cos[200, 63]
    t[5, :6] = 0.0
    near = near_a_border(q, t)
    near[5, :6] = True
    np.testing.assert_array_equal(by_phase[~near], by_cos[~near])


def test_the_fold_past_pi_decides_borders_near_pi():
    q = EmpiricalQuantizer(1, np.array([-0.99999992]), np.array([-1.0, 0.5]))
    assert q._phase_coder.fold
    rng = np.random.default_rng(5)
    j = rng.integers(-KMAX // 2, KMAX // 2, 200_000)  # odd multiples of pi, k up to KMAX
    t = ((2 * j + 1) * np.pi + rng.uniform(-2e-3, 2e-3, j.size)).astype(np.float32)[None, :]
    near = near_a_border(q, t)
    np.testing.assert_array_equal(q._phase_coder.codes(t)[~near], exact_codes(q, t)[~near])


def test_stochastic_rounding_keeps_the_cosine():
    q = make_quantizer("stoc", 2, seed=4)
    t = phases(9, 64 * 128, 50.0).reshape(64, 128)
    p1, n1 = q.encode_cosine_rows(t, row0=300)
    p2, n2 = q.encode_rows(np.cos(t), row0=300)
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_array_equal(n1, n2)


@pytest.mark.parametrize(
    "kernel, gamma", [("gaussian", 0.3), ("laplacian", 3.0), ("matern52", 0.3)]
)
def test_the_encoder_writes_the_cosine_paths_rows(kernel, gamma):
    """encode_chunk (phases in, no cosine) against quantizing transform_raw's cosines of
    the same 256-row blocks: the same bytes, but for rows with a code at a border.  The
    Laplacian map's Cauchy weights make phases beyond the reduction's range."""
    from rfcli.encoder import BLOCK_ROWS, Encoder
    from rfcli.maps import Preprocessor, make_map

    rng = np.random.default_rng(11)
    X = rng.normal(size=(2 * BLOCK_ROWS, 5)) * 3
    fmap = make_map(kernel, 512, gamma=gamma, seed=2).fit(5)
    q = make_quantizer("lm", 2)
    enc = Encoder([f"x{i}" for i in range(5)], Preprocessor(), fmap, q)
    got = enc.encode_chunk(X, 0)
    blocks = [X[i : i + BLOCK_ROWS] for i in (0, BLOCK_ROWS)]  # as the encoder's GEMMs
    t = np.concatenate([fmap.transform_phase(b) for b in blocks])
    want_packed, want_norms = q.encode_rows(
        np.concatenate([fmap.transform_raw(b)[0] for b in blocks])
    )
    ok = ~near_a_border(q, t).any(axis=1)
    assert ok.mean() > 0.9
    if kernel == "laplacian":
        assert np.count_nonzero(np.abs(t) > 2 * np.pi * (KMAX + 0.5)) > 5
    np.testing.assert_array_equal(got.packed[ok], want_packed[ok])
    np.testing.assert_array_equal(got.norms[ok], want_norms[ok])


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "matern12"])
def test_the_phase_bound_bounds_the_phases(kernel):
    from rfcli.maps import make_map

    rng = np.random.default_rng(12)
    X = rng.normal(size=(300, 40)) * rng.uniform(0.1, 30, size=(300, 1))
    fmap = make_map(kernel, 256, gamma=0.5, seed=1).fit(40)
    t = fmap.transform_phase(X)
    bound = fmap.phase_bound(X)
    assert np.abs(t).max() <= bound
    assert bound < 50 * np.abs(t).max()  # a bound, not a guess that turns every check off
    assert np.isnan(fmap.phase_bound(np.full((2, 40), np.nan)))
