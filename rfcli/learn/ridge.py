"""Kernel ridge regression on random features, exact from streamed statistics
(docs/methods.md, Learners).

``min_w,b ||Phi w + b - Y||^2 + alpha ||w||^2`` (intercept not penalized).  One pass
accumulates ``G = Phi'Phi`` (float32 block products of shifted rows added into float64,
see :class:`RidgeStats`), ``Phi'Y``, column sums, ``Y'Y`` and n; the solution is
``W = (G_c + alpha I)^{-1} Phi_c'Y`` by Cholesky on the centred statistics.
Classification uses one-hot targets and predicts the arg-max.

``alpha='auto'`` (rfcli.jobs.train): the same pass keeps statistics per cross-validation
fold; a fold's training statistics are the total minus the fold's, every candidate alpha
is solved from them and scored on the fold (regression: MSE from the statistics alone;
classification: accuracy, from one pass for all candidates at once), then refitted on
all rows.  Memory O(folds m^2), no pass per candidate.
"""

from __future__ import annotations

import numpy as np

from rfcli.errors import UsageError
from rfcli.learn.linear import MODELS, LinearModel
from rfcli.learn.tiles import add_upper_gram

ALPHA_GRID = 10.0 ** np.arange(-7, 2)  # relative to trace(G_c)/m


class RidgeStats:
    """Sufficient statistics of a least-squares problem, float64.

    ``S`` holds in its upper triangle, for ``A = [F, Y, 1]`` (features, targets, a column
    of ones), ``A'A``: ``F'F``, ``F'Y``, the column sums of F and Y, ``Y'Y`` and n.

    float32 features (what a store decodes to) take the fast path: per block of rows, one
    float32 ``syrk`` of ``[F - mu, Y - c]`` (NumPy's ``A.T @ A``, which releases the GIL:
    SciPy's ``ssyrk`` wrapper holds it, and the passes' threads would take turns), the
    rows shifted by a fixed centre
    (``mu``, ``c``: the first block's means), added into the float64 statistics; the
    column sums and ``Y'Y`` are float64 sums, and the terms the shift leaves out
    (``s mu' + mu s' + n mu mu'``, with s the sums of the shifted rows) are added once,
    when the statistics are read.  The float32 syrk does half the FLOPs of the ``F'F``
    GEMM and runs at twice the rate of the float64 one; the shift keeps float32 rounding relative to
    the spread of the data, not to its mean (features of a smooth kernel are nearly
    constant, targets such as CO2 concentrations sit far from 0), where float64 sums
    would otherwise be needed.  float64 features (exact GP-style statistics) add the upper
    triangle of ``A'A`` per block by column-tile products
    (:func:`rfcli.learn.tiles.add_upper_gram`)."""

    #: rows widened to float64 at a time (bounds the temporary copy: 8 MiB at m = 1024)
    SUB_ROWS = 1024
    #: rows of one float32 block product (float32 sums over more rows lose precision)
    SUB_ROWS32 = 8192

    def __init__(self, m: int, k: int):
        self.m, self.k = m, k
        self.n = 0
        self.S = np.zeros((m + k + 1, m + k + 1), order="F")  # upper triangle by syrk
        self._mu: np.ndarray | None = None  # float32 (m,): the features' shift
        self._c: np.ndarray | None = None  # float64 (k,): the targets' shift
        self._pending = None  # (sums of shifted F, of shifted Y, rows) not yet in S
        self._buf, self._fill = None, 0  # shifted rows waiting for their block product
        #: the most rows one float32 block product summed (0: none; see :func:`alpha_floor`)
        self.block_rows = 0

    def update(self, F: np.ndarray, Y: np.ndarray) -> None:
        """Add rows (float32 or float64 features F, targets Y of shape (n, k))."""
        if len(F) == 0:
            return
        if F.dtype == np.float32:
            for i in range(0, len(F), self.SUB_ROWS32):
                self._update32(F[i : i + self.SUB_ROWS32], Y[i : i + self.SUB_ROWS32])
            self.n += len(F)
            return
        m, k = self.m, self.k
        buf = np.empty((min(self.SUB_ROWS, len(F)), m + k + 1))
        buf[:, m + k] = 1.0
        for i in range(0, len(F), self.SUB_ROWS):
            rows = min(self.SUB_ROWS, len(F) - i)
            A = buf[:rows]
            A[:, :m] = F[i : i + rows]
            A[:, m : m + k] = Y[i : i + rows]
            add_upper_gram(self.S, A)
        self.n += len(F)

    def _update32(self, F: np.ndarray, Y: np.ndarray) -> None:
        m, k, R = self.m, self.k, len(F)
        Y = np.asarray(Y, dtype=np.float64)
        sF = np.add.reduce(F, axis=0, dtype=np.float64)
        sY = Y.sum(axis=0)
        if self._mu is None:
            self._mu = (sF / R).astype(np.float32)
            self._c = sY / R
            self._pending = (np.zeros(m), np.zeros(k), 0)
        if self._buf is None:  # (released when the statistics are settled)
            self._buf = np.empty((self.SUB_ROWS32, m + k), dtype=np.float32)
            self._fill = 0
        S = self.S
        S[m : m + k, m : m + k] += Y.T @ Y
        S[:m, m + k] += sF
        S[m : m + k, m + k] += sY
        S[m + k, m + k] += R
        ps, py, pn = self._pending
        self._pending = (ps + (sF - R * self._mu.astype(np.float64)), py + (sY - R * self._c),
                         pn + R)  # fmt: skip
        # the shifted rows go through a buffer of SUB_ROWS32 rows: one large syrk per
        # buffer, whatever the batch size
        i = 0
        while i < R:
            take = min(R - i, self.SUB_ROWS32 - self._fill)
            rows = self._buf[self._fill : self._fill + take]
            np.subtract(F[i : i + take], self._mu, out=rows[:, :m])
            rows[:, m:] = Y[i : i + take] - self._c
            self._fill += take
            i += take
            if self._fill == self.SUB_ROWS32:
                self._product()

    def _product(self) -> None:
        """Add the buffered shifted rows' ``[F-mu, Y-c]'[F-mu, Y-c]`` (upper triangle)."""
        if not self._fill:
            return
        A = self._buf[: self._fill]
        self.block_rows = max(self.block_rows, self._fill)
        # NumPy computes A'A of one buffer by syrk (and mirrors it) with the GIL released,
        # where SciPy's ssyrk wrapper holds it: the passes' threads would take turns
        C = A.T @ A
        # C is exactly symmetric (syrk's mirror): its columns added as S's rows walk S's
        # column-major order, the same numbers (add_upper_gram)
        self.S[: self.m, : self.m + self.k] += C[:, : self.m].T
        self._fill = 0

    def finish(self) -> RidgeStats:
        """Settle the statistics at the end of a pass over their rows (the row buffer is
        released: a part waiting to be added holds its m x m sums only)."""
        self._settle()
        return self

    def _settle(self) -> None:
        """Add the terms the shift left out: with s = sum(F - mu), t = sum(Y - c) and r rows,
        ``F'F = (F-mu)'(F-mu) + s mu' + mu s' + r mu mu'`` and
        ``F'Y = (F-mu)'(Y-c) + s c' + mu t' + r mu c'``."""
        if self._pending is None or self._pending[2] == 0:
            return
        self._product()
        self._buf = None  # the rows' buffer (SUB_ROWS32 x (m + k) float32): not kept with S
        s, t, r = self._pending
        m, k = self.m, self.k
        mu, c = self._mu.astype(np.float64), self._c
        a = s + 0.5 * r * mu
        self.S[:m, :m] += np.outer(a, mu)  # (one m x m temporary at a time)
        self.S[:m, :m] += np.outer(mu, a)
        self.S[:m, m : m + k] += np.outer(s + r * mu, c) + np.outer(mu, t)
        self._pending = (np.zeros(m), np.zeros(k), 0)

    def __iadd__(self, other: RidgeStats) -> RidgeStats:
        self._settle()
        other._settle()
        self.S = self.S + other.S
        self.n += other.n
        self.block_rows = max(self.block_rows, other.block_rows)
        return self

    def __add__(self, other: RidgeStats) -> RidgeStats:
        self._settle()
        other._settle()
        out = RidgeStats(self.m, self.k)
        out.S, out.n = self.S + other.S, self.n + other.n
        out.block_rows = max(self.block_rows, other.block_rows)
        return out

    def __getstate__(self):  # sent to and from Dask workers settled, without the buffer
        self._settle()
        return {k: v for k, v in self.__dict__.items() if k not in ("_buf", "_fill")}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._buf, self._fill = None, 0  # (made at the next float32 update)

    # views of the statistics (all in S's upper triangle)
    @property
    def G(self) -> np.ndarray:
        """``F'F``, upper triangle valid."""
        self._settle()
        return self.S[: self.m, : self.m]

    @property
    def FtY(self) -> np.ndarray:
        self._settle()
        return self.S[: self.m, self.m : self.m + self.k]

    @property
    def sF(self) -> np.ndarray:
        return self.S[: self.m, self.m + self.k]

    @property
    def sY(self) -> np.ndarray:
        return self.S[self.m : self.m + self.k, self.m + self.k]

    @property
    def YtY(self) -> np.ndarray:
        B = self.S[self.m : self.m + self.k, self.m : self.m + self.k]
        return np.triu(B) + np.triu(B, 1).T

    def gram(self) -> np.ndarray:
        return np.triu(self.G) + np.triu(self.G, 1).T

    def centred(self):
        G = self.gram()
        if self.n == 0:
            return G, np.array(self.FtY)
        mF, mY = self.sF / self.n, self.sY / self.n
        return G - self.n * np.outer(mF, mF), self.FtY - self.n * np.outer(mF, mY)

    def solve(self, alpha: float, Gc=None, FtYc=None) -> tuple[np.ndarray, np.ndarray]:
        if Gc is None:
            Gc, FtYc = self.centred()
        import scipy.linalg as sla

        A = Gc + alpha * np.eye(len(Gc))
        try:
            W = sla.cho_solve(
                sla.cho_factor(A, lower=False, check_finite=False), FtYc, check_finite=False
            )
        except np.linalg.LinAlgError:
            raise UsageError(
                f"ridge: Phi'Phi + alpha I is not positive definite at alpha={alpha:g}; "
                "use a larger alpha"
            ) from None
        b = (self.sY - self.sF @ W) / max(self.n, 1)
        return W, b

    def sse(self, W: np.ndarray, b: np.ndarray) -> float:
        """sum_i ||y_i - W'phi_i - b||^2 from the statistics alone."""
        G = self.gram()
        return float(
            np.trace(self.YtY)
            - 2 * np.sum(W * self.FtY)
            - 2 * b @ self.sY
            + np.sum(W * (G @ W))
            + 2 * b @ (self.sF @ W)
            + self.n * b @ b
        )


@MODELS.register("krr")
class RidgeModel(LinearModel):
    """Kernel ridge regression / ridge classification on random features."""

    kind = "krr"


def alpha_grid(scale: float, floor: float = 0.0) -> np.ndarray:
    """The alpha candidates ``ALPHA_GRID * scale`` (scale: ``trace(Phi_c'Phi_c) / m``)."""
    return ALPHA_GRID * max(scale, 1e-12)


#: the smallest alpha, as a multiple of the estimated float32 error of the Gram matrix
#: (:func:`alpha_floor`): the weights then move by about a tenth of the error's ratio to
#: alpha at most, measured 0.3-0.8% (smooth Gaussian features, m = 128-512, n = 16k-40k)
FLOOR_FACTOR = 10.0


def alpha_floor(stats: RidgeStats) -> float:
    """The smallest alpha the float32 statistics can resolve: ``FLOOR_FACTOR * u *
    sqrt(R) * scale`` (u = 2^-24, R the most rows one float32 block product can sum:
    ``min(SUB_ROWS32, n)``, scale =
    ``trace(G_c) / m``; 0 for float64 statistics).

    A float32 sum of R products of shifted features rounds each Gram entry by about
    ``u sqrt(R)`` times its diagonal's size (a random walk of R roundings; the blocks are
    added in float64), and the error matrix's spectral norm is of that order relative to
    ``trace(G_c)/m``: measured 1.0-1.7e-6 against ``u sqrt(8192) = 5.4e-6`` on smooth
    Gaussian features (m = 128-512, n = 16k-40k) and 7.6e-6 on diamonds' (m = 512).  An alpha
    below it solves the rounding: at ``1e-7 * scale`` the weights were 3.5-70x off the
    exact statistics' solution, at ``1e-5 * scale`` 2-7% off, at ``1e-4 * scale`` 0.3-0.8%."""
    if stats.block_rows == 0:
        return 0.0
    # R: the most rows a block product can hold, not the most one held, which depends on how
    # an engine grouped the rows (the local engine's row groups, Dask's slices): the same
    # floor, so the same alpha grid, on every engine
    R = min(stats.SUB_ROWS32, stats.n)
    return FLOOR_FACTOR * 2.0**-24 * float(np.sqrt(R)) * _scale(stats)


def _scale(stats: RidgeStats) -> float:
    Gc = stats.centred()[0]
    return max(float(np.trace(Gc)) / len(Gc), 1e-12)


def alpha_candidates(stats: RidgeStats, floored: bool = True) -> np.ndarray:
    """The alpha grid of the statistics (``ALPHA_GRID * trace(G_c)/m``), with ``floored``
    the candidates below :func:`alpha_floor` replaced by the floor itself."""
    grid = alpha_grid(_scale(stats))
    floor = alpha_floor(stats) if floored else 0.0
    if grid[0] >= floor:
        return grid
    return np.concatenate([[floor], grid[grid > floor]])
