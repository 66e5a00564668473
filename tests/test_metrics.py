"""Streaming metric accumulators: the same numbers as a direct computation, and additive
over row slices (the Dask engine sums slices' accumulators)."""

import numpy as np
import pytest

from rfcli.metrics import ClassificationAccumulator, RegressionAccumulator


def direct_macro_f1(t, p, K):
    f1s = []
    for c in range(K):
        tp = sum(1 for a, b in zip(t, p, strict=True) if a == c and b == c)
        fp = sum(1 for a, b in zip(t, p, strict=True) if a != c and b == c)
        fn = sum(1 for a, b in zip(t, p, strict=True) if a == c and b != c)
        if tp + fp + fn:
            f1s.append(2 * tp / (2 * tp + fp + fn))
    return np.mean(f1s)


@pytest.mark.parametrize("seed", range(5))
def test_classification_accumulator(seed):
    rng = np.random.default_rng(seed)
    K, n = 6, 500
    t = rng.integers(-1, K - 1, n)  # -1: a label unseen in training; class K-1 never true
    p = np.where(rng.random(n) < 0.6, np.maximum(t, 0), rng.integers(0, K, n))
    whole = ClassificationAccumulator(K)
    whole.update(t, p)
    parts = [ClassificationAccumulator(K) for _ in range(3)]
    for acc, sl in zip(parts, np.array_split(np.arange(n), 3), strict=True):
        acc.update(t[sl], p[sl])
    summed = parts[0] + parts[1] + parts[2]
    assert whole.result() == summed.result()
    assert whole.result()["accuracy"] == np.mean(t == p)
    assert whole.result()["macro_f1"] == pytest.approx(direct_macro_f1(t, p, K), rel=1e-12)


def test_regression_accumulator_is_additive():
    rng = np.random.default_rng(0)
    y, pred = rng.normal(size=300), rng.normal(size=300)
    whole, a, b = RegressionAccumulator(), RegressionAccumulator(), RegressionAccumulator()
    whole.update(y, pred)
    a.update(y[:100], pred[:100])
    b.update(y[100:], pred[100:])
    r, s = whole.result(), (a + b).result()
    assert r["mse"] == pytest.approx(np.mean((y - pred) ** 2), rel=1e-12)
    for k in ("mse", "rmse", "r2"):
        assert s[k] == pytest.approx(r[k], rel=1e-12)


def test_regression_r2_of_offset_targets_keeps_their_digits():
    # targets far from zero (1e9 + a signal of variance 0.5): sums of y and y^2 lose the
    # variance to rounding (R^2 came out NaN); in chunks, merged, it is the direct value
    rng = np.random.default_rng(1)
    x = rng.uniform(-3, 3, 1000)
    y = 1e9 + np.sin(x)
    pred = y + 0.01 * rng.normal(size=1000)
    direct = 1 - np.mean((y - pred) ** 2) / np.var(y - 1e9)
    acc = RegressionAccumulator()
    for sl in np.array_split(np.arange(1000), 7):
        part = RegressionAccumulator()
        part.update(y[sl], pred[sl])
        acc = acc + part
    assert acc.result()["r2"] == pytest.approx(direct, rel=1e-9)
    one = RegressionAccumulator()
    one.update(y, pred)
    assert one.result()["r2"] == pytest.approx(direct, rel=1e-9)
