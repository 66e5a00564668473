"""Maximizing a GP's log marginal likelihood over its hyperparameters ``theta = (log s2,
log ell..., log lambda)`` by a quasi-Newton search within a box (:mod:`rfcli.learn.boxqn`),
with the signal variance s2 profiled out in closed form (docs/methods.md, Gaussian-process
regression, "Learning the hyperparameters").

Every GP likelihood rfcli learns from (Gauss-Legendre or random Fourier features,
:func:`rfcli.learn.gpr.lml_terms`; the exact GP, :meth:`rfcli.learn.gpr_exact.ExactGP.terms`)
has the covariance ``K = s2 C(ell) + lambda I``.  With ``eta = lambda / s2`` that is
``K = s2 K0`` where ``K0 = C + eta I`` does not depend on s2, so

    lml(s2) = -q0 / (2 s2) - (log|K0| + n log s2) / 2 - n log(2 pi) / 2,  q0 = y'K0^-1 y,

which is largest at ``s2 = q0 / n``.  The search then runs over (log ell..., log eta) alone: one
parameter fewer, and without the ridge along which s2 and a long lengthscale trade off
(ggplot2::diamonds with ``--ard``: 26 and 31 likelihood steps on its two levels against 8
and 12, the same optimum; docs/gpr.md).  A likelihood evaluated once at s2 = 1 gives the
whole profile: the data terms ``a'(dK/dtheta_i)a`` (a = K^-1 y) scale as 1/s2, the trace
terms ``tr(K^-1 dK/dtheta_i)`` do not.  Where ``q0 / n`` leaves the box of s2 and lambda,
s2 stays on the box's edge (:func:`signal_profile`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rfcli.learn.boxqn import FTOL, minimize_box
from rfcli.progress import Iterations, NullProgress, Progress

#: the search stops where boxqn's does (a relative reduction of -lml below FTOL, which the
#: progress estimate counts down to) and, besides, once an iteration gains less than
#: GAIN_NATS of log likelihood right after one that gained less than GAIN_PRIOR x that:
#: converged for any statistical purpose (where the relative tolerance asks 3e-5 nats of a
#: likelihood of 15,000 nats, the last one or two steps of a run: ggplot2::faithfuld's level
#: gained 5.8e-4, then 6e-6 nats, in 2 of its 10 likelihood evaluations; its optimum moved
#: by 1e-5 in the log lengthscale)
GAIN_NATS, GAIN_PRIOR = 1e-3, 100.0

LOG2PI = np.log(2 * np.pi)

#: :func:`escape`: each lengthscale parameter is tried 3, 9 and 27 times shorter and 3 times
#: longer than at the optimum (in log lengthscale: these steps; the starts come from a sample
#: of the rows or a coarse rule, which resolve the fine structure less: the maxima they miss
#: lie on the shorter side), and the search run again from a point better by more than
#: ESCAPE_NATS, at most ESCAPE_ROUNDS times
ESCAPE_STEPS = tuple(float(k * np.log(3.0)) for k in (-1, -2, -3, 1))
ESCAPE_ROUNDS, ESCAPE_NATS = 2, 0.05


@dataclass(frozen=True)
class LMLTerms:
    """The parts of a Gaussian log marginal likelihood at one theta: ``quad = y'K^-1 y``,
    ``logdet = log|K|``, the row count n and, per entry of theta, ``data[i] =
    a'(dK/dtheta_i)a`` and ``trace[i] = tr(K^-1 dK/dtheta_i)`` (a = K^-1 y; None when no
    gradient was asked for)."""

    quad: float
    logdet: float
    n: int
    data: np.ndarray | None = None
    trace: np.ndarray | None = None

    def lml(self, scale: float = 1.0) -> float:
        """The log marginal likelihood of ``scale`` x K (the same eta)."""
        return float(
            -0.5 * self.quad / scale - 0.5 * (self.logdet + self.n * np.log(scale))
            - 0.5 * self.n * LOG2PI
        )  # fmt: skip

    def grad(self, scale: float = 1.0) -> np.ndarray:
        """The gradient in theta of the log marginal likelihood of ``scale`` x K."""
        return 0.5 * self.data / scale - 0.5 * self.trace


#: ``theta -> LMLTerms`` (None where K is not numerically positive definite)
TermsFn = Callable[[np.ndarray], "LMLTerms | None"]


def lml_and_grad_of(terms: LMLTerms | None, theta: np.ndarray, need_grad: bool = True):
    """``(lml, gradient)`` from a likelihood's terms: -inf and zeros where there are none."""
    if terms is None:
        return -np.inf, np.zeros_like(theta)
    return terms.lml(), (terms.grad() if need_grad else None)


def signal_profile(terms: TermsFn, s2_bounds, lam_bounds) -> Callable:
    """The likelihood maximized over s2 (module docstring): ``x = (log ell..., log eta) ->
    (lml, gradient in x, s2)``, from one evaluation of ``terms`` at s2 = 1, lambda = eta.
    s2 is ``q0 / n`` within ``[max(s2_lo, lam_lo / eta), min(s2_hi, lam_hi / eta)]``, so
    that lambda = s2 eta keeps to its bounds too; the gradient is the likelihood's along
    the path s2(x) (s2 fixed, or s2 = lam_lo / eta or lam_hi / eta on those edges)."""
    s2_lo, s2_hi = (float(v) for v in s2_bounds)
    lam_lo, lam_hi = (float(v) for v in lam_bounds)

    def evaluate(x: np.ndarray):
        x = np.asarray(x, dtype=np.float64)
        t = terms(np.concatenate([[0.0], x]))
        if t is None:
            return -np.inf, np.zeros_like(x), 1.0
        eta = float(np.exp(x[-1]))
        s2 = profiled_s2(t, eta, s2_bounds, lam_bounds)
        g = t.grad(s2)  # in (log s2, log ell..., log lambda) at (s2, ell, s2 eta)
        on_noise_edge = (s2 == lam_lo / eta and s2 > s2_lo) or (s2 == lam_hi / eta and s2 < s2_hi)
        g_eta = -g[0] if on_noise_edge else g[-1]  # lambda fixed there: log s2 = c - log eta
        return t.lml(s2), np.concatenate([g[1:-1], [g_eta]]), s2

    return evaluate


def profiled_s2(t: LMLTerms, eta: float, s2_bounds, lam_bounds) -> float:
    """The signal variance that maximizes the likelihood of terms ``t`` (evaluated at s2 = 1,
    lambda = eta): ``q0 / n`` within the bounds of s2 and of lambda = s2 eta."""
    lo = max(float(s2_bounds[0]), float(lam_bounds[0]) / eta)
    hi = min(float(s2_bounds[1]), float(lam_bounds[1]) / eta)
    return min(max(t.quad / t.n, lo), hi)


def fit_hyperparameters(
    terms: TermsFn,
    bounds: list[tuple[float, float]],
    starts: list[np.ndarray],
    max_iter=500,
    progress: Progress | None = None,
    title: str = "GP quasi-Newton",
):
    """The box quasi-Newton search (:func:`rfcli.learn.boxqn.minimize_box`) on the
    likelihood with s2 profiled out (:func:`signal_profile`), over log ell within
    ``bounds[1:-1]`` and log eta within the ratios ``bounds[-1] / bounds[0]`` allow,
    from several ``starts`` (theta's values, not logs: s2, ell..., lambda); the best result
    as theta's logs (``.x``), ``-lml`` (``.fun``), ``.success`` and ``.nit``, and the
    history of starts.  ``terms``: ``theta -> LMLTerms``
    (:func:`rfcli.learn.gpr.glf_objective`, or the exact GP's).  ``progress``: a task per
    start counts its iterations, with the log marginal likelihood (of the standardized
    targets) and the iterations expected."""
    (s2_lo, s2_hi), (lam_lo, lam_hi) = bounds[0], bounds[-1]
    box = [(np.log(lo), np.log(hi)) for lo, hi in bounds[1:-1]]
    box.append((np.log(lam_lo / s2_hi), np.log(lam_hi / s2_lo)))
    lo, hi = np.array([b[0] for b in box]), np.array([b[1] for b in box])
    evaluate = signal_profile(terms, bounds[0], bounds[-1])
    best, history = None, []
    seen: dict[bytes, float] = {}  # the s2 of every point evaluated
    trail: list[float] = []  # a start's -lml at its first point, then after each iteration
    progress = progress or NullProgress()

    def objective(x):
        lml, g, s2 = evaluate(x)
        seen[np.asarray(x, dtype=np.float64).tobytes()] = s2
        if not trail:  # the start's value
            trail.append(-lml)
        return -lml, -g

    def gained(f: float) -> bool:
        """After an iteration (at -lml ``f``): stop once it and the one before gained little
        (GAIN_NATS, GAIN_PRIOR)."""
        trail.append(f)
        return bool(len(trail) > 2 and 0 <= trail[-2] - f < GAIN_NATS
                    and trail[-3] - trail[-2] < GAIN_PRIOR * GAIN_NATS)  # fmt: skip

    for i, start in enumerate(starts):
        th0 = np.log(np.asarray(start, dtype=np.float64))
        x0 = np.concatenate([th0[1:-1], [th0[-1] - th0[0]]])
        x0 = np.clip(x0, lo, hi)

        what = f"{title}, start {i + 1}/{len(starts)}" if len(starts) > 1 else title
        trail.clear()
        with progress.task(what, max_iter, unit="iterations") as task:
            shown = Iterations(task, max_iter, FTOL)
            res = minimize_box(objective, x0, lo, hi, max_iter=max_iter,
                               callback=_stepped(shown, gained))  # fmt: skip
        log_s2 = np.log(seen[res.x.tobytes()])  # (the minimizer returns a point it evaluated)
        res.x = np.concatenate([[log_s2], res.x[:-1], [log_s2 + res.x[-1]]])
        history.append({"start": [float(v) for v in start], "lml": float(-res.fun),
                        "iterations": int(res.nit)})  # fmt: skip
        if best is None or res.fun < best.fun:
            best = res
    return best, history


def _stepped(shown: Iterations, gained: Callable[[float], bool]) -> Callable[[float], bool]:
    """A callback of :func:`rfcli.learn.boxqn.minimize_box`: a progress step at the
    objective (-lml, the LML shown), then whether ``gained`` stops the search."""

    def callback(f: float) -> bool:
        shown.step(f, **{"LML (standardized y)": -f})
        return gained(f)

    return callback


def escape(
    terms: TermsFn,
    value: TermsFn,
    bounds: list[tuple[float, float]],
    res,
    history: list[dict],
    progress: Progress | None = None,
    title: str = "GP quasi-Newton",
):
    """Look past the basin of the optimum :func:`fit_hyperparameters` returned (``res``,
    theta's logs in ``.x``) on the likelihood ``terms``: the likelihood (s2 profiled, the
    noise ratio held; by ``value``, the same terms without the gradient) at the optimum
    with one lengthscale parameter at a time 3, 9 or 27 times shorter or 3 times longer
    (ESCAPE_STEPS, within its bounds), and the search again from the best of those points
    when it beats the optimum by more than ESCAPE_NATS; at most ESCAPE_ROUNDS times.  ARD
    likelihoods have several maxima, and which one the search reaches depends on its start
    and path; an input with few distinct values (a group's level, a dose) has one maximum
    where its lengthscale is long (the groups' effects taken for noise) and one where it is
    shorter than their spacing (modeldata::concrete, 721 rows, inputs cement, water and age
    in days: from the sample's start and from the bounds' centre alike L-BFGS-B stopped at
    lengthscales (2.53, 2.18, 1.12), LML -585.7; water's a factor 3 shorter gave -582.4,
    and L-BFGS-B from there -577.9 at (2.49, 0.76, 0.52), the exact GP's test MSE where the
    first optimum's was 1.065x it: docs/gpr.md).  Returns (the better result, ``history``
    with the new runs' entries)."""
    n_ell = len(bounds) - 2
    lo = np.log([b[0] for b in bounds[1:-1]])
    hi = np.log([b[1] for b in bounds[1:-1]])
    for _ in range(ESCAPE_ROUNDS):
        best_lml, best_theta = -res.fun, None
        x0 = np.concatenate([res.x[1 : 1 + n_ell], [res.x[-1] - res.x[0]]])
        for j in range(n_ell):
            tried = {round(float(x0[j]), 6)}
            for step in ESCAPE_STEPS:
                x = x0.copy()
                x[j] = np.clip(x[j] + step, lo[j], hi[j])
                if round(float(x[j]), 6) in tried:
                    continue
                tried.add(round(float(x[j]), 6))
                t = value(np.concatenate([[0.0], x]))
                if t is None:
                    continue
                s2 = profiled_s2(t, float(np.exp(x[-1])), bounds[0], bounds[-1])
                lml = t.lml(s2)
                if lml > best_lml + ESCAPE_NATS:
                    best_lml = lml
                    best_theta = np.exp(np.concatenate([[np.log(s2)], x[:-1],
                                                        [np.log(s2) + x[-1]]]))  # fmt: skip
        if best_theta is None:
            break
        new, more = fit_hyperparameters(terms, bounds, [best_theta], progress=progress,
                                        title=f"{title} (past the optimum)")  # fmt: skip
        history = history + more
        if new.fun >= res.fun:
            break
        res = new
    return res, history
