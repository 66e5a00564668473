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
