"""The GP's tiled products: the same bits on any number of threads, and the products they
stand for."""

import numpy as np
import pytest

from rfcli.learn import tiles
from rfcli.threads import tile_threads


@pytest.fixture
def mats():
    rng = np.random.default_rng(3)
    P = rng.standard_normal((70, 2600))  # three column tiles, the last one narrow
    V = rng.standard_normal((1100, 300))  # three row tiles
    w = rng.uniform(0, 2, 2600)
    A = P @ P.T / 2600 + np.eye(70)
    L = np.linalg.cholesky(A)
    return P, V, w, np.linalg.inv(L)


def _all(P, V, w, Linv):
    return {
        "weighted": tiles.weighted_gram(P, w),
        "plain": tiles.weighted_gram(P),
        "rows": tiles.rows_product(V, V[:70]),
        "columns": tiles.gram_columns(V, np.arange(1100)[::-2]),  # 550 rows: two tiles
        "left": tiles.left_product(V[:, :40], V),
        "norms": tiles.column_sq_norms(V),
        "inverse": tiles.inverse_sq_column_norms(Linv, P),
        "upper": _upper_gram(P[:, :1100]),
    }


def _upper_gram(A):
    S = np.ones((A.shape[1], A.shape[1]))  # added into, as a pass's statistics are
    tiles.add_upper_gram(S, A)
    return np.triu(S)


def test_tiled_products_are_bit_identical_on_1_2_and_5_threads(mats):
    with tile_threads(1):
        ref = _all(*mats)
    for t in (2, 5):
        with tile_threads(t):
            out = _all(*mats)
        for k, v in ref.items():
            assert np.array_equal(out[k], v), (t, k)
    assert np.array_equal(_all(*mats)["weighted"], ref["weighted"])  # no block: the caller


def test_tiled_products_compute_what_they_stand_for(mats):
    P, V, w, Linv = mats
    with tile_threads(2):
        out = _all(P, V, w, Linv)
    np.testing.assert_allclose(out["weighted"], (P * w) @ P.T, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(out["plain"], P @ P.T, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(out["rows"], V @ V[:70].T, rtol=1e-12, atol=1e-10)
    idx = np.arange(1100)[::-2]
    np.testing.assert_allclose(out["columns"], V @ V[idx].T, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(out["left"], V[:, :40].T @ V, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(out["norms"], (V * V).sum(0), rtol=1e-12)
    np.testing.assert_allclose(out["inverse"], ((Linv @ P) ** 2).sum(0), rtol=1e-12)
    A = P[:, :1100]  # 1,100 columns: one product (below FULL_GRAM)
    np.testing.assert_allclose(out["upper"], np.triu(A.T @ A + 1), rtol=1e-12, atol=1e-10)


def test_a_wide_gram_is_summed_from_two_halves(monkeypatch):
    """Above WIDE_GRAM rows at most two r x r partial sums exist at once."""
    seen = []
    real = tiles.tiled

    def spy(fn, spans):
        spans = list(spans)
        seen.append(len(spans))
        return real(fn, spans)

    monkeypatch.setattr(tiles, "tiled", spy)
    monkeypatch.setattr(tiles, "WIDE_GRAM", 10)
    rng = np.random.default_rng(0)
    B = rng.standard_normal((20, 5000))
    with tile_threads(3):
        out = tiles.weighted_gram(B)
    assert seen == [2]
    np.testing.assert_allclose(out, B @ B.T, rtol=1e-12, atol=1e-9)


def _exact_profile(seed: int, n: int, d: int):
    """The exact GP's profiled LML on n rows of a noisy sine in d inputs."""
    from rfcli.learn.gpr_search import exact_profile

    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, d))
    y = np.sin(5 * X[:, 0]) + 0.1 * rng.normal(size=n)
    return exact_profile(X, (y - y.mean()) / y.std(), "gaussian", (1e-3, 1e3), (1e-4, 10.0))


def test_scan_points_are_the_same_on_any_number_of_threads():
    """The GP scans evaluate a line of grid points on the tile threads, recorded in order."""
    from rfcli.learn.gpr_search import scan

    prof = _exact_profile(1, 120, 2)
    grids = [np.geomspace(0.05, 2.0, 7), np.geomspace(0.1, 3.0, 6)]
    runs = []
    for t in (1, 3):
        with tile_threads(t):
            runs.append(scan(prof, grids, sweeps=2) + scan(prof, grids[:1]))
    assert len(runs[0]) == len(runs[1])
    for p, q in zip(*runs, strict=True):
        assert np.array_equal(p["ell"], q["ell"]) and p["lml"] == q["lml"]
        assert p["log_s2"] == q["log_s2"] and p["log_lam"] == q["log_lam"]


def test_tiles_started_inside_a_tile_run_in_its_thread():
    import threading

    from rfcli.threads import tiled

    def name(_):
        return threading.current_thread().name

    def inner(_):
        return name(None), list(tiled(name, range(3)))

    with tile_threads(2):
        for outer, names in tiled(inner, range(4)):
            assert outer.startswith("rfcli-tile") and names == [outer] * 3


def test_spectral_norm_of_zero_and_of_indefinite_matrices():
    from rfcli.jobs.gpr_sample import spectral_norm

    assert spectral_norm(np.zeros((200, 200))) == 0.0
    rng = np.random.default_rng(0)
    A = rng.standard_normal((300, 300))
    A = (A + A.T) / 2
    assert spectral_norm(A) == pytest.approx(np.abs(np.linalg.eigvalsh(A)).max(), rel=1e-10)
    B = np.diag(np.r_[-5.0, 5.0 - 1e-9, np.linspace(-1, 1, 98)])
    assert spectral_norm(B) == pytest.approx(5.0, rel=1e-9)


def test_a_memory_capped_scan_gives_the_same_points():
    from rfcli.learn.gpr_search import scan

    prof = _exact_profile(2, 80, 1)
    grid = [np.geomspace(0.02, 3.0, 9)]
    with tile_threads(3):
        ref = scan(prof, grid)
        prof.max_parallel = 2
        capped = scan(prof, grid)
    assert [p["lml"] for p in capped] == [p["lml"] for p in ref]


def test_a_wide_upper_gram_goes_by_column_tiles(monkeypatch, mats):
    """Above FULL_GRAM columns: column tiles (three of GRAM_TILE = 512 here, the last one
    narrow), the same bits on any number of threads, the upper triangle of A'A added into
    S."""
    monkeypatch.setattr(tiles, "FULL_GRAM", 100)
    A = mats[0][:, :1100]
    outs = []
    for t in (1, 2, 5):
        with tile_threads(t):
            outs.append(_upper_gram(A))
    assert all(np.array_equal(o, outs[0]) for o in outs[1:])
    np.testing.assert_allclose(outs[0], np.triu(A.T @ A + 1), rtol=1e-12, atol=1e-10)


def test_the_triangular_product_by_row_blocks(monkeypatch):
    """diag(P' A^-1 P) through a lower-triangular inverse by blocks of its rows (five of 16
    rows here, the last one narrow): the full product's norms, the same bits on any number
    of threads."""
    monkeypatch.setattr(tiles, "TRI_ROWS", 16)
    rng = np.random.default_rng(5)
    Linv = np.tril(rng.standard_normal((70, 70))) + 5 * np.eye(70)
    P = rng.standard_normal((70, 1500))
    outs = []
    for t in (1, 2, 5):
        with tile_threads(t):
            outs.append(tiles.inverse_sq_column_norms(Linv, P))
    assert all(np.array_equal(o, outs[0]) for o in outs[1:])
    np.testing.assert_allclose(outs[0], ((Linv @ P) ** 2).sum(0), rtol=1e-12)


def _spd(n: int, noise: float, seed: int = 0) -> np.ndarray:
    """A Matern 5/2 kernel matrix of n random 2-D rows plus ``noise`` on its diagonal."""
    from rfcli.maps.exact import correlation, scaled_sum, squared_differences

    X = np.random.default_rng(seed).uniform(-1.7, 1.7, (n, 2))
    K = correlation("matern52", scaled_sum(squared_differences(X, False), 0.5))
    K[np.diag_indices(n)] += noise
    return K


@pytest.mark.parametrize("n", [1, 100, 128, 450])
def test_the_blocked_cholesky_factor_and_inverse_are_lapacks_on_any_number_of_threads(
    n, monkeypatch
):
    """cholesky_lower, cholesky_inverse and triangular_inverse by blocks of 128 (n below, at
    and not a multiple of it): LAPACK's factor (dpotrf) and inverses (dpotri, dtrtri) to
    rounding (1e-12 of the largest entry, at a condition number of about 1e4), zeros above
    the diagonal, and bit for bit the same on 1, 2 and 5 threads."""
    import scipy.linalg as sla

    monkeypatch.setattr(tiles, "CHOL_BLOCK", 128)
    K = _spd(n, 1e-3)
    L0 = np.linalg.cholesky(K)
    W0 = np.tril(sla.lapack.dpotri(L0.copy(), lower=1)[0])
    X0 = np.tril(sla.lapack.dtrtri(L0, lower=1)[0])
    out = []
    for threads in (1, 2, 5):
        with tile_threads(threads):
            L = tiles.cholesky_lower(K.copy())
            out.append((L, tiles.cholesky_inverse(L), tiles.triangular_inverse(L)))
    L, W, X = out[0]
    for other in out[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(other, out[0], strict=True))
    assert not np.triu(L, 1).any() and not np.triu(W, 1).any() and not np.triu(X, 1).any()
    assert np.abs(L - L0).max() <= 1e-12 * np.abs(L0).max()
    assert np.abs(W - W0).max() <= 1e-12 * np.abs(W0).max()
    assert np.abs(X - X0).max() <= 1e-12 * np.abs(X0).max()


def test_the_blocked_cholesky_refuses_a_matrix_that_is_not_positive_definite(monkeypatch):
    """Indefinite in a later block: NumPy's LinAlgError from that block's factor."""
    monkeypatch.setattr(tiles, "CHOL_BLOCK", 128)
    K = _spd(300, 1e-3)
    K[250, 250] = -1.0
    with pytest.raises(np.linalg.LinAlgError):
        tiles.cholesky_lower(K)
