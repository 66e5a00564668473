"""RandomFeatureSVC.predict_proba: Platt's sigmoids fitted on held-out scores
(rfcli/sklearn/_calibration.py), or an AttributeError that says how to get them."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.datasets import make_classification  # noqa: E402

from rfcli.sklearn import RandomFeatureSVC  # noqa: E402
from rfcli.sklearn._calibration import fit_sigmoid  # noqa: E402


def test_the_sigmoid_fit_recovers_known_parameters():
    """Labels drawn from 1 / (1 + exp(A s + B)): maximum likelihood finds (A, B) within a
    few standard errors (about 0.02 for A, 0.02 for B at 20,000 rows)."""
    rng = np.random.default_rng(0)
    s = rng.normal(0.0, 2.0, 20_000)
    a, b = -1.5, 0.3
    y = rng.random(len(s)) < 1.0 / (1.0 + np.exp(a * s + b))
    got = fit_sigmoid(s, y)
    assert abs(got[0] - a) < 0.1 and abs(got[1] - b) < 0.1, got


@pytest.fixture(scope="module")
def noisy():
    X, y = make_classification(1200, n_features=6, n_informative=4, flip_y=0.15,
                               random_state=0)  # fmt: skip
    return X[:400], y[:400], X[400:], y[400:]


def test_probabilities_are_calibrated_on_new_rows(noisy):
    X, y, Xt, yt = noisy
    clf = RandomFeatureSVC(n_features=512, gamma=0.2, C=1.0, standardize=True,
                           probability=True).fit(X, y)  # fmt: skip
    P = clf.predict_proba(Xt)
    assert P.shape == (len(Xt), 2)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    # expected calibration error over 5 bins of P(class 1): the bins' frequencies have a
    # standard error of about sqrt(0.25 / 160) = 0.04 each; 0.08 is far above the noise of
    # their weighted mean and far below a sigmoid fitted on the training rows' own scores
    p1 = P[:, 1]
    bins = np.minimum((p1 * 5).astype(int), 4)
    ece = sum(np.mean(bins == j) * abs(np.mean(yt[bins == j]) - np.mean(p1[bins == j]))
              for j in range(5) if np.any(bins == j))  # fmt: skip
    assert ece < 0.08, ece
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(Xt[:5])), P[:5])


def test_the_sigmoids_come_from_held_out_scores(noisy):
    """With many features for few noisy rows the SVM fits its training rows: their own
    scores give a much steeper sigmoid than the held-out ones the fit uses."""
    X, y, _, _ = noisy
    clf = RandomFeatureSVC(n_features=1024, gamma=1.0, C=100.0, standardize=True,
                           probability=True).fit(X, y)  # fmt: skip
    in_sample = fit_sigmoid(clf.decision_function(X), y == clf.classes_[1])
    held_out = clf.sigmoids_[0]
    assert abs(held_out[0]) < 0.5 * abs(in_sample[0]), (held_out, in_sample)


def test_multiclass_probabilities_sum_to_one():
    X, y = make_classification(300, n_features=5, n_informative=3, n_redundant=1, n_classes=3,
                               random_state=1)  # fmt: skip
    clf = RandomFeatureSVC(n_features=256, gamma=0.3, C=1.0, probability=True).fit(X, y)
    P = clf.predict_proba(X[:50])
    assert P.shape == (50, 3) and clf.sigmoids_.shape == (3, 2)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.mean(P.argmax(axis=1) == clf.predict(X[:50])) > 0.9


def test_without_probability_it_says_why_not(noisy):
    X, y, _, _ = noisy
    clf = RandomFeatureSVC(n_features=64, gamma=0.2, C=1.0).fit(X, y)
    assert not hasattr(clf, "predict_proba")
    with pytest.raises(AttributeError, match="predict_proba needs probability=True"):
        clf.predict_proba(X)
