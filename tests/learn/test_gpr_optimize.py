"""The signal variance profiled out of the GP likelihood (rfcli.learn.gpr_optimize): the
profile is the likelihood maximized over s2 within its box, its gradient is its own
finite differences on and off the box's edges, and the box quasi-Newton on it reaches the
optimum of the full likelihood (where SciPy's L-BFGS-B on the full likelihood does) -- for
Gauss-Legendre statistics and for the exact GP (dense and band)."""

import numpy as np
import pytest
from scipy.optimize import minimize

from rfcli.learn.gpr import glf_objective, glf_spectral, lml_and_grad
from rfcli.learn.gpr_exact import ExactGP
from rfcli.learn.gpr_optimize import (
    FTOL,
    GAIN_NATS,
    escape,
    fit_hyperparameters,
    signal_profile,
)
from tests.learn.test_gpr_exact import data, glf_stats

S2_BOUNDS, LAM_BOUNDS = (1e-3, 1e3), (1e-6, 10.0)


def _glf(ard):
    X, y = data(2, n=300, seed=1)
    fmap, st = glf_stats(X, y, "gaussian", (0.3, 1.0), tol=1e-2, nodes=[16, 12])
    sp = glf_spectral(fmap, ard=ard)
    red = st.reduced()
    return glf_objective(red, sp), (lambda th, g=True: lml_and_grad(th, red, sp, g))


def _exact(kind):
    rng = np.random.default_rng(3)
    if kind == "band":  # one sorted input, short lengthscales: K is a band matrix
        X = np.sort(rng.uniform(0, 200, size=(400, 1)), axis=0)
        y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=400)
        gp = ExactGP(X, (y - y.mean()) / y.std(), "matern52", ard=False)
        assert gp.banded(0.3)
    else:
        X = rng.uniform(size=(80, 2))
        y = np.sin(4 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=80)
        gp = ExactGP(X, (y - y.mean()) / y.std(), "matern32", ard=kind == "ard")
    return gp.terms, gp.lml_and_grad


CASES = ["glf", "glf-ard", "exact", "exact-ard", "band"]


def _objective(case):
    if case.startswith("glf"):
        return _glf(case == "glf-ard")
    return _exact({"exact": "iso", "exact-ard": "ard", "band": "band"}[case])


def _ells(case):
    return {"glf-ard": [0.5, 0.7], "exact-ard": [0.3, 0.6], "band": [0.3]}.get(case, [0.45])


@pytest.mark.parametrize("case", CASES)
def test_the_profile_is_the_likelihood_at_its_best_signal_variance(case):
    terms, full = _objective(case)
    prof = signal_profile(terms, S2_BOUNDS, LAM_BOUNDS)
    for eta in (0.01, 0.2):
        x = np.log([*_ells(case), eta])
        lml, _, s2 = prof(x)
        theta = np.concatenate([[np.log(s2)], x[:-1], [np.log(s2 * eta)]])
        assert lml == pytest.approx(full(theta, False)[0], rel=1e-10)
        # no s2 on a grid around it does better, and the neighbours do worse
        grid = s2 * np.exp(np.linspace(-1, 1, 41))
        others = [full(np.concatenate([[np.log(c)], x[:-1], [np.log(c * eta)]]), False)[0]
                  for c in grid]  # fmt: skip
        assert max(others) <= lml + 1e-9 * abs(lml)
        assert others[19] < lml and others[21] < lml


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("edge", ["inside", "signal", "noise-low", "noise-high"])
def test_the_profiles_gradient_is_its_finite_differences(case, edge):
    terms, _ = _objective(case)
    eta = 0.05
    s2_free = signal_profile(terms, S2_BOUNDS, LAM_BOUNDS)(np.log([*_ells(case), eta]))[2]
    # boxes whose edges hold s2 there: s2 itself capped, or lambda = s2 eta capped or floored
    s2b, lamb = {
        "inside": (S2_BOUNDS, LAM_BOUNDS),
        "signal": ((1e-3, 0.5 * s2_free), LAM_BOUNDS),
        "noise-low": (S2_BOUNDS, (2.0 * s2_free * eta, 10.0)),
        "noise-high": (S2_BOUNDS, (1e-6, 0.5 * s2_free * eta)),
    }[edge]
    prof = signal_profile(terms, s2b, lamb)
    x = np.log([*_ells(case), eta])
    _, g, s2 = prof(x)
    e = float(np.exp(x[-1]))
    on = {"inside": s2 == s2_free, "signal": s2 == s2b[1], "noise-low": s2 == lamb[0] / e,
          "noise-high": s2 == lamb[1] / e}[edge]  # fmt: skip
    assert on
    h = 1e-5
    fd = [(prof(x + e)[0] - prof(x - e)[0]) / (2 * h) for e in h * np.eye(len(x))]
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["glf-ard", "exact", "band"])
def test_the_fit_reaches_the_full_likelihoods_optimum(case):
    terms, full = _objective(case)
    ells = _ells(case)
    lo, hi = (0.05, 5.0) if case != "band" else (0.1, 1.0)
    bounds = [S2_BOUNDS, *[(lo, hi)] * len(ells), LAM_BOUNDS]
    start = np.array([1.0, *ells, 0.1])
    res, history = fit_hyperparameters(terms, bounds, [start])
    # the profiled fit's theta is a point of the full likelihood with the value it reports
    assert full(res.x, False)[0] == pytest.approx(-res.fun, rel=1e-10)
    ref = minimize(lambda th: tuple(-v for v in full(th)), np.log(start), jac=True,
                   method="L-BFGS-B", bounds=[(np.log(a), np.log(b)) for a, b in bounds],
                   options={"ftol": FTOL, "maxiter": 500})  # fmt: skip
    # both stop within L-BFGS-B's relative tolerance of the same maximum, the profiled fit
    # (GAIN_NATS: it stops once its steps gain less) within that many nats of it
    assert -res.fun >= -ref.fun - max(10 * FTOL * abs(ref.fun), GAIN_NATS)
    # theta within what GAIN_NATS leaves of the maximum: by the likelihood's quadratic model
    # there (its Hessian by differences of the gradient), in the ellipse of 2 GAIN_NATS (the
    # model is not exact); the ridge along which s2 and the lengthscales trade off is long
    # (glf-ard: 0.015 in log s2 for 3e-4 nats)
    h = 1e-5
    grad = lambda th: full(th)[1]  # noqa: E731
    H = np.array([(grad(ref.x + e) - grad(ref.x - e)) / (2 * h) for e in h * np.eye(len(ref.x))])
    dx = res.x - ref.x
    assert -0.5 * dx @ ((H + H.T) / 2) @ dx <= 2 * GAIN_NATS
    # in about as many likelihood evaluations as L-BFGS-B (the same or fewer on these; 2 for
    # paths that rounding bends)
    assert history[0]["iterations"] == res.nit and res.nfev <= ref.nfev + 2


@pytest.mark.parametrize("case", CASES)
def test_the_fit_stops_once_its_steps_gain_less_than_gain_nats(case, monkeypatch):
    """The gain rule (GAIN_NATS after a step that gained less than GAIN_PRIOR x it) ends the
    run at most GAIN_NATS short of where the relative tolerance alone ends it, in no
    more likelihood evaluations, and where that run's last steps gained less than GAIN_NATS
    each, in fewer: those steps are what the rule saves."""
    import rfcli.learn.gpr_optimize as O

    terms, _ = _objective(case)
    lo, hi = (0.05, 5.0) if case != "band" else (0.1, 1.0)
    bounds = [S2_BOUNDS, *[(lo, hi)] * len(_ells(case)), LAM_BOUNDS]
    start = np.array([1.0, *_ells(case), 0.1])
    runs = {}
    for gain in (GAIN_NATS, 0.0):
        values = []

        def counted(theta, values=values):
            t = terms(theta)
            values.append(t.lml() if t is not None else -np.inf)
            return t

        monkeypatch.setattr(O, "GAIN_NATS", gain)
        res, _ = fit_hyperparameters(counted, bounds, [start])
        runs[gain] = (-res.fun, values)
    (lml, used), (lml0, used0) = runs[GAIN_NATS], runs[0.0]
    assert lml0 - GAIN_NATS <= lml <= lml0 + GAIN_NATS
    assert len(used) <= len(used0)
    # the evaluations the rule saved: the plain run's, after the point where the rule stopped
    # (the same path up to there), each within GAIN_NATS of that point
    assert used == used0[: len(used)]
    saved = used0[len(used) :]
    assert all(v <= lml + GAIN_NATS for v in saved)


def _grouped(seed: int, n: int = 160):
    """Rows whose second input takes 9 values with an effect each (a group's level): the
    likelihood has a maximum with that input's lengthscale long (the effects taken for
    noise) and a higher one with it shorter than the levels' spacing."""
    rng = np.random.default_rng(seed)
    levels, effect = np.linspace(-1.6, 1.6, 9), 0.5 * rng.normal(size=9)
    k = rng.integers(0, 9, size=n)
    X = np.column_stack([rng.uniform(-1.7, 1.7, n), levels[k], rng.uniform(-1.7, 1.7, n)])
    y = np.sin(1.5 * X[:, 0]) + 0.5 * X[:, 1] + effect[k] + 0.3 * np.sin(X[:, 2])
    y += 0.3 * rng.normal(size=n)
    return ExactGP(X, (y - y.mean()) / y.std(), "gaussian", ard=True)


@pytest.mark.parametrize("seed", [3, 15])
def test_the_escape_leaves_a_lower_maximum_for_a_higher_one(seed):
    gp = _grouped(seed)
    bounds = [S2_BOUNDS, (0.02, 15.0), (0.02, 15.0), (0.05, 15.0), LAM_BOUNDS]
    start = np.array([1.0, 1.5, 3.0, 3.0, 0.3])  # long lengthscales: the lower maximum's side
    res, history = fit_hyperparameters(gp.terms, bounds, [start])
    assert np.exp(res.x[2]) > 1.5  # the search stays by the long lengthscale
    value = lambda th: gp.terms(th, need_grad=False)  # noqa: E731
    out, more = escape(gp.terms, value, bounds, res, history)
    assert np.exp(out.x[2]) < 0.6  # the levels told apart
    assert -out.fun > -res.fun + 20.0
    assert len(more) == len(history) + 1  # one more search
    # the higher maximum is a maximum: the search from it stays there, and the escape finds
    # nothing past it
    again, _ = fit_hyperparameters(gp.terms, bounds, [np.exp(out.x)])
    assert -again.fun == pytest.approx(-out.fun, abs=1e-6 * abs(out.fun))
    same, hist = escape(gp.terms, value, bounds, again, [])
    assert same is again and hist == []


def test_a_kept_factor_serves_only_its_own_theta_and_spectral():
    """The last factor kept with the statistics (rfcli.learn.gpr._factor) is reused only for
    the same theta and spectral weights: any other gives the values fresh statistics give."""
    from rfcli.learn.gpr import Spectral

    X, y = data(2, n=300, seed=1)
    fmap, st = glf_stats(X, y, "gaussian", (0.3, 1.0), tol=1e-2, nodes=[16, 12])
    sp = glf_spectral(fmap, ard=False)

    def doubled(ell):
        wp, dlog = sp.fn(ell)
        return 2 * wp, dlog

    sp2 = Spectral(sp.n_shape, doubled)
    red = st.reduced()
    a, b = np.log([1.0, 0.5, 0.1]), np.log([2.0, 0.7, 0.05])
    for theta, spec in ((a, sp), (a, sp), (b, sp), (b, sp2), (a, sp2), (a, sp)):
        lml, grad = lml_and_grad(theta, red, spec)
        fresh, fresh_grad = lml_and_grad(theta, st.reduced(), spec)
        assert lml == fresh
        np.testing.assert_array_equal(grad, fresh_grad)


def test_a_factor_kept_from_a_search_serves_its_theta_and_counts_in_the_bytes():
    """keep_factor (a profiled search's Gram matrix at its optimum) gives the LML the
    product would; a Gram matrix that is not positive definite keeps nothing (no error);
    the kept factor counts in Reduced.nbytes."""
    from rfcli.learn.gpr import keep_factor, lml_terms
    from rfcli.learn.tiles import weighted_gram

    X, y = data(2, n=300, seed=1)
    fmap, st = glf_stats(X, y, "gaussian", (0.3, 1.0), tol=1e-2, nodes=[16, 12])
    sp = glf_spectral(fmap, ard=False)
    theta = np.log([1.5, 0.5, 0.1])
    red, fresh = st.reduced(), st.reduced()
    bare = red.nbytes
    keep_factor(theta, red, sp, -np.eye(red.r))  # indefinite: nothing kept
    assert red.nbytes == bare
    keep_factor(theta, red, sp, weighted_gram(red.P, sp.fn(np.exp(theta[1:2]))[0]))
    assert red.nbytes == bare + 8 * red.r**2 + 2 * red.P.shape[1] * 8
    a, b = lml_terms(theta, red, sp), lml_terms(theta, fresh, sp)
    assert a.quad == pytest.approx(b.quad, rel=1e-12)
    assert a.logdet == pytest.approx(b.logdet, rel=1e-12)
    np.testing.assert_allclose(a.trace, b.trace, rtol=1e-10)
