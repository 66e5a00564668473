import numpy as np
import pytest

from rfcli.metrics import kernel_errors


def test_kernel_errors_against_direct_formulas():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(30, 5))
    K = A @ A.T
    N = rng.normal(size=K.shape)
    K_hat = 0.8 * K + 0.01 * (N + N.T)
    e = kernel_errors(K, K_hat)
    assert e["rel_frobenius"] == pytest.approx(np.sqrt(((K - K_hat) ** 2).sum() / (K**2).sum()))
    assert e["rel_spectral"] == pytest.approx(
        np.abs(np.linalg.eigvalsh(K - K_hat)).max() / np.linalg.eigvalsh(K).max(), rel=1e-9
    )
    # the best scale undoes the 0.8 shrinkage
    assert e["beta_frobenius"] == pytest.approx(1 / 0.8, rel=1e-2)
    assert e["rel_frobenius_scaled"] < 0.2 * e["rel_frobenius"]
    assert kernel_errors(K, K)["rel_frobenius"] == 0.0
