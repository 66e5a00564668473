"""Dense exact GP regression (reference for benchmarks only): the same hyperparameters,
bounds, starts and optimizer as rfcli's GPR, with an n x n Cholesky per step."""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from scipy.optimize import minimize


def sqdist_per_dim(X):
    return (X[:, None, :] - X[None, :, :]) ** 2  # n x n x d


def lml_grad(theta, D2, y, ard):
    n, _, d = D2.shape
    s2, lam = np.exp(theta[0]), np.exp(theta[-1])
    ell = np.exp(theta[1:-1]) if ard else np.full(d, np.exp(theta[1]))
    R = (D2 / ell**2).sum(-1)
    Kf = s2 * np.exp(-R / 2)
    K = Kf + lam * np.eye(n)
    cf = sla.cho_factor(K, lower=True)
    a = sla.cho_solve(cf, y)
    lml = -0.5 * y @ a - np.log(np.diag(cf[0])).sum() - 0.5 * n * np.log(2 * np.pi)
    Kinv = sla.cho_solve(cf, np.eye(n))
    W = np.outer(a, a) - Kinv
    g = [0.5 * np.sum(W * Kf)]
    if ard:
        g += [0.5 * np.sum(W * Kf * D2[:, :, j] / ell[j] ** 2) for j in range(d)]
    else:
        g += [0.5 * np.sum(W * Kf * R)]
    g.append(0.5 * lam * np.trace(W))
    return lml, np.array(g)


def fit(X, y, bounds, starts, ard, max_iter=500):
    ys = (y - y.mean()) / y.std()
    D2 = sqdist_per_dim(X)
    lb = [(np.log(lo), np.log(hi)) for lo, hi in bounds]
    best, iters = None, 0
    for x0 in starts:
        r = minimize(
            lambda t: tuple(-v for v in lml_grad(t, D2, ys, ard)),
            np.log(x0),
            jac=True,
            method="L-BFGS-B",
            bounds=lb,
            options={"maxiter": max_iter},
        )
        iters += r.nit
        if best is None or r.fun < best.fun:
            best = r
    return best.x, -best.fun - len(y) * np.log(y.std()), iters


def predict(X, y, Xs, theta, ard):
    mu, sd = y.mean(), y.std()
    ys = (y - mu) / sd
    d = X.shape[1]
    s2, lam = np.exp(theta[0]), np.exp(theta[-1])
    ell = np.exp(theta[1:-1]) if ard else np.full(d, np.exp(theta[1]))

    def k(A, B):
        return s2 * np.exp(-0.5 * (((A[:, None, :] - B[None, :, :]) / ell) ** 2).sum(-1))

    cf = sla.cho_factor(k(X, X) + lam * np.eye(len(X)), lower=True)
    Ks = k(Xs, X)
    mean = Ks @ sla.cho_solve(cf, ys)
    var = s2 - np.einsum("ij,ji->i", Ks, sla.cho_solve(cf, Ks.T)) + lam
    return mu + sd * mean, sd * np.sqrt(np.maximum(var, 0))
