"""Dense exact GP regression (reference for benchmarks only): the same likelihood,
lengthscale bounds and optimizer as rfcli's GPR, with an n x n Cholesky per step.

Multi-start (:func:`scan_starts`): the profiled LML of the exact GP (signal and noise
maximized per lengthscale, rfcli.learn.gpr_search) on the lengthscale grid rfcli scans,
on all rows up to ``max_rows`` (else a seeded subset of that many); its best distinct points
are the L-BFGS-B starts, to which the benchmark adds GLF's optimum."""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from scipy.optimize import minimize

from rfcli.jobs.gpr_learn import scan_grids as _grids
from rfcli.learn.gpr_search import exact_profile, pick_starts, scan


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


def scan_starts(X, y, ell_bounds, k=3, max_rows=2000, seed=0, signal=(1e-3, 1e3), noise=(1e-6, 10)):
    """L-BFGS-B starts [s2, ell..., lambda] (standardized targets) from an exact profiled-LML
    scan over the grid rfcli uses for ``ell_bounds`` (one row per lengthscale parameter)."""
    ys = (y - y.mean()) / y.std()
    if len(X) > max_rows:
        idx = np.random.default_rng(seed).choice(len(X), max_rows, replace=False)
        X, ys = X[idx], ys[idx]
    bounds = np.asarray(ell_bounds, dtype=float)
    pts = scan(exact_profile(X, ys, "gaussian", signal, noise), _grids(bounds), sweeps=1)
    picked = pick_starts(pts, k, max(5.0, 0.005 * len(ys)))
    return [np.array([np.exp(p["log_s2"]), *p["ell"], np.exp(p["log_lam"])]) for p in picked]


def fit(X, y, bounds, starts, ard, max_iter=500):
    ys = (y - y.mean()) / y.std()
    D2 = sqdist_per_dim(X)
    lb = [(np.log(lo), np.log(hi)) for lo, hi in bounds]
    best, iters = None, 0
    for x0 in starts:
        r = minimize(
            lambda t: tuple(-v for v in lml_grad(t, D2, ys, ard)),
            np.clip(np.log(x0), [b[0] for b in lb], [b[1] for b in lb]),
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
