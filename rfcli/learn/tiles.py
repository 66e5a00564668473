"""Dense products of the GP's learning split into tiles fixed by the matrices' shapes, run
on the threads of the enclosing :func:`rfcli.threads.tile_threads` block (each on one BLAS
thread) and combined in tile order: the same numbers bit for bit on any number of threads,
where a multi-threaded BLAS call would split its sums by the thread count.  NumPy's
products release the GIL, so two tiles run at once on two cores (SciPy's LAPACK wrappers
do not: triangular solves go through an explicit triangular inverse here instead)."""

from __future__ import annotations

import numpy as np

from rfcli.threads import run_tiles, tiled

#: columns (features) per tile: 1,024 columns of a 600-row factor are 5 MB, cache-sized
#: blocks for the products; rows per tile of a row Gram matrix
COL_TILE, ROW_TILE = 1024, 512
#: columns of a Gram matrix added by one product (:func:`add_upper_gram`)
FULL_GRAM = 2048
#: columns per tile of a wider Gram matrix
GRAM_TILE = 512
#: rows of a triangular factor per block of a product with it: smaller blocks skip more of
#: the zeros above the diagonal, larger ones run the products faster; 96 was the quickest of
#: 64-256 at 300-1,200 rows on 2 cores (ggplot2::diamonds ARD's 566 x 11,232 gradient
#: product 47 -> 39-41 ms against 256; December 2026)
TRI_ROWS = 96
#: a Gram matrix of more rows than this is summed from two column halves, not 1,024-column
#: tiles: at most two r x r partial sums pending, the memory the GP's budget counts for
#: these products (rfcli.learn.gpr.GP_MATRICES)
WIDE_GRAM = 2048


def _spans(n: int, size: int) -> list[slice]:
    return [slice(a, min(a + size, n)) for a in range(0, n, size)] or [slice(0, 0)]


def row_spans(n: int, size: int = ROW_TILE) -> list[slice]:
    """Tiles of ``size`` consecutive rows of n (fixed by n alone: the same on any number
    of threads)."""
    return _spans(n, size)


def weighted_gram(B: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """``B diag(w) B'`` (w >= 0; None: ones) as the sum over column tiles, left to right,
    of ``(B_t sqrt(w_t)) (B_t sqrt(w_t))'`` (each a symmetric rank-k product)."""
    s = None if w is None else np.sqrt(w)

    def part(t: slice) -> np.ndarray:
        Bt = B[:, t] if s is None else B[:, t] * s[t]
        return Bt @ Bt.T  # NumPy computes X @ X.T by syrk: symmetric, half the flops

    r, m = B.shape
    size = COL_TILE if r <= WIDE_GRAM else max(1, -(-m // 2))
    return tile_sum(part, _spans(m, size))


def tile_sum(fn, tiles) -> np.ndarray:
    """The sum of ``fn(tile)`` (new arrays of one shape) over the tiles, added in tile
    order into the first (the same numbers on any number of threads)."""
    out = None
    for p in tiled(fn, tiles):
        if out is None:
            out = p
        else:
            out += p
    return out


def rows_product(V: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``V B'`` (n x k) by row tiles of V (each row of the result from one product)."""
    out = np.empty((V.shape[0], B.shape[0]))

    def part(t: slice) -> None:
        out[t] = V[t] @ B.T

    run_tiles(part, _spans(V.shape[0], ROW_TILE))
    return out


def gram_columns(V: np.ndarray, rows: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """``V V_S'`` (n x k) for the rows S of V (with ``weights`` w, ``V diag(w) V_S'``),
    ROW_TILE rows at a time (each a copy of at most ROW_TILE rows of V, weighted) by
    :func:`rows_product`."""
    out = np.empty((V.shape[0], len(rows)))
    for t in _spans(len(rows), ROW_TILE):
        B = V[rows[t]]
        if weights is not None:
            B *= weights
        out[:, t] = rows_product(V, B)
    return out


def add_upper_gram(S: np.ndarray, A: np.ndarray) -> None:
    """``S += A'A`` on and above the diagonal (S's upper triangle; parts below it get sums
    too) through NumPy's products, which release the GIL, where SciPy's syrk wrapper holds
    it and the passes' threads, each summing its rows, would take turns (docs/learning.md,
    "The same model on any number of cores").  Up to FULL_GRAM columns one product
    ``A'A`` (NumPy's syrk, as fast as LAPACK's on one thread) and a temporary of S's size
    (at most 32 MB); wider, by column tiles of GRAM_TILE columns: tile J adds
    ``A[:, :j0]' A_J`` (j0 its start) and ``A_J' A_J`` (a syrk), syrk's flops in all, 1.0-1.15x
    LAPACK's syrk's time on one thread at 2,290 columns."""
    c = A.shape[1]
    if c <= FULL_GRAM:  # one product (NumPy's syrk, mirrored): a temporary of S's size
        # added as its transpose, the same numbers (syrk's mirror makes it exactly
        # symmetric), in S's column-major order: 2.6 against 13.7 ms at 1,870 columns
        S += (A.T @ A).T
        return

    def part(t: slice) -> None:
        At = np.ascontiguousarray(A[:, t])
        if t.start:
            S[: t.start, t] += A[:, : t.start].T @ At
        S[t, t] += At.T @ At  # NumPy's syrk (mirrored)

    run_tiles(part, _spans(c, GRAM_TILE))


def gram_temp_bytes(c: int, rows: int) -> int:
    """The most bytes of temporaries :func:`add_upper_gram` holds for c columns of blocks of
    at most ``rows`` rows (its product, or a tile's product and the tile's contiguous copy)."""
    if c <= FULL_GRAM:
        return 8 * c * c
    return 8 * GRAM_TILE * (c + rows)


def left_product(Q: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``Q' V`` by column tiles of V (each column of the result from one product)."""
    out = np.empty((Q.shape[1], V.shape[1]))

    def part(t: slice) -> None:
        out[:, t] = Q.T @ V[:, t]

    run_tiles(part, _spans(V.shape[1], COL_TILE))
    return out


def column_sq_norms(V: np.ndarray) -> np.ndarray:
    """The squared norm of each column of V, by column tiles."""
    return np.concatenate(
        list(tiled(lambda t: np.einsum("ij,ij->j", V[:, t], V[:, t]), _spans(V.shape[1], COL_TILE)))
    )


def _lower_blocks(Linv: np.ndarray, Pt: np.ndarray):
    """``Linv Pt`` for a lower triangular Linv by blocks of TRI_ROWS rows, each through the
    columns up to its last row only (the zeros above the diagonal skipped): (rows, block)."""
    for b in _spans(Linv.shape[0], TRI_ROWS):
        yield b, Linv[b, : b.stop] @ Pt[: b.stop]


def lower_product(Linv: np.ndarray, P: np.ndarray) -> np.ndarray:
    """``Linv P`` for a lower triangular Linv, by column tiles of P (:func:`_lower_blocks`
    within a tile)."""
    out = np.empty((Linv.shape[0], P.shape[1]))

    def part(t: slice) -> None:
        for b, X in _lower_blocks(Linv, P[:, t]):
            out[b, t] = X

    run_tiles(part, _spans(P.shape[1], COL_TILE))
    return out


def inverse_sq_column_norms(Linv: np.ndarray, P: np.ndarray) -> np.ndarray:
    """The squared column norms of ``Linv P`` (``diag(P' A^-1 P)`` for ``A = L L'`` and Linv
    its lower triangular inverse), by column tiles of P; within a tile, by
    :func:`_lower_blocks` (about 54% of the full product's flops at 1,200 rows)."""

    def part(t: slice) -> np.ndarray:
        out = np.zeros(t.stop - t.start)
        for _, X in _lower_blocks(Linv, P[:, t]):
            out += np.einsum("ij,ij->j", X, X)
        return out

    return np.concatenate(list(tiled(part, _spans(P.shape[1], COL_TILE))))


#: rows and columns of the blocks of :func:`cholesky_lower` and :func:`cholesky_inverse`
CHOL_BLOCK = 256


def cholesky_lower(K: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor L of the symmetric positive definite K (its lower triangle
    read; K is overwritten and returned as L, zeros above the diagonal), right-looking by
    blocks of CHOL_BLOCK (Golub & Van Loan, "Matrix Computations", 4th ed., section
    4.2.9): each diagonal block by LAPACK (NumPy's dpotrf), the panel below it by a
    triangular solve (SciPy's dtrsm: it holds the GIL, about n^2 b / 2 flops in all), and
    the trailing lower triangle's update ``A_22 -= L_21 L_21'`` (n^3 / 3 flops, nearly all
    of them) by row tiles on the tile threads, each tile's product on one BLAS thread: the
    same factor on any number of threads, where LAPACK's dpotrf on one thread took 0.36-0.43
    s at 3,000 rows.  ``np.linalg.LinAlgError`` where K is not numerically positive
    definite."""
    from scipy.linalg import solve_triangular

    A = K
    n = len(A)
    for k0 in range(0, n, CHOL_BLOCK):
        k1 = min(k0 + CHOL_BLOCK, n)
        A[k0:k1, k0:k1] = np.linalg.cholesky(A[k0:k1, k0:k1])
        if k1 == n:
            break
        Lkk = A[k0:k1, k0:k1]
        P = solve_triangular(Lkk, A[k1:, k0:k1].T, lower=True, check_finite=False).T
        A[k1:, k0:k1] = P

        def update(t: slice, P=P, k1=k1) -> None:
            # the rows t of the trailing matrix, up to and with their diagonal block
            A[k1 + t.start : k1 + t.stop, k1 : k1 + t.stop] -= P[t] @ P[: t.stop].T

        run_tiles(update, _spans(n - k1, CHOL_BLOCK))
    for t in _spans(n, CHOL_BLOCK):
        _zero_above(A, t)
    return A


def _zero_above(A: np.ndarray, t: slice) -> None:
    """Zeros above the diagonal in the rows ``t`` of the square A."""
    A[t, t.stop :] = 0.0
    A[t, t] = np.tril(A[t, t])


def triangular_inverse(L: np.ndarray) -> np.ndarray:
    """``L^-1`` of a lower triangular L with a nonzero diagonal (zeros above the diagonal):
    by block columns of CHOL_BLOCK, each on one tile thread, ``X_jj = L_jj^-1`` by LAPACK's
    dtrtri and ``X_ij = -X_ii sum_{k=j..i-1} L_ik X_kj`` down the column; n^3 / 3 flops as
    dtrtri's, the same numbers on any number of threads."""
    from scipy.linalg.lapack import dtrtri

    spans = _spans(len(L), CHOL_BLOCK)
    X = np.zeros(L.shape)
    for b in spans:  # the diagonal blocks' inverses (small: LAPACK, holding the GIL)
        X[b, b] = dtrtri(L[b, b], lower=1)[0]

    def column(j: int) -> None:
        bj = spans[j]
        for i in range(j + 1, len(spans)):
            bi = spans[i]
            S = L[bi, bj.start : bi.start] @ X[bj.start : bi.start, bj]
            X[bi, bj] = -(X[bi, bi] @ S)

    run_tiles(column, range(len(spans)))
    return X


def cholesky_inverse(L: np.ndarray) -> np.ndarray:
    """``K^-1`` from K's lower Cholesky factor L (:func:`cholesky_lower`), its lower triangle
    with zeros above the diagonal, as LAPACK's dpotri leaves it beside NumPy's factor:
    ``X = L^-1`` by block columns (:func:`triangular_inverse`), then
    ``K^-1 = X'X`` by row tiles of its lower triangle (row block i: ``X[i0:, i0:i1]'
    X[i0:, :i1]``, X being lower triangular).  About 2 n^3 / 3 flops as dpotri's, on the
    tile threads; the same numbers on any number of them."""
    n = len(L)
    spans = _spans(n, CHOL_BLOCK)
    X = triangular_inverse(L)
    W = np.empty((n, n))

    def rows(t: slice) -> None:
        W[t, : t.stop] = X[t.start :, t].T @ X[t.start :, : t.stop]
        _zero_above(W, t)

    run_tiles(rows, spans)
    return W
