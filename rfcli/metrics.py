"""Kernel-approximation metrics (docs/methods.md, Evaluation metrics).

For an exact kernel matrix K and an estimate K_hat on the same rows:
relative Frobenius ``||K - K_hat||_F / ||K||_F``, relative spectral
``||K - K_hat||_2 / ||K||_2``, and the scale-invariant Frobenius error with the best
scale ``beta_F = <K, K_hat>_F / ||K_hat||_F^2`` (Li & Li, "Quantization algorithms for
random Fourier features", ICML 2021, Definition 5.1), which does not penalize LM
quantizers for their known shrinkage toward 0.
"""

from __future__ import annotations

import numpy as np

from rfcli.maps.preprocess import merged_moments


def kernel_errors(K: np.ndarray, K_hat: np.ndarray) -> dict[str, float]:
    K = np.asarray(K, dtype=np.float64)
    K_hat = np.asarray(K_hat, dtype=np.float64)
    if K.shape != K_hat.shape or K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(
            f"kernel matrices must be square and alike, got {K.shape} and {K_hat.shape}"
        )
    E = K - K_hat
    fro_K = np.linalg.norm(K)
    spec_K = np.linalg.norm(K, 2)
    beta_f = float(np.vdot(K, K_hat) / np.vdot(K_hat, K_hat)) if np.any(K_hat) else 1.0
    return {
        "rel_frobenius": float(np.linalg.norm(E) / fro_K),
        "rel_spectral": float(np.linalg.norm(E, 2) / spec_K),
        "beta_frobenius": beta_f,
        "rel_frobenius_scaled": float(np.linalg.norm(K - beta_f * K_hat) / fro_K),
    }


def _sym_eig_extremes(M: np.ndarray) -> tuple[float, float]:
    e = np.linalg.eigvalsh((M + M.T) / 2)
    return float(e[0]), float(e[-1])


def spectral_approximation(K: np.ndarray, K_hat: np.ndarray, lam: float) -> dict[str, float]:
    """The spectral approximation of Zhang et al. (AISTATS 2019), as in Li & Li (ICML 2021,
    Section 5.3), and Han et al.'s condition number (arXiv:2104.01351, 2021): with
    ``A = K + lam I`` and ``M(beta) = A^{-1/2} (beta K_hat + lam I) A^{-1/2}``,
    ``Delta1 = 1 - e_min``, ``Delta2 = e_max - 1`` at beta = 1, ``delta2* = min_beta
    max(Delta1, Delta2)``, and the condition number of M(1)."""
    from scipy.optimize import minimize_scalar

    K = np.asarray(K, dtype=np.float64)
    K_hat = np.asarray(K_hat, dtype=np.float64)
    e, U = np.linalg.eigh(K)
    inv_sqrt = (U / np.sqrt(np.maximum(e, 0.0) + lam)) @ U.T
    B = inv_sqrt @ K_hat @ inv_sqrt
    Ainv = inv_sqrt @ inv_sqrt

    def extremes(beta):
        return _sym_eig_extremes(beta * B + lam * Ainv)

    lo, hi = extremes(1.0)

    def worst(beta):
        a, b = extremes(beta)
        return max(1 - a, b - 1)

    opt = minimize_scalar(worst, bounds=(1e-3, 1e3), method="bounded", options={"xatol": 1e-4})
    return {
        "lambda": lam,
        "delta1": 1 - lo,
        "delta2": hi - 1,
        "delta2_star": float(min(opt.fun, max(1 - lo, hi - 1))),
        "beta_delta": float(opt.x),
        "condition_number": hi / lo if lo > 0 else float("inf"),
    }


def scaled_spectral_error(K: np.ndarray, K_hat: np.ndarray) -> tuple[float, float]:
    """``min_beta ||K - beta K_hat||_2 / ||K||_2`` (1-D minimisation) and the best beta."""
    from scipy.optimize import minimize_scalar

    spec = np.linalg.norm(K, 2)

    def err(beta):
        lo, hi = _sym_eig_extremes(K - beta * K_hat)
        return max(abs(lo), abs(hi))

    opt = minimize_scalar(err, bounds=(1e-3, 1e3), method="bounded", options={"xatol": 1e-4})
    return float(min(opt.fun, err(1.0)) / spec), float(opt.x)


class ClassificationAccumulator:
    """Streaming accuracy and macro-F1 from per-class counts (additive: partial results of
    row slices sum to the whole)."""

    def __init__(self, n_classes: int):
        self.n = self.correct = 0
        self.tp = np.zeros(n_classes, dtype=np.int64)
        self.fp = np.zeros(n_classes, dtype=np.int64)
        self.fn = np.zeros(n_classes, dtype=np.int64)

    def update(self, true_idx: np.ndarray, pred_idx: np.ndarray) -> None:
        true_idx, pred_idx = np.asarray(true_idx), np.asarray(pred_idx)
        K = len(self.tp)
        hit = true_idx == pred_idx
        self.n += len(true_idx)
        self.correct += int(hit.sum())
        self.tp += np.bincount(pred_idx[hit], minlength=K)[:K]
        self.fp += np.bincount(pred_idx[~hit], minlength=K)[:K]
        t = true_idx[~hit]
        self.fn += np.bincount(t[t >= 0], minlength=K)[:K]

    def __add__(self, other: ClassificationAccumulator) -> ClassificationAccumulator:
        out = ClassificationAccumulator(len(self.tp))
        out.n, out.correct = self.n + other.n, self.correct + other.correct
        out.tp, out.fp, out.fn = self.tp + other.tp, self.fp + other.fp, self.fn + other.fn
        return out

    def result(self) -> dict[str, float]:
        acc = self.correct / self.n if self.n else float("nan")
        seen = (self.tp + self.fp + self.fn) > 0
        f1 = 2 * self.tp[seen] / (2 * self.tp[seen] + self.fp[seen] + self.fn[seen])
        return {"accuracy": acc, "macro_f1": float(np.mean(f1)) if seen.any() else float("nan")}


class RegressionAccumulator:
    """Streaming MSE, RMSE and R^2 (float64).  The targets' variance is kept as a count, a
    mean and the sum of squared deviations from it, each chunk's from its own mean and the
    parts combined by Chan, Golub & LeVeque's update ("Algorithms for computing the sample
    variance", The American Statistician 1983; rfcli.maps.preprocess.merged_moments, as the
    standardization's column statistics): sums of y and y^2 lose a target's digits
    below its offset (y = 1e9 + sin x: the variance 0.44 came out 0 or negative, and R^2
    NaN)."""

    def __init__(self):
        self.n = 0
        self.sse = 0.0
        self.mean = 0.0  # of the targets
        self.m2 = 0.0  # sum of the targets' squared deviations from their mean

    def __add__(self, other: RegressionAccumulator) -> RegressionAccumulator:
        out = RegressionAccumulator()
        out.n, out.sse = self.n + other.n, self.sse + other.sse
        out.mean, out.m2 = merged_moments(self.n, self.mean, self.m2, other.n, other.mean,
                                           other.m2)  # fmt: skip
        return out

    def update(self, y: np.ndarray, pred: np.ndarray) -> None:
        y = np.asarray(y, dtype=np.float64)
        if not len(y):
            return
        self.sse += float(np.sum((y - pred) ** 2))
        mean = float(y.mean())
        m2 = float(np.sum((y - mean) ** 2))
        self.mean, self.m2 = merged_moments(self.n, self.mean, self.m2, len(y), mean, m2)
        self.n += len(y)

    def result(self) -> dict[str, float]:
        if not self.n:
            return {"mse": float("nan"), "rmse": float("nan"), "r2": float("nan")}
        mse = self.sse / self.n
        var = self.m2 / self.n
        return {
            "mse": mse,
            "rmse": float(np.sqrt(mse)),
            "r2": 1 - mse / var if var > 0 else float("nan"),
        }


def gaussian_nlpd_sum(y: np.ndarray, mean: np.ndarray, std: np.ndarray) -> float:
    """Sum over rows of the negative log predictive density of N(mean, std^2) at y."""
    var = np.maximum(np.asarray(std, dtype=np.float64) ** 2, 1e-300)
    return float(np.sum(0.5 * np.log(2 * np.pi * var) + (y - mean) ** 2 / (2 * var)))
