"""The Gauss-Legendre quadrature rules of GLF features (rfcli.maps.gauss_legendre): the
kernels' spectral densities, one-dimensional single and composite (panelled) rules, their
tensor products, the kernel error on probe differences, and the design of a rule that
meets a tolerance over a range of lengthscales within a node budget (Fink Shustin & Avron,
"Gauss-Legendre features for Gaussian process regression", JMLR 2022; docs/methods.md,
Gauss-Legendre features)."""

from __future__ import annotations

from functools import lru_cache
from statistics import NormalDist
from typing import Any

import numpy as np

from rfcli.errors import UsageError
from rfcli.maps.fourier import MATERN_NU, matern
from rfcli.maps.glf_phases import grid_sums, phase_features, tensor_factors

GLF_KERNELS = ("gaussian", *MATERN_NU)
MAX_DIM = 3
#: default node budget of a map fitted alone (``rfcli encode --kernel glf``); GP regression
#: sizes its budget from memory instead (rfcli.learn.gpr.max_gp_nodes)
MAX_NODES = 3000  # half-space nodes (2x that many features; G is (2 MAX_NODES)^2 float64)
#: lengthscale range of a map fitted on a bounding box alone (``rfcli encode --kernel glf``)
DEFAULT_BOUNDS = (0.05, 2.0)
#: nodes per panel of a composite rule
PANEL_NODES = 16
#: largest single Gauss-Legendre rule tried per dimension (above it composite rules win)
SINGLE_MAX = 1024
#: the panel at 0 is split until it spans at most this many spectral standard deviations
#: of the largest lengthscale (the Gaussian's spectrum has sd 1/(2 pi l))
GRADE_SIGMAS = 8.0
#: ratio of the geometric split at 0, and the nodes of each of its pieces
GRADE_RATIO, GRADE_NODES = 4.0, 8
#: share of tol that the nodes dropped from a tensor rule may take (their weight x density)
PRUNE_SHARE = 0.25
#: tensor rules are pruned, then checked against the budget; above this many half-space
#: nodes before pruning (their arrays: about 100 bytes a node) they are refused unbuilt
TENSOR_MAX = 4_000_000
RULES = ("auto", "single", "composite")
N_PROBES = 256


class RuleTooLarge(UsageError):
    """A quadrature rule for the asked tolerance and lengthscale range exceeds the budget."""

    def __init__(self, message: str, nodes: int, q: list[int], L: list[float],
                 pruned: bool = True):  # fmt: skip
        super().__init__(message)
        # nodes: after pruning, or (pruned False: a tensor too large to prune) before it,
        # an upper bound of the pruned count
        self.nodes, self.q, self.L, self.pruned = nodes, q, L, pruned


def log_spectral_density(kernel: str, eta: np.ndarray, ell: np.ndarray) -> np.ndarray:
    """log p(eta) for unit signal variance; eta (s, d), ell (d,), or (s, d): a lengthscale
    vector per row."""
    eta = np.asarray(eta, dtype=np.float64)
    ell = np.asarray(ell, dtype=np.float64)
    d = eta.shape[1]
    u2 = np.sum((eta * ell) ** 2, axis=1)
    base = np.sum(np.log(ell), axis=-1)  # one value, or one per row
    if kernel == "gaussian":
        return base + d / 2 * np.log(2 * np.pi) - 2 * np.pi**2 * u2
    from scipy.special import gammaln  # lazily: scipy.special slows CLI start-up (Matern only)

    nu = MATERN_NU[kernel]
    c = (
        d * np.log(2)
        + d / 2 * np.log(np.pi)
        + gammaln(nu + d / 2)
        + nu * np.log(2 * nu)
        - gammaln(nu)
    )
    return base + c - (nu + d / 2) * np.log(2 * nu + 4 * np.pi**2 * u2)


#: coordinate-ascent sweeps of :func:`max_log_spectral_density` (ARD Matern); its bound
#: holds after any number, and is tight once they have converged
ENVELOPE_SWEEPS = 8


def max_log_spectral_density(kernel: str, eta: np.ndarray, lo, hi, ard: bool) -> np.ndarray:
    """An upper bound of ``log p(eta)`` (:func:`log_spectral_density`) over the lengthscales
    ``lo <= ell <= hi`` (per input with ``ard``, else one lengthscale for every input); (s,).

    In ``t = log ell`` every kernel's log density is concave: ``sum t_j - 2 pi^2 sum eta_j^2
    e^(2 t_j)`` (Gaussian) and ``sum t_j - (nu + d/2) log(2 nu + 4 pi^2 sum eta_j^2
    e^(2 t_j))`` (Matern: a log-sum-exp, convex, subtracted), each up to a constant.  Both
    are largest where every ``u_j = 4 pi^2 eta_j^2 ell_j^2`` is 1 (ARD) or where ``u = 4
    pi^2 |eta|^2 ell^2 = d`` (one lengthscale): one lengthscale and the Gaussian's separable
    ARD density take that point clipped to the range, the exact maximum.  ARD Matern takes
    ENVELOPE_SWEEPS sweeps of coordinate ascent (each coordinate's maximum in closed form,
    ``u_j = (2 nu + sum_{k != j} u_k) / (2 nu + d - 1)``, clipped), then the tangent plane
    at that point, maximized over the box: an upper bound of a concave function whatever
    the point, equal to the maximum at it."""
    eta = np.asarray(eta, dtype=np.float64)
    s, d = eta.shape
    lo, hi = np.broadcast_to(lo, (d,)).astype(float), np.broadcast_to(hi, (d,)).astype(float)
    with np.errstate(divide="ignore"):
        if not ard:  # u = d at the maximum
            norm = np.sqrt(np.sum(eta * eta, axis=1))
            ell = np.clip(np.sqrt(d) / (2 * np.pi * norm), lo[0], hi[0])[:, None]
            return log_spectral_density(kernel, eta, np.broadcast_to(ell, (s, d)))
        c = (2 * np.pi * eta) ** 2  # u_j = c_j ell_j^2
        ell = np.clip(1.0 / np.sqrt(c), lo, hi)  # every u_j = 1 (clipped)
        if kernel == "gaussian":
            return log_spectral_density(kernel, eta, ell)
        nu = MATERN_NU[kernel]
        for _ in range(ENVELOPE_SWEEPS):
            for j in range(d):
                u = c * ell * ell
                rest = 2 * nu + u.sum(axis=1) - u[:, j]
                ell[:, j] = np.clip(np.sqrt(rest / ((2 * nu + d - 1) * c[:, j])), lo[j], hi[j])
    grad = dlog_density_dlog_ell(kernel, eta, ell)  # d f / d t_j
    t = np.log(ell)
    rise = np.maximum(grad * (np.log(lo) - t), grad * (np.log(hi) - t)).sum(axis=1)
    return log_spectral_density(kernel, eta, ell) + rise


def dlog_density_dlog_ell(kernel: str, eta: np.ndarray, ell: np.ndarray) -> np.ndarray:
    """d log p / d log l_j, shape (s, d); ell (d,), or (s, d) per row."""
    a = (2 * np.pi * eta * ell) ** 2  # 4 pi^2 l_j^2 eta_j^2
    if kernel == "gaussian":
        return 1.0 - a
    nu = MATERN_NU[kernel]
    d = eta.shape[1]
    return 1.0 - (nu + d / 2) * 2 * a / (2 * nu + a.sum(axis=1, keepdims=True))


def stationary_kernel(kernel: str, X: np.ndarray, Y: np.ndarray, ell) -> np.ndarray:
    """Exact unit-variance kernel with lengthscales ell (scalar or per dimension)."""
    ell = np.broadcast_to(np.asarray(ell, dtype=np.float64), (X.shape[1],))
    Xs, Ys = X / ell, Y / ell
    r2 = np.maximum((Xs**2).sum(1)[:, None] + (Ys**2).sum(1)[None, :] - 2 * Xs @ Ys.T, 0.0)
    if kernel == "gaussian":
        return np.exp(-r2 / 2)
    return matern(np.sqrt(r2), MATERN_NU[kernel], 1.0)


def cutoff_for(kernel: str, ell_lo: float, tail: float) -> float:
    """L such that the 1-D marginal of p at lengthscale ell_lo has mass <= tail outside [-L, L].
    The Gaussian's normal quantile comes from the standard library (Wichura's AS241, within
    a relative 1e-15 of scipy.special.ndtri): the rule designs of a Gaussian GP fit import
    no scipy.special, whose first import took 0.03-0.12 s of a 2-3 s fit (ggplot2::txhousing,
    3,000 rows; a fit that imports scipy.optimize, for Brent's search, still loads
    it)."""
    if kernel == "gaussian":  # eta_j ~ N(0, 1/(2 pi l)^2): the normal upper quantile
        return float(-NormalDist().inv_cdf(tail / 2) / (2 * np.pi * ell_lo))
    from scipy.special import stdtrit  # lazily: scipy.special slows CLI start-up

    nu = MATERN_NU[kernel]  # 2 pi l eta_j / sqrt(2 nu) ~ Student t with 2 nu degrees of freedom
    upper = -stdtrit(2 * nu, tail / 2)  # Student t upper quantile (scipy.stats' t.isf)
    return float(upper * np.sqrt(2 * nu) / (2 * np.pi * ell_lo))


def _legendre_pair(x: np.ndarray, q: int) -> tuple[np.ndarray, np.ndarray]:
    """P_q(x) and P_{q-1}(x) by the three-term recurrence (k + 1) P_{k+1} = (2k + 1) x P_k -
    k P_{k-1}, vectorized over x (forward-stable on [-1, 1]); q >= 1."""
    p0, p1 = np.ones_like(x), x.copy()
    t = np.empty_like(x)
    for k in range(1, q):
        np.multiply(x, p1, out=t)
        t *= (2 * k + 1) / (k + 1)
        p0 *= k / (k + 1)
        t -= p0
        p0, p1, t = p1, t, p0
    return p1, p0


@lru_cache(maxsize=256)
def _leggauss(q: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [-1, 1] in O(q^2) flops on q/2 nodes.

    The nodes are the eigenvalues of the symmetric tridiagonal Jacobi matrix J (zero
    diagonal, off-diagonal k / sqrt(4k^2 - 1); Golub & Welsch, "Calculation of Gauss
    quadrature rules", Math. Comp. 1969).  J^2 splits into its even- and odd-indexed rows; the
    odd block, of size floor(q/2), has the positive nodes' squares as its eigenvalues, so one
    tridiagonal eigenvalue problem of half the size (a quarter of the work) gives them.  One
    Newton step with P_q and P_q' from the recurrence (at the same time as the weights
    2 / ((1 - x^2) P_q'(x)^2), whose relative error from the node's is O(x dx)) restores the
    digits that the square root loses near 0.  Against NumPy's ``leggauss``: nodes within 1
    ulp, 4-5x faster at q = 1,000-4,000 (7 against 32 ms at q = 1,000), and weights 50-2,000x
    closer to an extended-precision evaluation (2e-10 against 2e-8 relative at q = 1,782;
    NumPy's from its Legendre series in Clenshaw's sum lose digits as q grows)."""
    from scipy.linalg import eigh_tridiagonal

    if q == 1:
        return np.zeros(1), np.full(1, 2.0)
    k = np.arange(1, q, dtype=float)
    e = np.r_[k / np.sqrt(4.0 * k * k - 1.0), 0.0]  # J[i, i + 1] = e[i]; e[q - 1] pads
    # the odd rows 1, 3, ..., 2h - 1 of J^2: diagonal e[i-1]^2 + e[i]^2, next e[i] e[i+1]
    h = q // 2
    d = e[0 : 2 * h : 2] ** 2 + e[1 : 2 * h : 2] ** 2
    y = eigh_tridiagonal(
        d, e[1 : 2 * h - 2 : 2] * e[2 : 2 * h - 1 : 2], eigvals_only=True, lapack_driver="sterf"
    )
    x = np.sqrt(np.maximum(y, 0.0))
    p, pm = _legendre_pair(x, q)
    dp = q * (x * p - pm) / ((x - 1.0) * (x + 1.0))  # (x^2 - 1) P_q' = q (x P_q - P_{q-1})
    x = x - p / dp
    w = 2.0 / ((1.0 - x) * (1.0 + x) * dp * dp)  # 1 - x is exact near 1 (Sterbenz)
    if q % 2:  # the node 0, where P_q'(0) = q P_{q-1}(0)
        w0 = 2.0 / (q * _legendre_pair(np.zeros(1), q)[1][0]) ** 2
        x, w = np.r_[-x[::-1], 0.0, x], np.r_[w[::-1], w0, w]
    else:
        x, w = np.r_[-x[::-1], x], np.r_[w[::-1], w]
    w *= 2.0 / w.sum()
    return x, w


def single_line(L: float, q: int) -> tuple[np.ndarray, np.ndarray]:
    """One Gauss-Legendre rule of q (even) nodes on [-L, L]."""
    x, w = _leggauss(int(q))
    return x * L, w * L


def _grade(h: float, ell_hi: float) -> int:
    """How many geometric pieces the panel at 0, of width h, splits into
    (:func:`composite_line`)."""
    sigma = 1.0 / (2 * np.pi * ell_hi)
    if h > GRADE_SIGMAS * sigma:
        return int(np.ceil(np.log(h / (GRADE_SIGMAS * sigma)) / np.log(GRADE_RATIO)))
    return 0


def composite_size(L: float, panels: int, ell_hi: float, q_p: int = PANEL_NODES) -> int:
    """The node count of :func:`composite_line` (both halves), without the nodes."""
    return 2 * (_grade(L / panels, ell_hi) * GRADE_NODES + panels * q_p)


def composite_line(L: float, panels: int, ell_hi: float, q_p: int = PANEL_NODES):
    """Composite Gauss-Legendre rule on [-L, L], symmetric: ``panels`` equal panels on
    [0, L] of ``q_p`` nodes each, the one at 0 split geometrically (ratio GRADE_RATIO, the
    pieces of GRADE_NODES nodes) until the innermost spans at most GRADE_SIGMAS spectral
    standard deviations 1/(2 pi ell_hi) of the largest lengthscale; mirrored to [-L, 0].
    All pieces at once: 0.07 ms for 300 panels, where piece by piece took 1.2 ms."""
    h = L / panels
    grade = _grade(h, ell_hi)
    inner = h / GRADE_RATIO ** np.arange(grade, 0, -1, dtype=np.float64)
    edges = np.concatenate([[0.0], inner, h * np.arange(1, panels + 1, dtype=np.float64)])
    a, b = edges[:-1, None], edges[1:, None]
    parts = []
    for sl, q in ((slice(0, grade), GRADE_NODES), (slice(grade, None), q_p)):
        x0, w0 = _leggauss(q)
        parts.append(((b[sl] - a[sl]) / 2 * x0 + (a[sl] + b[sl]) / 2, (b[sl] - a[sl]) / 2 * w0))
    x = np.concatenate([xs.ravel() for xs, _ in parts])
    w = np.concatenate([ws.ravel() for _, ws in parts])
    return np.concatenate([-x[::-1], x]), np.concatenate([w[::-1], w])


def tensor_half(lines) -> tuple[np.ndarray, np.ndarray]:
    """Tensor product of symmetric 1-D rules (x, w), the half with eta_1 > 0, weights doubled
    (cos is even, so each +-eta pair is one node)."""
    axes = [x for x, _ in lines]
    weights = [w for _, w in lines]
    keep = axes[0] > 0
    axes[0], weights[0] = axes[0][keep], 2 * weights[0][keep]
    grids = np.meshgrid(*axes, indexing="ij")
    wgrid = np.meshgrid(*weights, indexing="ij")
    H = np.stack([g.ravel() for g in grids], axis=1)
    w = np.prod(np.stack([g.ravel() for g in wgrid], axis=1), axis=1)
    return H, w


def half_space_nodes(L: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tensor Gauss-Legendre nodes on prod [-L_j, L_j] (q_j even), the half with eta_1 > 0,
    weights doubled."""
    return tensor_half([single_line(float(Lj), int(qj)) for Lj, qj in zip(L, q, strict=True)])


def quadrature_kernel(kernel: str, H, w, delta: np.ndarray, ell) -> np.ndarray:
    """k~(delta) = sum_l w_l p(eta_l) cos(2 pi eta_l'delta) for differences delta (n, d)."""
    ell = np.broadcast_to(np.asarray(ell, dtype=np.float64), (H.shape[1],))
    wp = w * np.exp(log_spectral_density(kernel, H, ell))
    return np.cos(2 * np.pi * delta @ H.T) @ wp


def probe_differences(width: np.ndarray, seed: int) -> np.ndarray:
    """0, the box width and N_PROBES uniform draws in [-width, width] (seeded)."""
    rng = np.random.default_rng(seed)
    width = np.asarray(width, dtype=np.float64)
    d = len(width)
    return np.vstack([np.zeros(d), width, rng.uniform(-1, 1, (N_PROBES, d)) * width])


def probe_lengthscales(ranges: np.ndarray, ard: bool) -> np.ndarray:
    """Lengthscale vectors (k, d) at which a rule for ``ranges`` (d, 2) is checked: points along
    the range spaced by at most a factor 2 (the geometric centre among them), and with
    ``ard`` also the 2^d corners of the box of ranges."""
    lo, hi = ranges[:, 0], ranges[:, 1]
    ratio = float(np.max(hi / lo))
    k = int(min(15, np.ceil(np.log2(ratio)) + 1)) if ratio > 1 else 1
    k += 1 - k % 2  # odd: the geometric centre is one of them
    t = np.linspace(0.0, 1.0, k)[:, None] if k > 1 else np.array([[0.5]])
    out = [lo * (hi / lo) ** t]
    if ard and len(lo) > 1:
        corners = np.array(np.meshgrid(*[[0, 1]] * len(lo), indexing="ij")).reshape(len(lo), -1).T
        out.append(np.where(corners == 1, hi, lo))
    return np.unique(np.vstack(out), axis=0)


def kernel_error(kernel: str, H, w, delta: np.ndarray, ells: np.ndarray) -> float:
    """max |k~ - k| over the probe differences and the lengthscale vectors ``ells`` (unit
    signal variance)."""
    ells = np.atleast_2d(ells)
    if not len(ells):
        return 0.0
    wp = np.stack([w * np.exp(log_spectral_density(kernel, H, ell)) for ell in ells])
    approx = grid_sums(H, wp, delta)  # (a tensor rule's nodes on their grid)
    if approx is None:
        factors = tensor_factors(H)
        if factors is None:  # the cosine alone
            C = np.cos(2 * np.pi * delta @ H.T)
        else:
            CS = np.empty((len(delta), 2 * len(H)))
            phase_features(delta, H, CS, factors)
            C = CS[:, : len(H)]
        approx = C @ wp.T
    zero = np.zeros((1, delta.shape[1]))
    worst = 0.0
    for i, ell in enumerate(ells):
        exact = stationary_kernel(kernel, delta, zero, ell)[:, 0]
        err = float(np.abs(approx[:, i] - exact).max())
        if not np.isfinite(err):  # (max() would pass over a NaN: no rule meets a NaN)
            return np.inf
        worst = max(worst, err)
    return worst


class _Line:
    """A 1-D rule of one dimension that can be refined: a single rule of q nodes, or a
    composite rule of ``panels`` panels."""

    def __init__(self, kind: str, L: float, ell_hi: float, size: int):
        self.kind, self.L, self.ell_hi, self.size = kind, L, ell_hi, int(size)

    def nodes(self) -> tuple[np.ndarray, np.ndarray]:
        if self.kind == "single":
            return single_line(self.L, self.size)
        return composite_line(self.L, self.size, self.ell_hi)

    @property
    def q(self) -> int:  # (without computing the rule)
        if self.kind == "single":
            return self.size
        return composite_size(self.L, self.size, self.ell_hi)

    def grow(self) -> _Line:
        if self.kind == "single":
            q = self.size + 2 * max(self.size // 16, 1)  # ~12% per step, stays even
            if q <= SINGLE_MAX:
                return _Line("single", self.L, self.ell_hi, q)
            return _Line("composite", self.L, self.ell_hi, max(1, self.size // PANEL_NODES))
        return _Line("composite", self.L, self.ell_hi, self.size + max(self.size // 8, 1))


def estimate_nodes(kernel: str, width, ranges, tol: float) -> int:
    """A quick estimate of :func:`design_rule`'s node count, without probing: about
    4.5 L_j width_j + 20 nodes per dimension (measured on single and composite rules)."""
    width = np.asarray(width, dtype=np.float64)
    ranges = np.asarray(ranges, dtype=np.float64)
    q = [
        4.5 * cutoff_for(kernel, lo, tol / 10) * w + 20
        for (lo, _), w in zip(ranges, width, strict=True)
    ]
    return int(np.prod(q) / 2 * (0.8 if len(q) > 1 else 1.0))


def _search_lines(kernel, L, width, lo, hi, tol, seed, kinds,
                  max_nodes) -> dict[str, _Line | None]:  # fmt: skip
    """Per kind (single, composite) the smallest 1-D rule whose 1-D kernel error is <= tol at
    lengthscales spread over [lo, hi] for differences up to ``width``: None for a single rule
    that needs more than SINGLE_MAX nodes, the finest tried for a composite one that never
    gets there within the budget."""
    delta = probe_differences(np.array([width]), seed)
    ells = probe_lengthscales(np.array([[lo, hi]]), ard=False)
    out: dict[str, _Line | None] = {}
    for kind in sorted(kinds):  # composite first: a single rule must beat it
        cap = max_nodes * 2
        if kind == "single":
            # a Gauss-Legendre rule resolves cos(2 pi eta delta) on [-L, L] with about
            # pi L delta nodes: start a little below, give up beyond SINGLE_MAX
            q0 = 2 * max(4, int(0.4 * np.pi * L * width))
            out[kind] = None
            if len(kinds) > 1:
                cap = min(SINGLE_MAX, out["composite"].q)
                if q0 > cap:
                    continue
            line = _Line("single", L, hi, min(q0, SINGLE_MAX))
        else:  # start below the ~2 L width nodes on [0, L] that equal panels need
            line = _Line("composite", L, hi, max(1, int(1.5 * L * width / PANEL_NODES)))

        def passes(ln: _Line) -> bool:
            H, w = ln.nodes()
            return kernel_error(kernel, H[:, None], w, delta, ells) <= tol

        last = line
        out[kind] = line if kind == "composite" else None
        if kind == "single":
            # the sizes the steps would try, and the first that passes by bisection (the
            # error falls as q grows): a few rules computed, not every step's (a rule of q
            # nodes costs O(q^2), and a single rule is often tried up to a composite's size
            # only to lose to it)
            steps = []
            while line.kind == kind and line.q <= cap and line.q // 2 <= max_nodes:
                steps.append(line)
                line = line.grow()
            a, b = 0, len(steps)
            while a < b:
                mid = (a + b) // 2
                if passes(steps[mid]):
                    b = mid
                else:
                    a = mid + 1
            out[kind] = steps[a] if a < len(steps) else None
            last = steps[-1] if steps else last
        else:
            while line.q // 2 <= max_nodes and line.kind == kind and line.q <= cap:
                if passes(line):
                    out[kind] = line
                    break
                out[kind] = line
                last, line = line, line.grow()
        if out[kind] is None and len(kinds) == 1:
            out[kind] = last  # a single rule was asked for: the largest tried (tensor grows it)
    return out


def design_rule(
    kernel: str,
    width: np.ndarray,
    ranges: np.ndarray,
    tol: float,
    seed: int = 0,
    ard: bool = True,
    cutoff: np.ndarray | None = None,
    rule: str = "auto",
    max_nodes: int | None = None,
) -> dict[str, Any]:
    """A tensor rule (half-space nodes H, weights w) whose kernel error on probe differences in
    the box of widths ``width`` is <= tol at :func:`probe_lengthscales` of ``ranges`` (d, 2).
    ``rule``: single or composite rules in every dimension, or ``auto``: the smallest of
    per-dimension choices of the cheaper 1-D rule, all single, all composite.  Raises
    :class:`RuleTooLarge` (with the numbers) when it needs more than ``max_nodes`` (default
    :data:`MAX_NODES`)."""
    from rfcli.threads import one_blas_thread

    with one_blas_thread():  # many small products: threads only spin (rfcli/threads.py)
        return _design_rule(kernel, width, ranges, tol, seed, ard, cutoff, rule, max_nodes)


def _design_rule(kernel, width, ranges, tol, seed, ard, cutoff, rule, max_nodes):
    max_nodes = MAX_NODES if max_nodes is None else max_nodes
    width = np.maximum(np.asarray(width, dtype=np.float64), 1e-12)
    ranges = np.asarray(ranges, dtype=np.float64)
    d = len(width)
    if cutoff is not None:
        L = np.broadcast_to(np.asarray(cutoff, dtype=float), (d,)).copy()
    else:
        L = np.array([cutoff_for(kernel, ranges[j, 0], tol / 10) for j in range(d)])
    # per-dimension 1-D searches at tol/d (exact bookkeeping for the separable Gaussian
    # kernel, a start for Matern), then grow every dimension until the tensor rule passes
    kinds = ("single", "composite") if rule == "auto" else (rule,)
    found = [
        _search_lines(
            kernel, L[j], width[j], ranges[j, 0], ranges[j, 1], tol / d, seed, kinds, max_nodes
        )
        for j in range(d)
    ]
    variants = []
    if rule == "auto":
        variants.append(
            [min((ln for ln in f.values() if ln is not None), key=lambda ln: ln.q) for f in found]
        )
        if d > 1:
            if all(f["single"] is not None for f in found):
                variants.append([f["single"] for f in found])
            variants.append([f["composite"] for f in found])
    else:
        variants.append([f[rule] for f in found])
    best, error = None, None
    for lines in variants:
        try:
            out = _grow_tensor(kernel, width, ranges, tol, seed, ard, L, lines, max_nodes)
        except RuleTooLarge as e:
            error = error or e
            continue
        if best is None or len(out["w"]) < len(best["w"]):
            best = out
    if best is None:
        raise error
    return best


def _grow_tensor(kernel, width, ranges, tol, seed, ard, L, lines, max_nodes) -> dict[str, Any]:
    """Tensor product of ``lines``, pruned, grown until its kernel error meets tol; the pruned
    size is what the budget is checked against."""
    delta = probe_differences(width, seed)
    ells = probe_lengthscales(ranges, ard)
    while True:
        q = [ln.q for ln in lines]
        full = int(np.prod(q)) // 2
        pruned = full <= TENSOR_MAX  # else not built: too large to prune here
        if pruned:
            H, w = tensor_half([ln.nodes() for ln in lines])
            H, w = _prune(kernel, H, w, ells, PRUNE_SHARE * tol)
        # (a tensor past TENSOR_MAX is counted, not built: ggplot2::diamonds with Matern
        # 1/2 asked for 9e9 nodes, an array of 404 GiB)
        size = len(w) if pruned else full
        if size > max_nodes:
            lo, hi = ranges[:, 0], ranges[:, 1]
            raise RuleTooLarge(
                f"GLF needs more than {max_nodes} nodes ({size}"
                f"{'' if pruned else ' before pruning'} at q={q}, "
                f"L={[round(float(v), 3) for v in L]}) for tol={tol:g} with lengthscales "
                f"{_fmt(lo)} to {_fmt(hi)} on this data range (box widths {_fmt(width)})",
                size,
                q,
                [float(v) for v in L],
                pruned,
            )
        if not pruned:  # within the budget (a budget past TENSOR_MAX nodes): unpruned
            H, w = tensor_half([ln.nodes() for ln in lines])
        err = kernel_error(kernel, H, w, delta, ells)
        if err <= tol:
            break
        lines = [ln.grow() for ln in lines]
    return {
        "H": H,
        "w": w,
        "q": q,
        "L": [float(v) for v in L],
        "rules": [ln.kind for ln in lines],
        "probe_error": float(err),
    }


def _fmt(v) -> str:
    v = np.atleast_1d(v)
    return ", ".join(f"{x:.4g}" for x in v) if len(v) > 1 else f"{v[0]:.4g}"


def _prune(kernel, H, w, ells, budget):
    """Drop the nodes of smallest weight x density (max over ``ells``) while their sum stays
    <= budget: each dropped node changes k~ by at most its weight x density."""
    wp = np.zeros(len(w))
    for ell in ells:
        wp = np.maximum(wp, w * np.exp(log_spectral_density(kernel, H, ell)))
    order = np.argsort(wp, kind="stable")
    drop = order[np.cumsum(wp[order]) <= budget]
    keep = np.ones(len(w), dtype=bool)
    keep[drop] = False
    return H[keep], w[keep]


def lengthscale_ranges(bounds, d: int) -> tuple[np.ndarray, bool]:
    """(d, 2) lengthscale ranges and whether they are per dimension (ARD probes)."""
    b = np.asarray(bounds, dtype=np.float64)
    if b.ndim == 1:
        return np.tile(b, (d, 1)), False
    if b.shape[0] == 1:
        return np.tile(b[0], (d, 1)), True
    if b.shape != (d, 2):
        raise UsageError(f"lengthscale_bounds: {b.shape[0]} ranges for {d} inputs")
    return b, True


def check_bounds(bounds) -> Any:
    if bounds is None:
        return None
    b = np.asarray(bounds, dtype=np.float64)
    if b.ndim not in (1, 2) or b.shape[-1] != 2 or not b.size:
        raise UsageError(
            f"lengthscale_bounds must be (lo, hi) or one (lo, hi) per input, got {bounds}"
        )
    lo, hi = b[..., 0], b[..., 1]
    if not (np.all(lo > 0) and np.all(lo <= hi) and np.all(np.isfinite(hi))):
        raise UsageError(
            "lengthscale_bounds must satisfy 0 < lo <= hi, got "
            + (f"({lo:g}, {hi:g})" if b.ndim == 1 else str(b.tolist()))
        )
    return [float(v) for v in b] if b.ndim == 1 else [[float(x) for x in r] for r in b]
