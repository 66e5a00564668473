"""Kernel-approximation metrics (SPEC section 4).

For an exact kernel matrix K and an estimate K_hat on the same rows:
relative Frobenius ``||K - K_hat||_F / ||K||_F``, relative spectral
``||K - K_hat||_2 / ||K||_2``, and the scale-invariant Frobenius error with the best
scale ``beta_F = <K, K_hat>_F / ||K_hat||_F^2`` (seed 000, Definition 5.1), which does
not penalize LM quantizers for their known shrinkage toward 0.
"""

from __future__ import annotations

import numpy as np


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
