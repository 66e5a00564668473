"""Probabilities for an SVM's scores: Platt scaling fitted on held-out decision values.

An SVM's scores are no probabilities, and a sigmoid fitted on the scores of the rows the
SVM was trained on is overconfident (those rows sit beyond the margin more often than new
ones).  So ``RandomFeatureSVC(probability=True)`` fits, after the model itself, the same
model (its chosen C and gamma) on k - 1 folds of the rows and scores the held-out fold, k
times; the sigmoid ``P(class | s) = 1 / (1 + exp(A s + B))`` of each one-vs-rest score is
fitted on these held-out scores by maximum likelihood with Platt's smoothed targets
(Platt, "Probabilistic Outputs for Support Vector Machines and Comparisons to Regularized
Likelihood Methods", Advances in Large Margin Classifiers, MIT Press, 1999; the
optimisation as in Lin, Lin & Weng, "A Note on Platt's Probabilistic Outputs for Support
Vector Machines", Machine Learning 68, 2007).  With more than two classes the classes'
sigmoids are normalized to sum to one (one-vs-rest).  This is what scikit-learn's
``SVC(probability=True)`` does with libsvm's internal 5-fold cross-validation."""

from __future__ import annotations

import numpy as np


def _nll(params: np.ndarray, s: np.ndarray, t: np.ndarray):
    """Negative log-likelihood of targets ``t`` under ``1 / (1 + exp(A s + B))`` and its
    gradient (computed stably in the sign of the exponent)."""
    a, b = params
    z = a * s + b
    # -log p = log(1 + exp(z)), -log(1 - p) = log(1 + exp(-z))
    loss = np.sum(t * np.logaddexp(0.0, z) + (1 - t) * np.logaddexp(0.0, -z))
    p = np.exp(-np.logaddexp(0.0, z))  # 1 / (1 + exp(z))
    g = t - p  # d loss / dz
    return float(loss), np.array([np.dot(g, s), np.sum(g)])


def fit_sigmoid(scores: np.ndarray, positive: np.ndarray) -> tuple[float, float]:
    """Platt's (A, B) for held-out ``scores`` (1-D) and whether each row is of the class."""
    from scipy.optimize import minimize

    s = np.asarray(scores, dtype=np.float64)
    pos = np.asarray(positive, dtype=bool)
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    # Platt's targets: a prior that keeps the fit finite on separable scores
    t = np.where(pos, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    start = np.array([0.0, np.log((n_neg + 1.0) / (n_pos + 1.0))])
    res = minimize(_nll, start, args=(s, t), jac=True, method="L-BFGS-B")
    return float(res.x[0]), float(res.x[1])


def sigmoid_probabilities(scores: np.ndarray, sigmoids: np.ndarray) -> np.ndarray:
    """Class probabilities (n, n_classes) of one-vs-rest ``scores`` (n, k) under the
    sigmoids (k, 2): k = 1 for two classes (the score of the second), else one per class,
    normalized to sum to one."""
    S = np.asarray(scores, dtype=np.float64).reshape(len(scores), -1)
    A, B = sigmoids[:, 0], sigmoids[:, 1]
    P = np.exp(-np.logaddexp(0.0, S * A + B))
    if P.shape[1] == 1:
        return np.column_stack([1.0 - P[:, 0], P[:, 0]])
    total = P.sum(axis=1, keepdims=True)
    return np.where(total > 0, P / np.where(total > 0, total, 1.0), 1.0 / P.shape[1])
