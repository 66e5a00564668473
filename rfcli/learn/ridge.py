"""Kernel ridge regression on random features (SPEC 3.2), exact from streamed statistics.

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
    """Sufficient statistics of a least-squares problem, float64."""

    def __init__(self, m: int, k: int):
        self.n = 0
        self.G = np.zeros((m, m), order="F")  # upper triangle filled by syrk
        self.FtY = np.zeros((m, k))
        self.sF = np.zeros(m)
        self.sY = np.zeros(k)
        self.YtY = np.zeros((k, k))

    #: rows converted to float64 at a time (bounds the temporary copy: 8 MiB at m = 1024)
    SUB_ROWS = 1024

    def update(self, F: np.ndarray, Y: np.ndarray) -> None:
        """Add rows: ``G += F'F`` (upper triangle, BLAS dsyrk: half the FLOPs of a GEMM),
        ``F'Y``, sums.  float32 features are widened to float64 in sub-blocks."""
        if len(F) == 0:
            return
        for i in range(0, len(F), self.SUB_ROWS):
            F64 = np.asarray(F[i : i + self.SUB_ROWS], dtype=np.float64)
            Yb = Y[i : i + self.SUB_ROWS]
            self.G = dsyrk(1.0, F64, beta=1.0, c=self.G, trans=1, overwrite_c=1)
            self.FtY += F64.T @ Yb
            self.sF += F64.sum(0)
        self.sY += Y.sum(0)
        self.YtY += Y.T @ Y
        self.n += len(F)

    def __iadd__(self, other: RidgeStats) -> RidgeStats:
        self.G = self.G + other.G
        self.FtY += other.FtY
        self.sF += other.sF
        self.sY += other.sY
        self.YtY += other.YtY
        self.n += other.n
        return self

    def gram(self) -> np.ndarray:
        return np.triu(self.G) + np.triu(self.G, 1).T

    def centred(self):
        G = self.gram()
        if self.n == 0:
            return G, self.FtY.copy()
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
                "use a larger --alpha"
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
