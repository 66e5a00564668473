"""The box quasi-Newton minimizer (rfcli.learn.boxqn): box-constrained quadratics against
their exact solutions (every active set tried), Rosenbrock's function inside and against
a box against SciPy's L-BFGS-B, variables held by the box exactly on it, points where the
objective is not finite, the callback's stop and the iteration limit."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from rfcli.learn.boxqn import minimize_box, projected_gradient


def _qp_exact(H, c, lo, hi):
    """min 0.5 x'Hx + c'x on the box by trying every assignment of free / lower / upper
    (H positive definite: the one assignment that is feasible and meets KKT)."""
    n = len(c)
    for sides in itertools.product((0, 1, 2), repeat=n):  # free, on lo, on hi
        x = np.where(np.array(sides) == 1, lo, np.where(np.array(sides) == 2, hi, 0.0))
        free = np.array(sides) == 0
        if free.any():
            rhs = -(c[free] + H[np.ix_(free, ~free)] @ x[~free])
            x[free] = np.linalg.solve(H[np.ix_(free, free)], rhs)
        g = H @ x + c
        ok = np.all(x >= lo - 1e-12) and np.all(x <= hi + 1e-12)
        ok &= np.all(np.abs(g[free]) < 1e-9)
        ok &= np.all(g[np.array(sides) == 1] >= -1e-12) and np.all(g[np.array(sides) == 2] <= 1e-12)
        if ok:
            return x, np.array(sides)
    raise AssertionError("no KKT point")


@pytest.mark.parametrize("seed", range(6))
def test_a_quadratic_in_a_box_reaches_its_exact_solution(seed):
    rng = np.random.default_rng(seed)
    n = 3 + seed % 3
    A = rng.normal(size=(n, n))
    H = A @ A.T + 0.3 * np.eye(n)  # correlated, condition up to ~100
    c = 2 * rng.normal(size=n)
    lo, hi = -np.ones(n) * 0.5, np.ones(n) * 0.7
    want, sides = _qp_exact(H, c, lo, hi)
    res = minimize_box(lambda x: (0.5 * x @ H @ x + c @ x, H @ x + c), np.zeros(n), lo, hi,
                       ftol=1e-15, pgtol=1e-9)  # fmt: skip
    assert res.success
    # the search stops once f's relative reduction is below 1e-15: f within about 1e-14 of
    # the minimum, so x within sqrt(2e-14 / 0.3) = 2.6e-7 (H's eigenvalues are at least 0.3,
    # at most 14) and the projected gradient within 14 x that
    np.testing.assert_allclose(res.x, want, atol=1e-6)
    # the variables the box holds are exactly on it (callers tell an edge optimum so)
    np.testing.assert_array_equal(res.x[sides == 1], lo[sides == 1])
    np.testing.assert_array_equal(res.x[sides == 2], hi[sides == 2])
    assert np.max(np.abs(projected_gradient(res.x, res.grad, lo, hi))) <= 1e-5


def _rosen(x):
    f = 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2
    g = np.array([-400 * x[0] * (x[1] - x[0] ** 2) - 2 * (1 - x[0]), 200 * (x[1] - x[0] ** 2)])
    return f, g


@pytest.mark.parametrize("box", [(-5.0, 5.0), (-5.0, 0.6)])
def test_rosenbrock_as_scipys_l_bfgs_b(box):
    """Inside the box (optimum (1, 1)) and against it (x <= 0.6: the first variable held at
    0.6), the same minimum; inside it, in about as many evaluations.  (Against the box,
    L-BFGS-B's first step, the whole gradient's length, lands on the corner (0.6, 0.6) and
    it ends in 4 evaluations; this search's first step has unit length: 30.)"""
    lo, hi = np.full(2, box[0]), np.full(2, box[1])
    x0 = np.array([-1.2, 1.0])
    ref = minimize(_rosen, x0, jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi, strict=True)),
                   options={"ftol": 1e-14, "gtol": 1e-9, "maxiter": 1000})  # fmt: skip
    res = minimize_box(_rosen, x0, lo, hi, ftol=1e-14, pgtol=1e-9, max_iter=1000)
    assert res.success
    assert res.fun <= ref.fun + 1e-10
    np.testing.assert_allclose(res.x, ref.x, atol=1e-4)
    if box[1] < 1:
        assert res.x[0] == box[1]
    else:
        assert res.nfev <= 1.5 * ref.nfev


def test_points_where_the_objective_is_not_finite_are_backtracked_from():
    """A likelihood is -inf where K is not positive definite: here the objective is inf for
    x0 > 1, a border the search does not know (the minimum of (x - 3)^2 + y^2 lies beyond
    it). No point returned is one where f is not finite, f falls below the start's, and the
    search ends by that border."""

    def fg(x):
        if x[0] > 1.0:
            return np.inf, np.zeros(2)
        return (x[0] - 3) ** 2 + x[1] ** 2, np.array([2 * (x[0] - 3), 2 * x[1]])

    res = minimize_box(fg, np.array([0.0, 1.0]), np.full(2, -10.0), np.full(2, 10.0))
    assert np.isfinite(res.fun) and res.fun < fg(np.array([0.0, 1.0]))[0]
    assert 0.99 <= res.x[0] <= 1.0


def test_a_curved_valley_against_the_box_is_not_taken_for_the_optimum():
    """A valley bending against a bound of x0: quasi-Newton steps cut back to gains of 1e-11
    (a poor B, not an optimum) restart from steepest descent rather than stop at the
    relative tolerance, and the search reaches the minimum SciPy's L-BFGS-B finds."""
    a, b, c, s = 0.23729055470435706, 9.89534146426937, 0.20486772241205997, 8.58697687275873

    def fg(x):
        u = x[1] - s * x[0] - a * x[0] ** 2
        f = 5 * u**2 + b * x[0] + c * x[1] - 0.05 * x[1] ** 2 + 0.01 * x[1] ** 4
        return f, np.array(
            [10 * u * (-s - 2 * a * x[0]) + b, 10 * u + c - 0.1 * x[1] + 0.04 * x[1] ** 3]
        )

    lo, hi = np.array([-0.30319204, -10.0]), np.array([-0.162053, 10.0])
    x0 = np.array([-0.24750984, 5.21765792])
    ref = minimize(fg, x0, jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi, strict=True)))
    res = minimize_box(fg, x0, lo, hi)
    assert res.success and res.fun <= ref.fun + 1e-6
    assert res.x[0] == lo[0]  # held by the box, exactly on it


def test_bfgs_learns_an_ill_conditioned_quadratic():
    """Inside the box, a 6-D quadratic of condition 1,000: BFGS's curvature takes it to the
    minimum in tens of iterations (steepest descent would need thousands), and a variable
    the box holds ends exactly on its bound."""
    rng = np.random.default_rng(1)
    Q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    H, c = Q @ np.diag(np.logspace(0, 3, 6)) @ Q.T, rng.normal(size=6)
    want = -np.linalg.solve(H, c)
    res = minimize_box(lambda x: (0.5 * x @ H @ x + c @ x, H @ x + c), np.zeros(6), want - 10,
                       want + 10, ftol=1e-15, pgtol=1e-9)  # fmt: skip
    assert res.success and res.nit <= 60
    np.testing.assert_allclose(res.x, want, atol=1e-8)
    res = minimize_box(
        lambda x: ((x[0] - 5) ** 2, np.array([2 * (x[0] - 5)])), [-0.9], [-1], [-0.2]
    )
    assert res.x[0] == -0.2


def test_the_callback_stops_and_the_iteration_limit_ends_unconverged():
    seen = []

    def stop_at_third(f):
        seen.append(f)
        return len(seen) == 3

    lo, hi = np.full(2, -5.0), np.full(2, 5.0)
    res = minimize_box(_rosen, np.array([-1.2, 1.0]), lo, hi, callback=stop_at_third)
    assert res.success and res.nit == 3 and seen[-1] == res.fun
    assert all(b < a for a, b in zip(seen, seen[1:], strict=False))  # each iteration lowers f
    res = minimize_box(_rosen, np.array([-1.2, 1.0]), lo, hi, max_iter=4)
    assert not res.success and res.nit == 4


def test_a_start_held_by_the_box_stays_on_it():
    """A variable on its bound with the gradient pushing outward does not move off it (the
    first step's active set), and a start whose projected gradient is zero is the result."""

    def fg(x):
        return float(np.sum((x - np.array([-1.0, 0.3])) ** 2)), 2 * (x - np.array([-1.0, 0.3]))

    res = minimize_box(fg, np.array([0.0, 0.0]), np.zeros(2), np.ones(2))
    assert res.x[0] == 0.0 and res.x[1] == pytest.approx(0.3, abs=1e-6)
    res = minimize_box(fg, np.array([0.0, 0.3]), np.zeros(2), np.ones(2))
    assert res.nfev == 1 and res.nit == 0 and res.success
