"""Kernel ridge regression on random features, exact from streamed statistics
(docs/methods.md, Learners).

``min_w,b ||Phi w + b - Y||^2 + alpha ||w||^2`` (intercept not penalized).  One pass
accumulates in float64 ``G = Phi'Phi`` (BLAS syrk), ``Phi'Y``, column sums, ``Y'Y`` and n;
the solution is ``W = (G_c + alpha I)^{-1} Phi_c'Y`` by Cholesky on the centred
statistics.  Classification uses one-hot targets and predicts the arg-max.

``alpha='auto'``: the same pass keeps separate statistics for a validation split (rows
chosen by a hash of the row index); every candidate alpha is solved from the training
statistics, scored on the validation split (regression: MSE from the statistics alone;
classification: accuracy, from one pass over the validation rows for all candidates
at once), then refitted on all rows.  Memory O(m^2), no pass per candidate.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from scipy.linalg.blas import dsyrk

from rfcli.errors import UsageError
from rfcli.learn.linear import MODELS, LinearModel

ALPHA_GRID = 10.0 ** np.arange(-7, 2)  # relative to trace(G_c)/m


class RidgeStats:
    """Sufficient statistics of a least-squares problem, float64.

    One symmetric rank-k update per block of rows: with ``A = [F, Y, 1]`` (features,
    targets, a column of ones), ``S += A'A`` (BLAS dsyrk, upper triangle) holds ``F'F``,
    ``F'Y``, the column sums of F and Y, ``Y'Y`` and n at once.  (Separate numpy products
    for ``F'Y`` between the syrk calls made the syrk itself about twice as slow with
    OpenBLAS; one call is also fewer passes over the rows.)"""

    #: rows widened to float64 at a time (bounds the temporary copy: 8 MiB at m = 1024)
    SUB_ROWS = 1024

    def __init__(self, m: int, k: int):
        self.m, self.k = m, k
        self.n = 0
        self.S = np.zeros((m + k + 1, m + k + 1), order="F")  # upper triangle by syrk

    def update(self, F: np.ndarray, Y: np.ndarray) -> None:
        """Add rows (float32 or float64 features F, targets Y of shape (n, k))."""
        if len(F) == 0:
            return
        m, k = self.m, self.k
        buf = np.empty((min(self.SUB_ROWS, len(F)), m + k + 1))
        buf[:, m + k] = 1.0
        for i in range(0, len(F), self.SUB_ROWS):
            rows = min(self.SUB_ROWS, len(F) - i)
            A = buf[:rows]
            A[:, :m] = F[i : i + rows]
            A[:, m : m + k] = Y[i : i + rows]
            # A.T is a Fortran-ordered view of the C-ordered rows: BLAS reads it in place
            # (trans=1 on A itself makes scipy copy it first)
            self.S = dsyrk(1.0, A.T, beta=1.0, c=self.S, trans=0, overwrite_c=1)
        self.n += len(F)

    def __iadd__(self, other: RidgeStats) -> RidgeStats:
        self.S = self.S + other.S
        self.n += other.n
        return self

    def __add__(self, other: RidgeStats) -> RidgeStats:
        out = RidgeStats(self.m, self.k)
        out.S, out.n = self.S + other.S, self.n + other.n
        return out

    # views of the statistics (all in S's upper triangle)
    @property
    def G(self) -> np.ndarray:
        """``F'F``, upper triangle valid."""
        return self.S[: self.m, : self.m]

    @property
    def FtY(self) -> np.ndarray:
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


def alpha_candidates(Gc: np.ndarray) -> np.ndarray:
    return ALPHA_GRID * max(np.trace(Gc) / len(Gc), 1e-12)
