"""Codes of cosine features from the phase in turns (rfcli/quantize/phase.py): the reduction
is exact for any float32 phase, the turn borders are the least float32 at or above
arccos(beta) / 2 pi, and the codes are exactly those of cos(2 pi u), for every threshold
kind, up to |u| = 1e4 turns (|t| = 6.3e4 rad) and beyond; the encoder's codes against the
cosine path's."""

import warnings

import numpy as np
import pytest

from rfcli.quantize import make_quantizer, pack_codes
from rfcli.quantize.empirical import EmpiricalQuantizer
from rfcli.quantize.phase import turn_borders, turn_distance


def reference_distance(u: np.ndarray) -> np.ndarray:
    """|u - rint(u)| in float64 (exact for a float32 u)."""
    u64 = np.asarray(u, dtype=np.float64)
    return np.abs(u64 - np.rint(u64))


def turns(seed: int, n: int, lim: float) -> np.ndarray:
    """Uniform phases in turns in [-lim, lim], and half of them within 1e-4 of multiples of
    1/4 (where cos is 0 or +-1 and rint meets its halfway cases)."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(-lim, lim, n)
    j = rng.integers(-int(4 * lim), int(4 * lim), n // 2)
    u[: n // 2] = j / 4 + rng.uniform(-1e-4, 1e-4, n // 2)
    u[: n // 8] = j[: n // 8] / 4  # exactly on quarter turns
    return u.astype(np.float32)


@pytest.mark.parametrize("lim", [1.0, 1e3, 1e4, 1e7])
def test_the_reduction_is_exact(lim):
    u = turns(1, 200_000, lim).reshape(400, 500)
    np.testing.assert_array_equal(turn_distance(u).astype(np.float64), reference_distance(u))


def test_non_finite_phases_give_nan_and_huge_ones_zero():
    u = np.array([np.inf, -np.inf, np.nan, 3e30, -2.5, 0.5, -0.5, 2.0**23 + 1], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning escapes
        r = turn_distance(u)
    assert np.isnan(r[:3]).all()
    np.testing.assert_array_equal(r[3:], [0.0, 0.5, 0.5, 0.5, 0.0])


def test_turn_borders():
    b = np.array([-1.5, -1.0, -0.3, 0.0, 0.7, 1.0, 2.0], np.float32)
    c = turn_borders(b)
    assert c[0] == np.inf and c[-1] == -np.inf and c[-2] == -np.inf
    exact = np.arccos(b[1:5].astype(np.float64)) / (2 * np.pi)
    inner = c[1:5]
    assert inner[0] == 0.5 and inner[2] == 0.25  # exact where the value is a float32
    assert np.all(inner.astype(np.float64) >= exact)  # the least float32 at or above
    assert np.all(np.nextafter(inner, np.float32(-np.inf)).astype(np.float64) < exact)
    assert np.all(c[:-1] >= c[1:])  # decreasing (two borders at or above 1 give -inf)


def kinds():
    rng = np.random.default_rng(3)
    z = np.cos(rng.uniform(0, 2 * np.pi, 20_000))
    out = [make_quantizer("lm", b) for b in range(1, 6)]  # (designs of 6-8 bits take seconds)
    out += [make_quantizer("lm2", b) for b in (1, 2, 3)]
    out += [make_quantizer("uniform", b) for b in (2, 5, 8)]  # 31, 255 borders: binary search
    out += [make_quantizer("sign", 1), EmpiricalQuantizer.fit(z, 3)]
    # borders outside [-1, 1] (never passed above, always below) and one at cos(pi - 4e-4),
    # a turn border near 1/2
    out.append(EmpiricalQuantizer(2, np.array([-0.99999992, 0.25, 1.5]), np.array([-1, 0, 1, 2])))
    out.append(EmpiricalQuantizer(2, np.array([-1.5, -0.5, 0.5]), np.array([-2, -1, 0, 1])))
    return out


def exact_cos(u: np.ndarray) -> np.ndarray:
    """cos(2 pi u) in float64, reduced exactly first (within 1e-15 for any float32 u)."""
    u64 = np.asarray(u, dtype=np.float64)
    return np.cos(2 * np.pi * (u64 - np.rint(u64)))


def exact_codes(q, u: np.ndarray) -> np.ndarray:
    """#{j: beta_j < cos(2 pi u)} with cos in float64 (the float32 borders as they are)."""
    return np.searchsorted(q._borders32.astype(np.float64), exact_cos(u))


def distance_codes(q, u: np.ndarray) -> np.ndarray:
    """#{j: |u - rint(u)| < arccos(beta_j) / 2 pi} in float64 (borders not rounded)."""
    b = q._borders32.astype(np.float64)
    c64 = np.where(b >= 1, -np.inf, np.where(b < -1, np.inf, np.arccos(np.clip(b, -1, 1))))
    return (reference_distance(u)[..., None] < c64 / (2 * np.pi)).sum(axis=-1)


def distance_to(values: np.ndarray, borders: np.ndarray) -> np.ndarray:
    """The distance of each value to the nearest of the borders."""
    b = np.sort(borders)
    i = np.searchsorted(b, values)
    lo, hi = b[np.clip(i - 1, 0, b.size - 1)], b[np.clip(i, 0, b.size - 1)]
    return np.minimum(np.abs(values - lo), np.abs(values - hi))


def near_a_border(q, u: np.ndarray, tol: float) -> np.ndarray:
    """cos(2 pi u) within ``tol`` of a border."""
    return distance_to(exact_cos(u), q._borders32.astype(np.float64)) <= tol


@pytest.mark.parametrize("q", kinds(), ids=lambda q: f"{q.kind}{q.bits}-{q.borders[0]:.3g}")
def test_the_codes_are_those_of_the_exact_cosine(q):
    """Everywhere the count of float64 turn borders arccos(beta) / 2 pi above the exact
    distance (the float32 borders rounded up decide the same), and, but within 1e-12 of a
    border (the float64 cosine's own rounding; phases exactly on quarter turns are there),
    the codes of cos(2 pi u) in float64.  A border rounded down, or a distance off by a
    rounding, fails."""
    u = turns(7, 300 * 1001, 1e4).reshape(300, 1001)  # sub-blocks of 130 rows, a partial one
    by_phase = q._phase_coder.codes(u)
    np.testing.assert_array_equal(by_phase, distance_codes(q, u))
    near = near_a_border(q, u, 1e-12)
    assert near.mean() < 0.3  # (cos(pi / 2) is 6e-17 in float64: quarter turns are near 0)
    np.testing.assert_array_equal(by_phase[~near], exact_codes(q, u)[~near])


@pytest.mark.parametrize("q", kinds()[::3], ids=lambda q: f"{q.kind}{q.bits}")
def test_the_codes_match_the_float32_cosine_paths_but_at_borders(q):
    """Against NumPy's float32 cos of 2 pi u (rounded to float32 before the cosine): the same
    codes but where cos is within the float32 roundings of a border."""
    u = np.random.default_rng(8).uniform(-3, 3, (300, 512)).astype(np.float32)
    z = np.cos(np.float32(2 * np.pi) * u)
    near = near_a_border(q, u, 2e-6)
    assert near.mean() < 2e-3
    by_cos = q.codes(z)
    np.testing.assert_array_equal(q._phase_coder.codes(u)[~near], by_cos[~near])
    packed, norms = q.encode_turns(u)
    packed_cos, norms_cos = q.encode_rows(z)
    rows = ~near.any(axis=1)
    assert rows.mean() > 0.3
    np.testing.assert_array_equal(packed[rows], packed_cos[rows])
    np.testing.assert_array_equal(norms[rows], norms_cos[rows])


@pytest.mark.parametrize("q", kinds()[::3], ids=lambda q: f"{q.kind}{q.bits}")
def test_non_finite_phases_code_as_the_cosine_path(q):
    u = turns(9, 64 * 32, 10.0).reshape(64, 32)
    u[5, :5] = [np.inf, -np.inf, np.nan, 3e30, -1e9]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # cos(inf), as on the cosine path
        by_cos = q.codes(exact_cos(u))  # NaN for inf, 1 for the huge ones (integers)
    by_phase = q._phase_coder.codes(u)
    np.testing.assert_array_equal(by_phase[5, :5], by_cos[5, :5])


def test_stochastic_rounding_keeps_the_cosine():
    """The encoder gives stochastic rounding the map's cosines (the bytes of quantizing
    transform_raw), and the quantizer takes no phases."""
    from rfcli.encoder import Encoder
    from rfcli.maps import Preprocessor, make_map

    q = make_quantizer("stoc", 2, seed=4)
    X = np.random.default_rng(9).normal(size=(300, 4))
    fmap = make_map("gaussian", 128, gamma=0.5, seed=3).fit(4)
    got = Encoder([f"x{i}" for i in range(4)], Preprocessor(), fmap, q).encode_chunk(X, 300)
    z = np.concatenate([fmap.transform_raw(X[i : i + 256])[0] for i in (0, 256)])
    p2, n2 = q.encode_rows(z, row0=300)
    np.testing.assert_array_equal(got.packed, p2)
    np.testing.assert_array_equal(got.norms, n2)
    with pytest.raises(TypeError):
        q.encode_turns(fmap.transform_turns(X))


def test_the_turns_follow_the_maps_arrays():
    """transform_turns' matrix is made again when the map is fitted again or its arrays are
    replaced, and is not pickled."""
    import pickle

    from rfcli.maps import make_map

    X = np.random.default_rng(10).normal(size=(50, 3))
    fmap = make_map("gaussian", 64, gamma=0.5, seed=1).fit(3)
    u1 = fmap.transform_turns(X)
    fmap.gamma = fmap.gamma_ = 2.0
    fmap.fit(3)
    u2 = fmap.transform_turns(X)
    assert not np.allclose(u1, u2)
    np.testing.assert_allclose(u2, fmap.transform_phase(X) / (2 * np.pi), atol=1e-5)
    fmap.tau_ = np.zeros_like(fmap.tau_)
    np.testing.assert_allclose(
        fmap.transform_turns(X), X.astype(np.float32) @ fmap.W_ / (2 * np.pi), atol=1e-5
    )
    again = pickle.loads(pickle.dumps(fmap))
    assert "_turns" not in again.__dict__
    np.testing.assert_array_equal(again.transform_turns(X), fmap.transform_turns(X))


@pytest.mark.parametrize(
    "kernel, gamma", [("gaussian", 0.3), ("laplacian", 3.0), ("matern52", 0.3)]
)
def test_the_encoder_writes_the_codes_of_its_phases(kernel, gamma):
    """encode_chunk (phases in turns, no cosine): exactly the codes of cos(2 pi u) of the map's
    256-row blocks, and the cosine path's bytes (transform_raw, radians) for all but the
    rows with a phase within the two products' rounding of a border.  The Laplacian map's
    Cauchy weights make phases of thousands of turns."""
    from rfcli.encoder import BLOCK_ROWS, Encoder
    from rfcli.maps import Preprocessor, make_map

    rng = np.random.default_rng(11)
    X = rng.normal(size=(2 * BLOCK_ROWS, 5)) * 3
    fmap = make_map(kernel, 512, gamma=gamma, seed=2).fit(5)
    q = make_quantizer("lm", 2)
    enc = Encoder([f"x{i}" for i in range(5)], Preprocessor(), fmap, q)
    got = enc.encode_chunk(X, 0)
    blocks = [X[i : i + BLOCK_ROWS] for i in (0, BLOCK_ROWS)]  # as the encoder's GEMMs
    u = np.concatenate([fmap.transform_turns(b) for b in blocks])
    t = np.concatenate([fmap.transform_phase(b) for b in blocks])
    # the two products agree to their float32 rounding: |u - t / 2 pi| <= 2 d eps sum|x_k V_k|
    scale = np.abs(X.astype(np.float32)) @ np.abs(fmap.W_) + fmap.tau_
    assert np.all(np.abs(u - t / (2 * np.pi)) <= 12 * 2**-24 * scale / (2 * np.pi) + 1e-7)
    exact = distance_codes(q, u)
    want_packed, want_norms = q.encode_rows(
        np.concatenate([fmap.transform_raw(b)[0] for b in blocks])
    )
    np.testing.assert_array_equal(got.packed, pack_codes(exact.astype(np.uint8), 2))
    if kernel == "laplacian":
        assert np.count_nonzero(np.abs(u) > 2048) > 5
    # the cosine path (radians): the same bytes but where the roundings of t and u can
    # decide a border: |u - t / 2 pi| above, in cos up to 2 pi that times |sin|
    tol = 2 * np.pi * (12 * 2**-24 * scale / (2 * np.pi) + 1e-7) + 2.4e-7
    ok = ~near_a_border(q, u, tol).any(axis=1)
    assert ok.mean() > 0.75  # (the Laplacian map: 86%)
    np.testing.assert_array_equal(got.packed[ok], want_packed[ok])
    np.testing.assert_array_equal(got.norms[ok], want_norms[ok])
