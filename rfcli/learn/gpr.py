"""Gaussian-process regression with a low-rank kernel ``K~ = V diag(D) V' + lambda I`` from
one pass of sufficient statistics (docs/methods.md, Gaussian-process regression; Fink
Shustin & Avron, "Gauss-Legendre Features for Gaussian Process Regression", JMLR 2022,
Section 4.2).

``D = s^2 * wp(ell)``: for Gauss-Legendre features ``wp`` is quadrature weight times the
spectral density at the nodes (depends on the lengthscales); for random Fourier features
with a fixed map ``wp = 1`` (only s^2 and lambda are learned from the statistics).

docs/methods.md writes the likelihood with ``B = I + D^1/2 G D^1/2 / lambda`` (m x m).  rfcli
uses the equivalent form in the eigenbasis of G (:class:`Reduced`): the same values and
gradients at O(m r^2 + r^3) per step, r = rank(G) <= min(n, m) -- O(s^3) when n >= m as in
that form, much less when a small data set meets many quadrature nodes.  Gradients need
``V'alpha`` and ``diag(V'K~^-1 V)`` only.  Everything is independent of n after the pass.
Targets are standardized with the mean and standard deviation from the same pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from rfcli.errors import InputError
from rfcli.learn.gpr_factor import (
    BASIS_SLACK,
    FeatureWeights,
    envelope_of,
    gram_pivoted_cholesky,
    kernel_pivoted_cholesky,
    rows_pivoted_cholesky,
)
from rfcli.learn.gpr_optimize import LMLTerms, lml_and_grad_of
from rfcli.learn.linear import MODELS, LinearModel
from rfcli.learn.ridge import RidgeStats
from rfcli.learn.tiles import (
    column_sq_norms,
    gram_temp_bytes,
    inverse_sq_column_norms,
    left_product,
    lower_product,
    rows_product,
    weighted_gram,
)
from rfcli.threads import tiled


class GPStats:
    """GP sufficient statistics of one pass (float64): n and, for the targets less
    ``shift``, ``G = V'V``, ``c = V'y``, ``s = V'1``, y'y and sum y -- ridge regression's
    statistics (:class:`rfcli.learn.ridge.RidgeStats` of float64 features, one target:
    the Gram product of ``[V, y, 1]`` per block) -- or, while at most m rows have been seen,
    the rows (V, y) themselves: then :meth:`reduced` factors their n x n Gram matrix
    (:meth:`Reduced.from_rows`, O(n m r)), where forming G and factoring it costs
    O(n m^2) time and m^2 memory (a 10-row set with a 14,000-feature rule: a 1.6 GB G for
    rank 10).  ``keep_rows=False`` (the
    job knows that more than m rows will be summed) sums from the first row: no copy of the
    rows, and each pass thread sums its own.  Which form a pass ends in depends only on its
    row counts, so the result never depends on the threads.  Statistics add (``+``) in row
    order.

    Kept rows may come with their inputs (``update(..., inputs=X)``): :meth:`reduced` then
    tries the exact kernel's factor on them as the rows' basis (``kernel``).

    ``shift``: a number near the targets (the job takes the first row's) subtracted before
    summing, so that y'y - n mean^2 keeps its digits for offset targets (a year, a price in
    cents: the variance would otherwise be a difference of two numbers 1e8 times larger)."""

    def __init__(self, m: int, shift: float = 0.0, keep_rows: bool = True):
        self.m, self.n = int(m), 0
        self.shift = float(shift)
        self.blocks: list[tuple[np.ndarray, np.ndarray]] | None = []  # None: folded into sums
        # the kept rows' inputs, where every block came with them (None: not all did)
        self.inputs: list[np.ndarray] | None = []
        self.sums: RidgeStats | None = None  # the sum form
        if not keep_rows:
            self.blocks, self.inputs, self.sums = None, None, RidgeStats(self.m, 1)

    @staticmethod
    def keeps_rows(n_rows: int | None, m: int) -> bool:
        """Whether a pass over ``n_rows`` rows in all (None: unknown) should keep its rows
        (``keep_rows``): at most m of them, or an unknown count."""
        return n_rows is None or n_rows <= m

    def update(self, V: np.ndarray, y: np.ndarray, copy: bool = True, inputs=None) -> None:
        """Add rows: features V, targets y (``inputs``: the rows' inputs, kept with kept
        rows: the exact kernel's basis of :meth:`reduced`).  Kept rows are copied (a caller
        may reuse its buffer) unless ``copy`` is False: V is then the caller's no more (a
        map's new output) and is kept as it is when it is float64."""
        y = np.asarray(y, dtype=np.float64) - self.shift
        if self.blocks is not None and self.n + len(y) <= self.m:
            # kept (summed rows need no copy)
            V = np.array(V, dtype=np.float64) if copy else np.asarray(V, dtype=np.float64)
            self.blocks.append((V, y))
            if inputs is None or self.inputs is None:
                self.inputs = None
            else:
                self.inputs.append(np.array(inputs, dtype=np.float64))
            self.n += len(y)
            return
        self._fold()
        self.sums.update(np.asarray(V, dtype=np.float64), y[:, None])
        self.n += len(y)

    @property
    def nbytes(self) -> int:
        """Bytes of the statistics' arrays: the kept rows, or the sums."""
        if self.blocks is not None:
            return sum(V.nbytes + y.nbytes for V, y in self.blocks)
        return self.sums.S.nbytes

    @property
    def G(self) -> np.ndarray | None:
        """``V'V`` (symmetric) of the sum form; None while the rows are kept."""
        return None if self.sums is None else self.sums.gram()

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(V, y) of the rows kept (while n <= m), stacked once (the blocks are replaced by
        the stacked rows: later calls and copies share them)."""
        if not self.blocks:
            return np.zeros((0, self.m)), np.zeros(0)
        if len(self.blocks) > 1:
            V = np.vstack([b[0] for b in self.blocks])
            self.blocks = [(V, np.concatenate([b[1] for b in self.blocks]))]
            if self.inputs:
                self.inputs = [np.vstack(self.inputs)]
        return self.blocks[0]

    def _fold(self) -> None:
        """Rows -> sums (once; the form for n > m)."""
        if self.blocks is None:
            return
        V, y = self.rows()
        self.blocks = self.inputs = None
        self.sums = RidgeStats(self.m, 1)
        self.sums.update(V, y[:, None])

    def __add__(self, other: GPStats) -> GPStats:
        if other.shift != self.shift:  # pragma: no cover - one job, one shift
            raise ValueError("GP statistics with different target shifts")
        out = GPStats(self.m, self.shift)
        if self.blocks is not None and other.blocks is not None and self.n + other.n <= self.m:
            out.blocks, out.n = self.blocks + other.blocks, self.n + other.n
            both = self.inputs is not None and other.inputs is not None
            out.inputs = self.inputs + other.inputs if both else None
            return out
        # the two folds (a Gram product each, when the parts kept their rows) at once on
        # the tile threads
        a, b = tiled(GPStats._folded, [self, other])
        out.blocks, out.inputs, out.n, out.sums = None, None, a.n + b.n, a.sums + b.sums
        return out

    def _folded(self) -> GPStats:
        if self.blocks is None:
            return self
        out = GPStats(self.m, self.shift)
        out.blocks, out.n, out.inputs = list(self.blocks), self.n, None
        out._fold()
        return out

    def standardized(self) -> tuple[float, float, np.ndarray, float]:
        """(mean, std, c and y'y of the standardized targets (y - mean)/std)."""
        if self.n < 2:
            raise InputError("GP regression needs at least 2 rows")
        if self.blocks is not None:  # centred exactly: offset targets keep their digits
            V, ys, mu, sd = self._standardized_rows()
            return mu, sd, V.T @ ys, float(ys @ ys)
        S = self.sums
        yy = float(S.YtY[0, 0])
        mu = float(S.sY[0]) / self.n  # of the shifted targets
        var = yy / self.n - mu * mu
        sd = float(np.sqrt(var)) if var > 0 else 1.0
        c = (S.FtY[:, 0] - mu * S.sF) / sd
        yty = (yy - self.n * mu * mu) / (sd * sd)
        return self.shift + mu, sd, c, yty

    def reduced(
        self, rel_tol: float = 1e-12, weights: FeatureWeights | None = None,
        noise: float | None = None, kernel: tuple | None = None,
    ) -> Reduced:  # fmt: skip
        """:class:`Reduced` of the standardized targets: from the rows (their Gram
        matrix) while they are kept, its features weighed by ``weights``
        (:meth:`Reduced.from_rows`), else from G (pivoted Cholesky of G itself, its
        candidates ranked and its stop set by the weights:
        :func:`rfcli.learn.gpr_factor.gram_pivoted_cholesky`; a factor of the weighted
        ``diag(w)^1/2 G diag(w)^1/2`` with ``P = P_w diag(w)^-1/2`` was 100x further from the
        dense likelihood than the unweighted one on a Matern 5/2 ARD test, 2.5e-3 against
        1.4e-5 nats, at any threshold: rounding; the weighted rows' factor within 2e-5 nats
        there, docs/gpr.md).  ``noise``: the noise/signal ratio the learning is expected to
        reach, which lets a weighted factor stop earlier (the residual's weighted trace
        FACTOR_NATS x it).  ``kernel``: (name, lengthscales) of the exact kernel whose
        factor on the kept rows' inputs is tried first as the rows' basis
        (:meth:`Reduced.from_rows`, ``basis``), where the rows came with their inputs."""
        if self.blocks is None:
            _, _, c, yty = self.standardized()
            return Reduced(self.sums.G, c, yty, self.n, rel_tol, weights, noise)  # G's upper
        if self.n < 2:
            raise InputError("GP regression needs at least 2 rows")
        V, ys, _, _ = self._standardized_rows()
        basis = None
        if kernel is not None and self.inputs:
            X = self.inputs[0]  # stacked with the rows
            basis = partial(kernel_pivoted_cholesky, X, kernel[0], kernel[1], rel_tol)
        return Reduced.from_rows(V, ys, rel_tol, weights, noise, basis)

    def factor_nats(self, theta, red: Reduced, spectral: Spectral) -> float | None:
        """:func:`factor_nats` of ``red`` made from these statistics (the rows, or the sums:
        the same terms through G and c)."""
        if self.blocks is None:
            _, _, c, _ = self.standardized()
            return factor_nats(theta, red, spectral, sums=(self.sums.G, c))
        V, ys, _, _ = self._standardized_rows()
        return factor_nats(theta, red, spectral, V, ys)

    def _standardized_rows(self):
        """(V, the standardized targets, mean, std) of the rows kept, centred exactly."""
        V, y = self.rows()
        mu = float(y.mean())
        yc = y - mu
        var = float(yc @ yc) / self.n
        sd = float(np.sqrt(var)) if var > 0 else 1.0
        return V, yc / sd, self.shift + mu, sd


@dataclass
class Spectral:
    """How D depends on the kernel-shape parameters: ``wp(p) -> (wp (m,), dlog wp/dp (m, k))``
    for k log-lengthscale parameters (k = 0 for a fixed map)."""

    n_shape: int
    fn: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


class Reduced:
    """The statistics through a factor of G: ``G ~= P'P`` with P (r x m) of full row rank r,
    the numerical rank of G, and z with ``c = P'z`` (``c = V'y`` lies in the row space of V).

    With ``A = P D P' + lambda I_r`` (r x r) the GP quantities are exact in r dimensions:
    ``y'K~^-1 y = z'A^-1 z + (y'y - z'z)/lambda``, ``log det K~ = log det A + (n - r) log lambda``
    (``V = Q P`` with Q'Q = I for any such P, so the data space splits into the column space
    of V and its complement, where K~ = lambda).  A step costs O(m r^2 + r^3) instead of
    O(m^3).

    P comes from Cholesky factorization with complete pivoting (Higham, "Accuracy and
    Stability of Numerical Algorithms", SIAM 2002, section 10.3), by blocks of candidate
    pivots (:func:`rfcli.learn.gpr_factor.gram_pivoted_cholesky`), stopped when the largest
    pivot left is below ``rel_tol`` x the largest diagonal entry of G: O(m r^2) flops in
    products on the tile threads, against about 9 m^3 for the eigendecomposition it
    replaces (the same rank criterion: every eigenvalue of the part left out is at most m x
    that bound) and m^2 r on one thread for LAPACK's dpstrf, which it replaced in December
    2026 (ggplot2::faithfuld's level: the factor step 0.15-0.26 -> 0.12-0.13 s).
    """

    def __init__(
        self, G: np.ndarray, c: np.ndarray, yty: float, n: int, rel_tol: float = 1e-12,
        weights: FeatureWeights | None = None, noise: float | None = None,
    ):  # fmt: skip
        import scipy.linalg as sla

        m = len(c)
        # G ~= F F' (G's upper triangle); with weights and a noise, stopped as the rows'
        # factor of the same rows would be (gram_pivoted_cholesky)
        trace_tol = trace_tolerance(noise) if weights is not None else 0.0
        F, r, piv, left = gram_pivoted_cholesky(G, rel_tol, weights, trace_tol)
        if not r:  # no signal in the features: rank 0
            self.P, self.z = np.zeros((0, m)), np.zeros(0)
        else:
            # c = P'z = F z: the pivots' equations are lower triangular
            z = sla.solve_triangular(F[piv], c[piv], lower=True, check_finite=False)
            self.P, self.z = np.ascontiguousarray(F.T), z
        self.zz = float(self.z @ self.z)
        self.yty, self.n, self.r = float(yty), int(n), int(len(self.z))
        # the residual's weighted trace (factor_nats); unweighted: no estimate
        self.trace_left: float | None = left if weights is not None else None

    @property
    def nbytes(self) -> int:
        """Bytes of the factor P and z, and of the last factor of A kept with them
        (:func:`_factor`)."""
        out = self.P.nbytes + self.z.nbytes
        last = getattr(self, "_last_factor", None)  # (theta's key, spectral, _factor's)
        if last is not None:
            D, dlog, _, cf = last[2]
            out += D.nbytes + dlog.nbytes + cf[0].nbytes
        return out

    @classmethod
    def from_rows(
        cls, V: np.ndarray, y: np.ndarray, rel_tol: float = 1e-12,
        weights: FeatureWeights | None = None, noise: float | None = None,
        basis: Callable | None = None,
    ) -> Reduced:  # fmt: skip
        """The same kind of factor from the rows (V n x m, n <= m, standardized y), through
        the rows' Gram matrix ``W = V V'`` (weighted: ``V diag(w) V'``, below): its
        pivoted Cholesky factor F (n x r, stopped
        at the threshold of :class:`Reduced`'s rule;
        :func:`rfcli.learn.gpr_factor.rows_pivoted_cholesky` forms only the candidate
        pivots' columns of W) spans its column space, an orthonormal basis Q (n x r) of it
        comes from QR of F, then ``P = Q'V``, ``z = Q'y``, and ``y'y - z'z`` is the residual
        of y off that space, summed directly (no cancellation when the features interpolate
        the targets).  O(n m r) in matrix products, where QR with column pivoting of V
        itself (dgeqp3, half of it matrix-vector work) took 63 s for 2,000 rows of 18,712
        features (docs/gpr.md).

        ``weights`` (:class:`rfcli.learn.gpr_factor.FeatureWeights`, envelope w): F is the
        factor of ``V diag(w) V'``, and still ``P = Q'V``.  With w an upper bound of the
        feature weights D/s^2 over the lengthscales the learning explores
        (:meth:`rfcli.maps.gauss_legendre.GaussLegendreMap.weight_envelope`), what the
        factor leaves out of ``K~ = s^2 V D V'`` is at most s^2 x what it leaves out of ``V
        diag(w) V'`` at every one of them, and the features that carry little of the kernel
        anywhere there take no rank.  The threshold is relative to the kernel matrix's
        scale at the box's corners and centre, the least of them
        (:meth:`rfcli.learn.gpr_factor.FeatureWeights.scale`), as a factor made for that
        lengthscale alone would have it: ggplot2::diamonds ARD's last level, 11,232
        features on 3,000 rows, rank 566 unweighted, 401 weighted (docs/gpr.md, What it
        costs).

        ``basis`` (with weights and a noise): ``basis(t) -> (F, r)``, a factor of the exact
        kernel matrix of the rows' inputs stopped at the trace t
        (:func:`rfcli.learn.gpr_factor.kernel_pivoted_cholesky`), tried first as Q's source
        (:meth:`_from_basis`); the rows' own factor where its span leaves too much."""
        import scipy.linalg as sla

        V = np.asarray(V, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        n, m = V.shape
        trace_tol = trace_tolerance(noise) if weights is not None else 0.0
        if basis is not None and trace_tol > 0:
            out = cls._from_basis(V, y, basis, weights, trace_tol)
            if out is not None:
                return out
        out = cls.__new__(cls)
        F, r, left = rows_pivoted_cholesky(V, rel_tol, weights, trace_tol)  # W ~= F F'
        if r == 0:
            Q = np.zeros((n, 0))
            out.P = np.zeros((0, m))
        else:
            # (P = (R L^-1) V_S from F = Q R and the pivot rows V_S = L O, L = F[pivots],
            # costs 2 r^2 m instead of 2 n r m, but V ~= V_S's projection is a coarser
            # approximation than Q Q'V: 3x the LML's distance to the dense likelihood
            # at noise/signal 1e-6, 10x at 0.05; tried in December 2026, not taken)
            Q = sla.qr(F, mode="economic", check_finite=False)[0]
            out.P = left_product(Q, V)
        # (the residual's trace)
        return out._targets_on(Q, y, left if weights is not None else None)

    def _targets_on(self, Q: np.ndarray, y: np.ndarray, trace_left: float | None) -> Reduced:
        """The targets' part on the rows' basis Q (n x r, P set): ``z = Q'y``, and ``y'y -
        z'z`` as the residual of y off Q's span, summed directly (no cancellation when the
        features interpolate the targets); the rank r and the trace left."""
        self.z = Q.T @ y
        resid = y - Q @ self.z
        self.zz = float(self.z @ self.z)
        self.yty, self.n, self.r = self.zz + float(resid @ resid), len(y), Q.shape[1]
        self.trace_left = trace_left
        return self

    @classmethod
    def _from_basis(cls, V, y, basis: Callable, weights: FeatureWeights, trace_tol: float):
        """:meth:`from_rows` on the span Q of the first columns of ``basis(t)`` (F, r: the
        exact kernel's factor at the level's smallest lengthscales, stopped at the trace t,
        BASIS_SLACK x ``trace_tol`` in the units of the exact kernel's trace n), ``P =
        Q'V``, as few as leave at most ``trace_tol`` of the envelope's trace; None where
        what Q leaves out of the features' envelope, ``sum_k w_k ||v_k - Q Q'v_k||^2 =
        sum_k w_k (g_k - ||p_k||^2)``, exceeds ``trace_tol`` (from_rows then factors the
        rows' own Gram matrix).  That trace, not a pivoted Cholesky's residual trace (of
        which it is at most the sum), is what log det K~ can lose on Q's span
        (docs/methods.md).  The exact kernel's columns cost O(n d) each where the rows'
        Gram matrix's cost O(n m) (ggplot2::txhousing's last level, 3,000 rows of 4,482
        features: the factor step 0.58 against 0.87-0.92 s, 563 columns kept against rank 578)."""
        import scipy.linalg as sla

        w = envelope_of(weights)
        whole = float(w @ column_sq_norms(V))  # tr V diag(w) V'
        if not whole > 0:
            return None
        # (the exact kernel's trace is n: its stop scaled to the envelope's)
        F, r = basis(BASIS_SLACK * trace_tol * len(y) / whole)
        if not r:
            return None
        # what the first k columns of Q leave out is a difference from the whole, exact to
        # about eps whole sqrt(r): a tolerance near that rounding (noise/signal ratios of
        # 1e-9 and below) cannot choose k, and the rows' own factor (stopped at rel_tol
        # too) serves
        floor = 8 * np.finfo(float).eps * whole * np.sqrt(r)
        if not trace_tol > floor:
            return None
        Q = sla.qr(F, mode="economic", check_finite=False)[0]
        out = cls.__new__(cls)
        P = left_product(Q, V)
        # what the first k columns of Q leave out, k = 1..r (they span F's first k)
        lefts = whole - np.cumsum((P * P) @ w)
        if not lefts[-1] <= trace_tol:
            return None
        r = int(np.flatnonzero(lefts <= trace_tol)[0]) + 1  # the fewest that meet it
        out.P = P[:r].copy() if r < len(P) else P  # (not a view that holds the rest)
        return out._targets_on(Q[:, :r], y, max(float(lefts[r - 1]), floor))


#: the log marginal likelihood a weighted rows' factor may lose at the noise/signal ratio the
#: learning is expected to reach (Reduced.from_rows: it stops once the residual's trace is
#: at most FACTOR_NATS x that ratio)
FACTOR_NATS = 1e-3


def trace_tolerance(noise: float | None) -> float:
    """The residual trace at which a weighted rows' factor may stop for the noise/signal
    ratio ``noise`` (FACTOR_NATS x it; 0, no such stop, without a ratio)."""
    return FACTOR_NATS * float(noise) if noise else 0.0


#: m x m float64 matrices a GP fit holds at its peak besides one statistics copy per engine
#: thread: the summed statistics, the factor P and its pivoting work copy, A's factor (in
#: learning, then kept with the level's factor P: _factor; Reduced.nbytes counts it), the
#: posterior's L^-1 P D and covariance.  Beyond them: the tiled products' partial sums
#: (rfcli.learn.tiles: two r x r above 2,048 rows, else up to threads + 2 of at most 32 MB
#: each) and the scan points evaluated at once (within 4 m^2: glf_profile)
GP_MATRICES = 7


def gp_memory_need(m: int, threads: int) -> int:
    """Bytes of the m x m float64 arrays of a GP fit with m features on ``threads`` engine
    threads (each thread sums its own V'V), plus per thread a 32 MiB feature block and the
    temporaries of its Gram products (:func:`rfcli.learn.tiles.gram_temp_bytes`)."""
    t = max(int(threads), 1)
    temps = gram_temp_bytes(m + 2, RidgeStats.SUB_ROWS)
    return 8 * m * m * (t + GP_MATRICES) + ((32 << 20) + temps) * t


def pass_threads(m: int, budget: int, threads: int) -> int:
    """How many of ``threads`` pass threads a GP pass with m features may run at once within
    ``budget`` bytes (at least one): the fit's features, and so its model, never depend on
    the threads; only how many partial sums are held at once does."""
    t = max(int(threads), 1)
    while t > 1 and gp_memory_need(m, t) > budget:
        t -= 1
    return t


def max_gp_nodes(budget: int, threads: int = 1) -> int:
    """The most GLF nodes (2 features each) whose GP fit fits ``budget`` bytes on
    ``threads`` pass threads (the GP job sizes its rule for one: :func:`pass_threads`)."""
    t = max(int(threads), 1)
    free = budget - (32 << 20) * t
    if free <= 0:
        return 0
    nodes = int(np.sqrt(free / (8 * (t + GP_MATRICES))) // 2)
    while nodes > 0 and gp_memory_need(2 * nodes, t) > budget:  # the products' temporaries
        nodes -= max(1, nodes // 200)
    return nodes


def _factor(theta, red: Reduced, spectral: Spectral, gram: np.ndarray | None = None):
    """(D, dlog D, lambda, A's Cholesky factor) at ``theta``.  The last one made is kept
    with ``red``: a level's optimum is factored for the factor's loss estimate, its record's
    LML and the model's posterior, the same arrays each time (a weighted Gram product of r^2
    m flops: 45 ms of ggplot2::txhousing's last level, r = 563, m = 4,482).  ``gram``:
    ``P W P'`` at theta's shape, made already (``A = s2 gram + lambda I``)."""
    import scipy.linalg as sla  # where it computes: a model's predictions need no scipy

    key = np.asarray(theta, dtype=np.float64).tobytes()
    last = getattr(red, "_last_factor", None)
    if gram is None and last is not None and last[0] == key and last[1] is spectral:
        return last[2]
    log_s2, shape, log_lam = theta[0], theta[1 : 1 + spectral.n_shape], theta[-1]
    lam = np.exp(log_lam)
    wp, dlog = spectral.fn(np.exp(shape))
    D = np.exp(log_s2) * wp
    if gram is None:
        # D >= 0: A = P D P' + lambda I by symmetric rank-k products of P sqrt(D) (syrk:
        # half the flops, 2.3x faster at 800 x 1900), on the tile threads
        A = weighted_gram(red.P, D)
    else:
        A = np.exp(log_s2) * gram
    A[np.diag_indices_from(A)] += lam
    cf = sla.cho_factor(A, lower=True, overwrite_a=True, check_finite=False)
    for a in (D, dlog, cf[0]):  # shared by every caller of this theta from now on
        a.setflags(write=False)
    out = D, dlog, lam, cf
    red._last_factor = (key, spectral, out)
    return out


def keep_factor(theta, red: Reduced, spectral: Spectral, gram: np.ndarray) -> None:
    """Keep with ``red`` the factor at ``theta`` made from ``gram``, ``P W P'`` at theta's
    shape (a profiled search's at its optimum), for the factorings that follow
    (:func:`_factor`; none where A is not numerically positive definite there: the
    factorings that follow find that themselves)."""
    try:
        _factor(theta, red, spectral, gram)
    except np.linalg.LinAlgError:
        pass


def lml_terms(theta: np.ndarray, red: Reduced, spectral: Spectral, need_grad=True):
    """The log marginal likelihood's terms (:class:`rfcli.learn.gpr_optimize.LMLTerms`) at
    ``theta = (log s2, log ell..., log lambda)``; None where A is not numerically positive
    definite."""
    try:
        D, dlog, lam, cf = _factor(theta, red, spectral)
    except np.linalg.LinAlgError:
        return None
    import scipy.linalg as sla

    w = sla.cho_solve(cf, red.z, check_finite=False)
    quad = red.z @ w + (red.yty - red.zz) / lam
    logdet = 2 * np.sum(np.log(np.diag(cf[0]))) + (red.n - red.r) * np.log(lam)
    if not need_grad:
        return LMLTerms(quad, logdet, red.n)
    Va = red.P.T @ w  # V'alpha
    from scipy.linalg.lapack import dtrtri

    Linv, _ = dtrtri(np.tril(cf[0]), lower=1)  # triangular inverse: r^3/3 flops, not r^3
    # diag(V'K~^-1 V) = diag(P'A^-1 P) = squared column norms of L^-1 P: a product with the
    # inverse runs on the tile threads (a triangular solve holds the GIL in SciPy)
    diag_VKV = inverse_sq_column_norms(Linv, red.P)
    tr_Kinv = np.sum(Linv * Linv) + (red.n - red.r) / lam
    aa = w @ w + (red.yty - red.zz) / lam**2  # alpha'alpha
    data, trace = np.empty_like(theta), np.empty_like(theta)
    VaD, diagD = Va**2 * D, diag_VKV * D  # dK/dlog s2 = V diag(D) V'
    data[0], trace[0] = VaD.sum(), diagD.sum()
    if spectral.n_shape:
        data[1 : 1 + spectral.n_shape] = VaD @ dlog
        trace[1 : 1 + spectral.n_shape] = diagD @ dlog
    data[-1], trace[-1] = lam * aa, lam * tr_Kinv  # dK/dlog lambda = lambda I
    return LMLTerms(quad, logdet, red.n, data, trace)


def lml_and_grad(theta: np.ndarray, red: Reduced, spectral: Spectral, need_grad=True):
    """Log marginal likelihood and its gradient in ``theta = (log s2, log ell..., log lambda)``."""
    return lml_and_grad_of(lml_terms(theta, red, spectral, need_grad), theta, need_grad)


def glf_objective(red: Reduced, spectral: Spectral) -> Callable:
    """``theta -> LMLTerms`` of the GLF statistics (:func:`lml_terms`), for
    :func:`rfcli.learn.gpr_optimize.fit_hyperparameters`."""
    return lambda theta: lml_terms(theta, red, spectral)


def _mean(D: np.ndarray, cf, red: Reduced) -> np.ndarray:
    """The posterior weight mean ``D P'A^-1 z`` (A's Cholesky factor cf; no copy of P D)."""
    import scipy.linalg as sla

    return D * (red.P.T @ sla.cho_solve(cf, red.z, check_finite=False))


def factor_nats(theta, red: Reduced, spectral: Spectral, V=None, y=None, sums=None):
    """An estimate of the log marginal likelihood that a weighted rows' factor
    (:meth:`Reduced.from_rows` of the rows V, standardized y, its residual's trace t)
    loses at ``theta`` against the kernel of all the features (docs/methods.md, Gaussian-
    process regression: the rows' factor's early stop): half of ``2 s2 t / lambda + |||g||^2
    - 2 b'g| / lambda``, where the kernel's part off the factor's span Q raises log det K by
    at most ``s2 t / lambda`` and lowers the data term by about as much, and the fitted
    function ``f = V mu_w`` (posterior weight mean) has the part ``g = f - Q Q'f`` off it
    that the data term's residual ``b = y - Q Q'y`` meets (``Q'f = P mu_w``, ``b'g = b'f =
    y'f - z'P mu_w``).  One product with V, by row tiles (the same sums on any number of
    threads); for a factor of summed rows (``sums = (G, c)``, G's upper triangle and
    ``c = V'y``) the same terms without V: ``f'f = mu_w'G mu_w`` and ``y'f = c'mu_w``.
    None for a factor without weights."""
    if red.trace_left is None:
        return None
    D, _, lam, cf = _factor(theta, red, spectral)
    mean = _mean(D, cf, red)
    Pm = red.P @ mean
    if sums is not None:
        from scipy.linalg.blas import dsymv

        G, c = sums  # G.T: Fortran order, its lower triangle G's upper one (no copy)
        ff, yf = float(mean @ dsymv(1.0, np.asarray(G).T, mean, lower=1)), float(c @ mean)
    else:
        f = rows_product(V, mean[None, :])[:, 0]
        ff, yf = float(np.sum(f * f)), float(np.sum(y * f))
    bg = yf - float(np.sum(red.z * Pm))
    gg = max(ff - float(np.sum(Pm * Pm)), 0.0)
    s2 = float(np.exp(theta[0]))
    return 0.5 * (2 * s2 * red.trace_left / lam + abs(gg - 2 * bg) / lam)


def posterior(theta, red: Reduced, spectral: Spectral):
    """Weight posterior N(mu_w, Sigma_w) with prior N(0, D) and noise lambda:
    ``Sigma_w = (D^-1 + G/lambda)^-1 = D - X'X`` with ``X = L^-1 P D`` (r x m, A = L L')
    and ``mu_w = D P'A^-1 z``.  Returns (mu_w, (D, X), lambda): Sigma_w as its factors, r x m
    instead of m x m (r = rank of G <= n)."""
    from scipy.linalg.lapack import dtrtri

    D, _, lam, cf = _factor(theta, red, spectral)
    PD = red.P * D
    mean = _mean(D, cf, red)
    # L^-1 P D through the triangular inverse, on the tile threads (SciPy's triangular
    # solve holds the GIL: one thread, 0.12 s of diamonds ARD's fit at 571 x 11,232)
    Linv, _ = dtrtri(np.tril(cf[0]), lower=1)
    X = lower_product(Linv, PD)
    return mean, (D, X), lam


@MODELS.register("gpr")
class GPRModel(LinearModel):
    """Predictive mean ``v(x)'mu_w`` and variance ``v(x)'Sigma_w v(x) + lambda`` (y units),
    with ``Sigma_w = diag(cov_diag) - cov_factor' cov_factor`` (:func:`posterior`).  Older
    model files hold Sigma_w itself (``cov``, m x m); they load and predict as before.
    ``prior``: a constant added to the variance, the exact GP's prior variance s2 (its
    features are the kernel against the training rows, ``cov_diag`` 0 and ``cov_factor``
    s2 L^-1: rfcli.learn.gpr_exact); 0 for feature-space models.  ``cov_band`` (with
    ``cov_scale``): the exact GP of a series keeps K's band Cholesky factor L instead, and
    ``cov_factor`` is ``cov_scale L^-1``, applied by a band solve."""

    kind = "gpr"

    def __init__(self, targets, W, b, normalized, info=None, cov=None, noise=0.0,
                 cov_diag=None, cov_factor=None, prior=0.0, cov_band=None,
                 cov_scale=1.0):  # fmt: skip
        super().__init__(targets, W, b, normalized, info)
        self.prior = float(prior)
        self.cov_band = None if cov_band is None else np.asarray(cov_band, dtype=np.float64)
        self.cov_scale = float(cov_scale)
        self.cov = None if cov is None else np.asarray(cov, dtype=np.float64)
        self.cov_diag = None if cov_diag is None else np.asarray(cov_diag, dtype=np.float64)
        self.cov_factor = None if cov_factor is None else np.asarray(cov_factor, np.float64)
        self.noise = float(noise)

    def _factor_product(self, F: np.ndarray) -> np.ndarray:
        """``F cov_factor'``; with ``cov_band``: ``cov_scale (L^-1 F')'`` by a band solve."""
        if self.cov_band is None:
            return F @ self.cov_factor.T
        import scipy.linalg as sla  # a band factor's model only (the exact GP of a series)

        b = len(self.cov_band) - 1  # LAPACK lower band storage is solve_banded's (b, 0) form
        out = sla.solve_banded((b, 0), self.cov_band, F.T, check_finite=False).T
        out *= self.cov_scale
        return out

    def covariance(self) -> np.ndarray:
        """Sigma_w (m x m, y units)."""
        if self.cov is not None:
            return self.cov
        X = self.cov_factor
        if self.cov_band is not None:
            X = self._factor_product(np.eye(len(self.cov_diag))).T
        return np.diag(self.cov_diag) - X.T @ X

    def std(self, F: np.ndarray) -> np.ndarray:
        F = np.asarray(F, dtype=np.float64)
        if self.cov is not None:
            var = np.einsum("ij,ij->i", F @ self.cov, F)
        else:
            FX = self._factor_product(F)
            var = (F * F) @ self.cov_diag - np.einsum("ij,ij->i", FX, FX)
        return np.sqrt(np.maximum(var + (self.prior + self.noise), 0.0))

    def to_state(self):
        cfg, arrays = super().to_state()
        cfg["noise"] = self.noise
        if self.prior:
            cfg["prior"] = self.prior
        if self.cov is not None:
            arrays["cov"] = self.cov
        elif self.cov_band is not None:
            arrays["cov_diag"], arrays["cov_band"] = self.cov_diag, self.cov_band
            cfg["cov_scale"] = self.cov_scale
        else:
            arrays["cov_diag"], arrays["cov_factor"] = self.cov_diag, self.cov_factor
        return cfg, arrays

    @classmethod
    def _extra(cls, cfg, arrays):
        return {
            "cov": arrays.get("cov"),
            "cov_diag": arrays.get("cov_diag"),
            "cov_factor": arrays.get("cov_factor"),
            "noise": cfg.get("noise", 0.0),
            "prior": cfg.get("prior", 0.0),
            "cov_band": arrays.get("cov_band"),
            "cov_scale": cfg.get("cov_scale", 1.0),
        }


def glf_spectral(fmap, ard: bool) -> Spectral:
    """D's dependence on the lengthscale(s) for a fitted GaussLegendreMap."""
    from rfcli.maps.glf_rules import dlog_density_dlog_ell

    d = fmap.n_inputs_

    def fn(ell):
        ell_full = np.broadcast_to(ell, (d,)) if not ard else ell
        wp = fmap.weights(ell_full)
        dl = dlog_density_dlog_ell(fmap.kernel_name, fmap.H_, np.asarray(ell_full, dtype=float))
        if not ard:
            dl = dl.sum(axis=1, keepdims=True)
        return wp, np.vstack([dl, dl])

    return Spectral(d if ard else 1, fn)


def constant_spectral(m: int) -> Spectral:
    """Fixed features (RFF-GPR): D = s^2 for every feature."""
    return Spectral(0, lambda ell: (np.ones(m), np.zeros((m, 0))))
