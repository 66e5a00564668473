"""A quasi-Newton minimizer of a smooth function of a few variables within a box: BFGS with
L-BFGS-B's step (docs/methods.md, Gaussian-process regression, "the search").

The GP's hyperparameter searches (:func:`rfcli.learn.gpr_optimize.fit_hyperparameters`)
have 2-10 variables and an objective whose every evaluation costs milliseconds to seconds,
so a dense BFGS matrix B costs nothing beside it.  Each iteration:

* the *generalized Cauchy point*: the first minimizer of the model ``g'p + p'Bp / 2`` along
  the projected steepest-descent path ``P(x - t g)`` (P clips to the box); the variables it
  put on a bound stay there (Byrd, Lu, Nocedal & Zhu, "A limited memory algorithm for bound
  constrained optimization", SIAM J. Scientific Computing 16, 1995);
* the model's minimizer over the variables still free there, clipped to the box (cut short
  of it instead where clipping would turn the step uphill), as L-BFGS-B's subspace step;
  the Cauchy point itself where that step is nearly at a right angle to the gradient;
* a line search from that point backtracks by safeguarded quadratic interpolation until
  f falls and the Armijo condition ``f(x_a) <= f(x) + C1 g'(x_a - x)`` holds; where the
  full step meets it and the slope along it has not fallen by the curvature factor C2, it
  is lengthened (EXPAND x at a time, clipped to the box, which ends it), so that the step
  meets the curvature that BFGS learns from (Nocedal & Wright, "Numerical Optimization",
  2nd ed., 2006, chapter 3);
* B is updated by BFGS with Powell's damping, which keeps it positive definite (Nocedal &
  Wright, procedure 18.2).  The first step is steepest descent of unit length (the model
  ``||g|| I``), and B starts as ``(y'y / s'y) I`` after it (ibid., eq. 6.20).

It stops as SciPy's L-BFGS-B does: when the relative reduction of f in an iteration is at
most ``ftol``, when the projected gradient's largest entry is at most ``pgtol``, after
``max_iter`` iterations, or where the callback says so; but a quasi-Newton step cut back to
such a reduction restarts from steepest descent instead (a poor B in a curved valley, not
an optimum).  Points where f is not finite are
backtracked from.  Variables that end on a bound equal it exactly (the path and the clip
put them there), so a caller can tell an optimum held by the box.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: the relative reduction of f in an iteration at which the search stops by default (SciPy's
#: L-BFGS-B's default: 1e7 times the float64 machine epsilon)
FTOL = 1e7 * float(np.finfo(np.float64).eps)
#: the Armijo (sufficient decrease) and curvature factors of the line search
C1, C2 = 1e-4, 0.9
#: line-search evaluations per iteration at most; a step still falling steeply is lengthened
#: EXPAND x at a time (within them)
MAX_LS, EXPAND = 20, 4.0
#: a step direction within this cosine of a right angle to the gradient (clipping can turn
#: it so) is replaced by the Cauchy point's
MIN_COSINE = 1e-6
#: a backtrack shortens the step to between these fractions of it
SHRINK_MIN, SHRINK_MAX = 0.1, 0.5
#: Powell's damping keeps s'y at least DAMP x s'Bs
DAMP = 0.2


@dataclass
class BoxResult:
    """The minimizer's outcome: the last accepted point ``x``, ``fun`` and ``grad`` there (one
    evaluation),
    iterations ``nit``, evaluations ``nfev`` and whether it converged (``success``, and why
    in ``message``)."""

    x: np.ndarray
    fun: float
    grad: np.ndarray
    nit: int
    nfev: int
    success: bool
    message: str


def projected_gradient(x: np.ndarray, g: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """``x - P(x - g)``: the gradient, less what points out of the box where x is on it
    (by comparisons, as L-BFGS-B: a gradient below x's rounding is not lost)."""
    return np.where(g < 0, np.maximum(x - hi, g), np.minimum(x - lo, g))


def minimize_box(
    fg: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x0,
    lo,
    hi,
    *,
    max_iter: int = 500,
    ftol: float = FTOL,
    pgtol: float = 1e-5,
    callback: Callable[[float], bool] | None = None,
) -> BoxResult:
    """Minimize ``fg(x) -> (f, gradient)`` over ``lo <= x <= hi`` from ``x0`` (clipped into
    the box); ``callback(f)`` after each iteration, True to stop there (converged)."""
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    x = np.clip(np.asarray(x0, dtype=np.float64), lo, hi)
    n = len(x)
    f, g = _call(fg, x)
    nfev, nit = 1, 0
    B = None  # the BFGS matrix, from the first step on

    def result(success: bool, message: str) -> BoxResult:
        return BoxResult(x, f, g, nit, nfev, success, message)

    if not np.isfinite(f):
        return result(False, "the objective is not finite at the start")
    while True:
        if np.max(np.abs(projected_gradient(x, g, lo, hi)), initial=0.0) <= pgtol:
            return result(True, "projected gradient below pgtol")
        if nit >= max_iter:
            return result(False, "iteration limit reached")
        z = _target(x, g, lo, hi, B)
        if z is None:
            return result(True, "projected gradient zero")
        xn, fn, gn, evals, full = _line_search(fg, x, f, g, z, lo, hi)
        nfev += evals
        if xn is None and B is not None:  # no decrease towards the quasi-Newton point:
            B = None  # steepest descent, and B afresh after it
            z = _target(x, g, lo, hi, B)
            if z is not None:
                xn, fn, gn, evals, full = _line_search(fg, x, f, g, z, lo, hi)
                nfev += evals
        if xn is None:
            return result(False, "the line search found no decrease")
        s, y = xn - x, gn - g
        stalled = B is not None and not full  # a cut-back quasi-Newton step
        B = _bfgs(B, s, y, n)
        nit += 1
        reduction = (f - fn) / max(abs(f), abs(fn), 1.0)
        x, f, g = xn, fn, gn
        if callback is not None and callback(f):
            return result(True, "stopped by the callback")
        if reduction <= ftol:
            if not stalled:
                return result(True, "relative reduction of f below ftol")
            # a step cut back from the quasi-Newton point that gained nothing speaks of B,
            # not of the optimum (a curved valley): steepest descent, and B afresh
            B = None


def _call(fg, x: np.ndarray) -> tuple[float, np.ndarray]:
    f, g = fg(x.copy())
    return float(f), np.asarray(g, dtype=np.float64).copy()


def _target(x, g, lo, hi, B) -> np.ndarray | None:
    """The point the step heads for: the model's subspace minimizer (the generalized Cauchy
    point, then the quasi-Newton step on the variables still free there, clipped to the box;
    without B, the model ``||g|| I``: steepest descent of unit length), or the Cauchy point
    itself where that step is (nearly) at a right angle to the gradient; None where no
    variable can move downhill.  Variables on a bound equal it exactly."""
    if not np.any(projected_gradient(x, g, lo, hi)):
        return None
    if B is None:
        B = np.linalg.norm(g) * np.eye(len(x))
    xc, free = _cauchy_point(x, g, lo, hi, B)
    z = xc.copy()
    if np.any(free):
        r = g + B @ (xc - x)  # the model's gradient at the Cauchy point
        try:
            du = -np.linalg.solve(B[np.ix_(free, free)], r[free])
        except np.linalg.LinAlgError:
            du = np.zeros(int(free.sum()))
        z[free] = np.clip(xc[free] + du, lo[free], hi[free])
        if not g @ (z - x) < 0:  # the projection turned it uphill: the step to the box
            with np.errstate(divide="ignore", invalid="ignore"):  # (du = 0: no limit)
                room = np.where(du > 0, hi[free] - xc[free], lo[free] - xc[free]) / du
            step = min(1.0, float(np.min(room[du != 0], initial=1.0)))
            z[free] = np.clip(xc[free] + step * du, lo[free], hi[free])
    for point in (z, xc):
        d = point - x
        if g @ d < -MIN_COSINE * np.linalg.norm(g) * np.linalg.norm(d):
            return point
    return None


def _cauchy_point(x, g, lo, hi, B):
    """The first local minimizer of the quadratic model ``g'p + p'Bp / 2`` along the projected
    steepest descent path ``P(x - t g)`` (Byrd, Lu, Nocedal & Zhu, "A limited memory
    algorithm for bound constrained optimization", SIAM J. Scientific Computing 16, 1995,
    section 4), the variables the path put on a bound exactly on it, and the variables that
    path has not put on a bound there."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tb = np.where(g < 0, (x - hi) / g, np.where(g > 0, (x - lo) / g, np.inf))
    free = tb > 0
    d = np.where(free, -g, 0.0)
    p = np.zeros_like(x)  # the path's displacement so far
    on = np.zeros(len(x), dtype=bool)  # put on a bound by the path
    t_prev, t_star = 0.0, None
    for t_next in np.unique(tb[tb > 0]):
        fp = g @ d + p @ (B @ d)
        fpp = d @ (B @ d)
        if fp >= 0:
            break
        dt = t_next - t_prev
        if fpp > 0 and -fp / fpp < dt:
            t_star = -fp / fpp
            break
        p = p + dt * d
        hit = free & (tb <= t_next)
        on |= hit
        free &= ~hit
        d[hit] = 0.0
        t_prev = t_next
        if not np.any(free):
            break
    xc = x + p if t_star is None else x + p + t_star * d
    xc[on] = np.where(g[on] < 0, hi[on], lo[on])  # exactly (x + (b - x) need not be b)
    return np.clip(xc, lo, hi), free


def _line_search(fg, x, f, g, z, lo, hi):
    """(x_a, f, gradient, evaluations, whether a >= 1) along ``x + a (z - x)`` from the target
    z (a = 1, within the box), or (None, ..., evaluations, False) where no step gave the
    sufficient decrease.  Longer steps (a > 1) are clipped to the box and end the lengthening there;
    a step must lower f (a rounding-level step that gains nothing fails)."""
    d = z - x
    a, evals, best = 1.0, 0, None
    slope0 = g @ d
    while evals < MAX_LS:
        xa = z if a == 1.0 else np.clip(x + a * d, lo, hi)
        if np.array_equal(xa, x):
            break
        fa, ga = _call(fg, xa)
        evals += 1
        decrease = g @ (xa - x)  # < 0: the first-order decrease
        if np.isfinite(fa) and fa < f and fa <= f + C1 * decrease:
            best = (xa, fa, ga)
            clipped = a > 1.0 and not np.array_equal(xa, x + a * d)
            if clipped or ga @ d >= C2 * slope0 or evals >= MAX_LS:
                break
            a *= EXPAND  # still falling steeply: a longer step
            continue
        if best is not None:  # the lengthened step went too far: the last good one
            break
        t = SHRINK_MIN
        if np.isfinite(fa):
            denom = 2.0 * (fa - f - decrease)
            t = min(max(-decrease / denom, SHRINK_MIN), SHRINK_MAX) if denom > 0 else SHRINK_MAX
        a *= t
    if best is None:
        return None, None, None, evals, False
    return (*best, evals, a >= 1.0)


def _bfgs(B, s: np.ndarray, y: np.ndarray, n: int):
    """The damped BFGS update of B by the step s and gradient change y (B None: the scaled
    identity first)."""
    sy = float(s @ y)
    if B is None:
        yy = float(y @ y)
        B = np.eye(n) * (yy / sy if sy > 0 and yy > 0 else 1.0)
    Bs = B @ s
    sBs = float(s @ Bs)
    if not sBs > 0:
        return B
    if sy < DAMP * sBs:  # Powell's damping: y moved towards Bs
        theta = (1 - DAMP) * sBs / (sBs - sy)
        y = theta * y + (1 - theta) * Bs
        sy = float(s @ y)
    B = B - np.outer(Bs, Bs) / sBs + np.outer(y, y) / sy
    return (B + B.T) / 2
