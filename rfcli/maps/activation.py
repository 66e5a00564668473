"""Random features ``sigma(W'x)`` of an activation, and ternary random features (TRF).

* ``activation``: ``w_i ~ N(0, I_d)``, features ``m^{-1/2} sigma(w_i'x)``; their Gram
  matrix estimates the activation's random-feature kernel ``E_w[sigma(w'x) sigma(w'y)]``
  (closed form for relu, abs, cos, sin, erf; Monte Carlo for tanh).  This is the full-
  precision reference TRF is compared with.
* ``ternary`` (TRF, Ali, Liao & Couillet 2022): weights iid 0 with probability eps, else
  ``+-1/sqrt(1-eps)``; activation ``sigma_ter(t) = a if t < s-, b if s- <= t <= s+, c if
  t > s+`` with symbols in {-1, 0, +1}.  The thresholds match the target's generalized
  Gaussian moments ``d1 = E[sigma'(xi)]^2``, ``d2 = E[sigma''(xi)]^2 / 4``,
  ``xi ~ N(0, tau)``, tau the mean squared row norm of the training input (one pass).
  The features are the symbols themselves: 2-bit codes or 5 trits per byte, exactly.

Pattern: Ali et al.'s ``(a, b, c) = (-1, 0, +1)`` has ``E[sigma_ter'] = phi(s-) + phi(s+) > 0``
and so cannot match an even target (cos, abs: ``E[sigma'] = 0``).  For those rfcli uses the
even pattern ``(+1, -1, +1)``: ``E[sigma_ter'] = 2(phi(s+) - phi(s-))``,
``E[sigma_ter''] = 2(s+ phi(s+) - s- phi(s-))/tau``, which can (the symmetric solution
``s- = -s+`` exists whenever ``|E[sigma'']| <= 4 max_s s phi(s)/tau``).

TRF matches the target kernel in a spectral sense for high-dimensional data (up to a
diagonal shift d0), not entry by entry: judge it by accuracy and spectra.

References
----------
Tiomoko Ali, H., Liao, Z. and Couillet, R. "Random matrices in service of ML footprint:
ternary random features with no performance loss", International Conference on Learning
Representations (ICLR), 2022.  Formulas: docs/methods.md, Ternary random features.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rfcli.errors import ConfigError, InputError, ParameterTypeError, UsageError
from rfcli.maps.arccos import arccos_kernel
from rfcli.maps.base import MAPS, FeatureMap, check_n_features, pairwise_sq_dists
from rfcli.random import generator


def _norms(X):
    return np.sqrt((np.asarray(X, dtype=np.float64) ** 2).sum(1))


def _abs_kernel(X, Y):
    nx, ny = _norms(X), _norms(Y)
    outer = np.outer(nx, ny)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.clip(np.where(outer > 0, X @ Y.T / outer, 1.0), -1.0, 1.0)
    return 2.0 / np.pi * outer * (np.sqrt(1 - rho**2) + rho * np.arcsin(rho))


def _trig_kernel(X, Y, sign):
    X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    return 0.5 * (
        np.exp(-pairwise_sq_dists(X, Y) / 2) + sign * np.exp(-pairwise_sq_dists(X, -Y) / 2)
    )


def _erf_kernel(X, Y):
    X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    den = np.sqrt(np.outer(1 + 2 * (X**2).sum(1), 1 + 2 * (Y**2).sum(1)))
    return 2.0 / np.pi * np.arcsin(np.clip(2 * X @ Y.T / den, -1.0, 1.0))


def _erf(t):
    from scipy.special import erf  # scipy.special is imported when needed (CLI start-up)

    return erf(t)


def _phi(t, tau):
    return np.exp(-np.square(t) / (2 * tau)) / np.sqrt(2 * np.pi * tau)


@dataclass(frozen=True)
class Target:
    """An activation with its generalized Gaussian moments ``E[sigma'(xi)]``,
    ``E[sigma''(xi)]`` (xi ~ N(0, tau)) and random-feature kernel (None: Monte Carlo)."""

    name: str
    fn: Callable[[np.ndarray], np.ndarray]
    moment1: Callable[[float], float] | None = None
    moment2: Callable[[float], float] | None = None
    kernel: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    #: positively homogeneous (sigma(c t) = c sigma(t), c > 0: relu, abs): the kernel of
    #: inputs scaled by c is c^2 times the kernel, so thresholds fitted at tau = 1 serve
    #: every tau, scaled by sqrt(tau)
    homogeneous: bool = False

    def moments(self, tau: float) -> tuple[float, float]:
        """``(E[sigma'], E[sigma''])``: closed form, else Stein's lemma with adaptive
        quadrature ``E[xi sigma]/tau``, ``E[(xi^2 - tau) sigma]/tau^2``."""
        if self.moment1 is not None and self.moment2 is not None:
            return float(self.moment1(tau)), float(self.moment2(tau))

        from scipy import integrate  # imported when needed: keeps CLI start-up short

        def expect(g):
            f = lambda t: g(t) * float(self.fn(np.array(t))) * _phi(t, tau)  # noqa: E731
            return integrate.quad(f, -np.inf, np.inf, epsabs=1e-13, epsrel=1e-12, limit=200)[0]

        return expect(lambda t: t) / tau, expect(lambda t: t * t - tau) / tau**2


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            "relu",
            lambda t: np.maximum(t, 0),
            lambda tau: 0.5,
            lambda tau: 1 / np.sqrt(2 * np.pi * tau),
            lambda X, Y: arccos_kernel(X, Y, 1) / 2,
            homogeneous=True,
        ),
        Target(
            "abs",
            np.abs,
            lambda tau: 0.0,
            lambda tau: 2 / np.sqrt(2 * np.pi * tau),
            _abs_kernel,
            homogeneous=True,
        ),
        Target(
            "cos",
            np.cos,
            lambda tau: 0.0,
            lambda tau: -np.exp(-tau / 2),
            lambda X, Y: _trig_kernel(X, Y, 1.0),
        ),
        Target(
            "sin",
            np.sin,
            lambda tau: np.exp(-tau / 2),
            lambda tau: 0.0,
            lambda X, Y: _trig_kernel(X, Y, -1.0),
        ),
        Target(
            "erf",
            _erf,
            lambda tau: 2 / np.sqrt(np.pi) / np.sqrt(1 + 2 * tau),
            lambda tau: 0.0,
            _erf_kernel,
        ),
        Target("tanh", np.tanh),
    )
}

PATTERNS = {"odd": (-1.0, 0.0, 1.0), "even": (1.0, -1.0, 1.0)}


def ternary_moments(s_minus: float, s_plus: float, tau: float, pattern: str):
    """``(E[sigma_ter'], E[sigma_ter''])`` for xi ~ N(0, tau): jumps ``b - a`` at s- and
    ``c - b`` at s+ give ``sum jump phi(s)`` and ``sum jump s phi(s) / tau``."""
    a, b, c = PATTERNS[pattern]
    j1, j2 = b - a, c - b
    p1, p2 = _phi(s_minus, tau), _phi(s_plus, tau)
    return j1 * p1 + j2 * p2, (j1 * s_minus * p1 + j2 * s_plus * p2) / tau


@dataclass(frozen=True)
class Thresholds:
    s_minus: float
    s_plus: float
    pattern: str
    residual: float  # max |moment difference| (of E[sigma'] and E[sigma'']), at tau = 1 units
    search_range: float  # of the thresholds in units of sqrt(tau)

    def scaled(self, c: float) -> Thresholds:
        """The thresholds times ``c`` (a homogeneous target's at tau = c^2)."""
        return Thresholds(self.s_minus * c, self.s_plus * c, self.pattern, self.residual,
                          self.search_range)  # fmt: skip


#: below this, a target's moments in tau = 1 units are numerically zero: its kernel is
#: degenerate at that tau (cos, sin at a large tau: exp(-tau/2) underflows)
_DEGENERATE = 1e-9


def solve_thresholds(target: str, tau: float, tol: float = 1e-10) -> Thresholds:
    """Thresholds ``s- < s+`` whose ternary moments match the target's at ``tau``
    (docs/methods.md).  Solved for ``u = s / sqrt(tau)``, in which the moments are
    ``sqrt(tau) E[sigma']`` and ``tau E[sigma'']`` of a standard normal, so the same search
    serves every tau: least squares from a grid of starts in ``[-R, R]^2``, R = 1, 2, 4,
    ... until the residual is below ``tol``; InputError when no R up to 64 gets there, or
    when the target's moments vanish at this tau (its kernel is then degenerate there)."""
    from scipy import optimize

    e1, e2 = TARGETS[target].moments(tau)
    r = float(np.sqrt(tau))
    goal = np.array([abs(e1) * r, abs(e2) * tau])  # the moments in units of sqrt(tau)
    pattern = "odd" if goal[0] > 1e-12 else "even"
    if goal.max() < _DEGENERATE:
        raise InputError(_no_thresholds(target, tau, "its moments vanish there"))

    def resid(u):
        m1, m2 = ternary_moments(u[0], u[1], 1.0, pattern)
        return np.array([abs(m1), abs(m2)]) - goal

    sym = _symmetric(goal, pattern)  # odd targets (sin, erf, tanh) and even ones (cos, abs)
    if sym is not None:
        res = float(np.max(np.abs(resid([-sym, sym]))))
        if res < tol:
            return Thresholds(-sym * r, sym * r, pattern, res, 1.0)
    best = None
    R = 1.0
    while R <= 64:
        for a in np.linspace(-R, R, 7):
            for b in np.linspace(-R, R, 7):
                if b <= a:
                    continue
                sol = optimize.least_squares(
                    resid, [a, b], bounds=([-R, -R], [R, R]), xtol=1e-15, ftol=1e-15, gtol=1e-15
                )
                res = float(np.max(np.abs(sol.fun)))
                u = np.sort(sol.x)
                if u[1] > u[0] and (best is None or res < best[0]):
                    best = (res, u)
                if best is not None and best[0] < tol:
                    u = best[1]
                    return Thresholds(float(u[0] * r), float(u[1] * r), pattern, best[0], R)
        R *= 2
    res = best[0] if best else float("inf")
    raise InputError(_no_thresholds(target, tau, f"best residual {res:.2g}"))


def _symmetric(goal: np.ndarray, pattern: str) -> float | None:
    """``u > 0`` such that the thresholds ``-u, u`` match ``goal`` (in tau = 1 units), when
    one moment is zero: odd pattern with E[sigma''] = 0: ``2 phi(u) = goal[0]``; even
    pattern with E[sigma'] = 0: ``4 u phi(u) = goal[1]``, the root in (0, 1]."""
    from scipy import optimize

    phi0 = 1 / np.sqrt(2 * np.pi)
    if pattern == "odd" and goal[1] == 0 and 0 < goal[0] < 2 * phi0:
        return float(np.sqrt(-2 * np.log(goal[0] / (2 * phi0))))
    if pattern == "even" and goal[0] == 0 and 0 < goal[1] < 4 * phi0 * np.exp(-0.5):
        f = lambda u: 4 * u * phi0 * np.exp(-u * u / 2) - goal[1]  # noqa: E731
        return float(optimize.brentq(f, 0.0, 1.0, xtol=1e-16, rtol=1e-15))
    return None


def _no_thresholds(target: str, tau: float, why: str) -> str:
    return (
        f"ternary features: no thresholds reproduce the {target} moments at tau = {tau:.4g} "
        f"(the mean squared row norm of the input; {why}): the {target} kernel needs rows of "
        "norm about 1, add normalize_rows or standardize"
    )


def fit_thresholds(target: str, tau: float) -> Thresholds:
    """The thresholds of the map at ``tau``: for a homogeneous target (relu, abs) those of
    ``tau = 1`` times ``sqrt(tau)`` (the features of rows scaled to a unit mean squared
    norm, whose kernel is the target's up to the factor tau), which exist whatever the
    input's scale; for the others, those solved at ``tau``."""
    if TARGETS[target].homogeneous:
        return solve_thresholds(target, 1.0).scaled(float(np.sqrt(tau)))
    return solve_thresholds(target, tau)


def _check_target(target: str) -> str:
    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r} (known: {', '.join(TARGETS)})")
    return target


def target_kernel(target: str, X, Y, seed: int = 0, m: int = 1 << 16) -> np.ndarray:
    """``E_w[sigma(w'x) sigma(w'y)]``, w ~ N(0, I): closed form, else Monte Carlo with
    ``m`` Gaussian draws (standard error about ``1/sqrt(m)`` of the kernel's scale)."""
    t = TARGETS[_check_target(target)]
    if t.kernel is not None:
        return t.kernel(X, Y)
    X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    K = np.zeros((len(X), len(Y)))
    rng = generator(seed, 99)
    step = 4096
    for _ in range(0, m, step):
        W = rng.standard_normal((X.shape[1], step))
        K += t.fn(X @ W) @ t.fn(Y @ W).T
    return K / m


@MAPS.register("activation", "ternary")
class RandomActivationMap(FeatureMap):
    """``sigma(W'x)`` features: Gaussian W and the target activation (``activation``), or
    ternary W and thresholds (``ternary``); see the module docstring."""

    input_dtype = np.float32

    array_names = ("W_",)

    def __init__(
        self,
        kind: str = "ternary",
        n_features: int = 1024,
        seed: int = 0,
        target: str = "relu",
        sparsity: float = 0.0,
    ):
        if kind not in ("activation", "ternary"):
            raise UsageError(f"unknown activation map {kind!r}")
        super().__init__(check_n_features(n_features), seed)
        self.kind = kind
        self.target = _check_target(target)
        try:
            self.sparsity = float(sparsity)
        except (TypeError, ValueError):
            raise ParameterTypeError(
                f"sparsity must be a number in [0, 1), got {sparsity!r}"
            ) from None
        if not 0.0 <= self.sparsity < 1.0:
            raise UsageError(f"sparsity must be in [0, 1), got {sparsity!r}")
        if kind == "activation" and self.sparsity:
            raise UsageError("sparsity applies to the ternary kernel only")
        self.tau_ = self.s_minus_ = self.s_plus_ = self.pattern_ = self.residual_ = None

    @property
    def ternary(self) -> bool:
        return self.kind == "ternary"

    @property
    def value_law(self) -> str:  # type: ignore[override]
        return "ternary" if self.ternary else f"activation-{self.target}"

    @property
    def default_quantizer(self) -> str:  # type: ignore[override]
        return "ternary" if self.ternary else "none"

    @property
    def pass_reductions(self):  # type: ignore[override]
        return {"sq_norm": "sum"} if self.ternary else {}

    @property
    def feature_scale(self) -> float:
        return float(1.0 / np.sqrt(self.n_features))

    def fit(self, n_inputs: int, sample: np.ndarray | None = None) -> RandomActivationMap:
        d, m = int(n_inputs), self.n_features
        rng = generator(self.seed, 0)
        if self.ternary:
            u = rng.random((d, m))
            eps = self.sparsity
            W = np.where(u < eps, 0, np.where(u < eps + (1 - eps) / 2, -1, 1))
            self.W_ = W.astype(np.int8)
        else:
            self.W_ = rng.standard_normal((d, m)).astype(np.float32)
        self.n_inputs_ = d
        self._Wf = None
        return self

    def pass_values(self, X):
        return {"sq_norm": (np.asarray(X, dtype=np.float64) ** 2).sum(1)}

    def finish_pass(self, totals, n_rows):
        if n_rows == 0:
            raise InputError("ternary features: no rows to fit tau on")
        self._set_thresholds(totals["sq_norm"] / n_rows)

    def _set_thresholds(self, tau: float) -> None:
        if not tau > 0:
            raise InputError(f"ternary features: the mean squared row norm is {tau:.3g}")
        th = fit_thresholds(self.target, tau)
        self.tau_, self.s_minus_, self.s_plus_ = float(tau), th.s_minus, th.s_plus
        self.pattern_, self.residual_ = th.pattern, th.residual
        self.search_range_ = th.search_range

    @property
    def fitted(self) -> bool:
        return self.n_inputs_ is not None and (not self.ternary or self.tau_ is not None)

    def _weights(self) -> np.ndarray:
        if getattr(self, "_Wf", None) is None:
            W = self.W_.astype(np.float32)
            if self.ternary and self.sparsity:
                W *= np.float32(1.0 / np.sqrt(1.0 - self.sparsity))
            self._Wf = W
        return self._Wf

    def transform_raw(self, X):
        self._check_fitted()
        T = np.asarray(X, dtype=np.float32) @ self._weights()
        if not self.ternary:
            return TARGETS[self.target].fn(T).astype(np.float32, copy=False), None
        a, b, c = (np.float32(v) for v in PATTERNS[self.pattern_])
        Z = np.where(T < self.s_minus_, a, np.where(T > self.s_plus_, c, b))
        return Z.astype(np.float32, copy=False), None

    def kernel(self, X, Y):
        """The target activation's random-feature kernel (TRF matches it spectrally)."""
        return target_kernel(self.target, X, Y, seed=self.seed)

    def params(self):
        p = {"target": self.target}
        if self.ternary:
            p["sparsity"] = self.sparsity
        return p

    def fitted_params(self):
        if not self.ternary:
            return {}
        return {
            "tau": self.tau_,
            "s_minus": self.s_minus_,
            "s_plus": self.s_plus_,
            "pattern": self.pattern_,
            "residual": self.residual_,
        }

    def _check_arrays(self) -> None:
        if self.W_.shape != (self.n_inputs_, self.n_features):
            raise ConfigError(f"map {self.kind}: W has shape {self.W_.shape}")
        if self.ternary:
            if self.pattern_ not in PATTERNS or self.s_minus_ is None or self.s_plus_ is None:
                raise ConfigError("map ternary: fitted thresholds are missing")
            if not np.all(np.isin(self.W_, (-1, 0, 1))):
                raise ConfigError("map ternary: W must hold -1, 0, 1")
        self._Wf = None

    def describe(self) -> str:
        return f"{self.kind} ({self.target})"
