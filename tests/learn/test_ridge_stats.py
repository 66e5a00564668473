"""RidgeStats' float32 path (shifted float32 block products added into float64) against
the float64 path, on data far from the origin where unshifted float32 sums would fail."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from rfcli.learn.ridge import RidgeStats


def _data(n=6000, m=24, k=2, seed=0):
    rng = np.random.default_rng(seed)
    # nearly constant features (a smooth kernel) and targets far from 0 (CO2 ppm)
    F = (3.0 + 0.05 * rng.normal(size=(n, m))).astype(np.float32)
    Y = 350.0 + 0.01 * rng.normal(size=(n, k)) + F[:, :k].astype(np.float64)
    return F, Y


def _stats(F, Y, batch, dtype=np.float32):
    s = RidgeStats(F.shape[1], Y.shape[1])
    for i in range(0, len(F), batch):
        s.update(F[i : i + batch].astype(dtype), Y[i : i + batch])
    return s


@pytest.mark.parametrize("batch", [1, 777, 10_000])
def test_float32_statistics_match_float64(batch, monkeypatch):
    monkeypatch.setattr(RidgeStats, "SUB_ROWS32", 1024)  # several block products
    F, Y = _data()
    a, b = _stats(F, Y, batch), _stats(F, Y, 4096, np.float64)
    Ga, Gb = a.centred()[0], b.centred()[0]
    # float32 products of shifted rows: errors relative to the spread (0.05), not the mean (3)
    eps = np.finfo(np.float32).eps
    spread = np.sqrt(len(F)) * eps * 0.05**2 * len(F)
    assert np.abs(Ga - Gb).max() <= 10 * spread
    for alpha in (1e-3, 1.0):
        (Wa, ba), (Wb, bb) = a.solve(alpha), b.solve(alpha)
        np.testing.assert_allclose(Wa, Wb, rtol=1e-4, atol=1e-6 * np.abs(Wb).max())
        # the residual (0.01 noise on targets near 350) survives the cancellation in sse()
        assert a.sse(Wa, ba) == pytest.approx(b.sse(Wb, bb), rel=1e-3)


def test_without_the_shift_float32_would_fail(monkeypatch):
    """The check above can fail: float32 sums of the unshifted products lose the spread."""
    F, Y = _data()
    G32 = (F.T @ F).astype(np.float64)  # float32 products of the raw rows
    n, mF = len(F), F.astype(np.float64).mean(0)
    Gc32 = G32 - n * np.outer(mF, mF)
    Gb = _stats(F, Y, 4096, np.float64).centred()[0]
    spread = np.sqrt(n) * np.finfo(np.float32).eps * 0.05**2 * n
    assert np.abs(Gc32 - Gb).max() > 10 * spread


def test_sums_combine_and_pickle(monkeypatch):
    monkeypatch.setattr(RidgeStats, "SUB_ROWS32", 1000)
    F, Y = _data(3000)
    whole = _stats(F, Y, 500)
    parts = _stats(F[:1700], Y[:1700], 300)
    parts = pickle.loads(pickle.dumps(parts))  # as a Dask partial result travels
    parts += _stats(F[1700:], Y[1700:], 450)
    assert parts.n == whole.n == 3000
    np.testing.assert_allclose(parts.gram(), whole.gram(), rtol=1e-6)
    np.testing.assert_allclose(parts.FtY, whole.FtY, rtol=1e-9)
    np.testing.assert_allclose(parts.sF, whole.sF, rtol=1e-12)
    np.testing.assert_allclose(parts.YtY, whole.YtY, rtol=1e-12)


def test_the_alpha_grid_is_floored_at_the_float32_gram_error(monkeypatch):
    """Smooth Gaussian random features (16,384 rows, m = 128, one float32 block of 8,192
    rows at a time): the float32 Gram matrix's error E (against the float64 statistics of
    the same features) is below the floor's estimate, and the smallest candidate's weights
    are within the first-order perturbation bound 2 ||E|| / alpha (E through G, and as
    much again through Phi'Y) of the exact statistics' solution, a few percent.  Without
    the floor the smallest candidate is 1e-7 trace/m, where the weights are several times
    off."""
    from rfcli.learn import ridge

    rng = np.random.default_rng(0)
    n, m = 16384, 128
    X = rng.uniform(-1, 1, (n, 3))
    F = np.sqrt(2 / m) * np.cos(X @ rng.normal(0, np.sqrt(0.6), (3, m)) + rng.uniform(0, 7, m))
    F = F.astype(np.float32)
    Y = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2])[:, None]
    F64 = F.astype(np.float64)
    Fc = F64 - F64.mean(0)
    Gc, bc = Fc.T @ Fc, Fc.T @ (Y - Y.mean(0))

    def smallest_candidate_error():
        st = _stats(F, Y, 5000)
        Gc32, b32 = st.centred()
        a = ridge.alpha_candidates(st)[0]
        W32 = np.linalg.solve(Gc32 + a * np.eye(m), b32)
        W = np.linalg.solve(Gc + a * np.eye(m), bc)
        return a, np.linalg.norm(W32 - W) / np.linalg.norm(W), np.linalg.norm(Gc32 - Gc, 2)

    a, err, normE = smallest_candidate_error()
    assert a == pytest.approx(ridge.FLOOR_FACTOR * 2.0**-24 * np.sqrt(8192) * np.trace(Gc) / m)
    assert normE <= a / ridge.FLOOR_FACTOR  # the estimate bounds the error
    assert err <= 2 * normE / a
    monkeypatch.setattr(ridge, "FLOOR_FACTOR", 0.0)
    a0, err0, _ = smallest_candidate_error()
    assert a0 < a / 100 and err0 > 1.0


def test_finished_statistics_hold_no_row_buffer_and_take_more_rows(monkeypatch):
    """finish() (the end of a pass over the rows) settles the shifted sums and releases the
    SUB_ROWS32-row float32 buffer (67 MB at m = 2048, which each part waiting to be added
    had kept); rows added afterwards go through a new buffer, and the sums are those of
    all the rows at once."""
    monkeypatch.setattr(RidgeStats, "SUB_ROWS32", 1024)
    F, Y = _data()
    whole = _stats(F, Y, 1500)
    part = _stats(F[:2500], Y[:2500], 1500).finish()
    assert part._buf is None
    for i in range(2500, len(F), 1500):
        part.update(F[i : i + 1500], Y[i : i + 1500])
    part.finish()
    assert part._buf is None and part.n == whole.n
    Ga, Gb = part.centred()[0], whole.centred()[0]
    eps = np.finfo(np.float32).eps
    assert np.abs(Ga - Gb).max() <= 10 * np.sqrt(len(F)) * eps * 0.05**2 * len(F)
