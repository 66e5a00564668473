"""cos and sin of the phases ``2 pi X H'`` of GLF features (rfcli.maps.gauss_legendre)
for a rule's nodes H: from per-input factors where a tensor rule's nodes take few distinct
coordinates per input (docs/gpr.md, Evaluating the features), else from the phases; the
map's transform uses them.  And the weighted sums of the cosines over the nodes that the
rule design's probes need (rfcli.maps.glf_rules.kernel_error), on the grid of the nodes'
distinct coordinates (:func:`grid_sums`)."""

from __future__ import annotations

import math

import numpy as np

#: rows per block of :func:`phase_features` from per-input factors: at least FACTOR_ROWS,
#: more while a block's complex work arrays (rows x prefixes) hold at most FACTOR_ELEMS
#: entries, so they stay in the CPU's cache and small rules pay the per-block Python steps
#: less often (a rule's 260-870 nodes on 1,032 rows: 1.3-2.0x faster than 8-row blocks;
#: diamonds' 5,616 nodes keep 8 rows)
FACTOR_ROWS, FACTOR_ELEMS = 8, 32768


def tensor_factors(H: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None:
    """The nodes H (m, d) as products of per-input factors, for
    :func:`phase_features`: ``e^{2 pi i x'h} = prod_j e^{2 pi i x_j h_j}``,
    and a tensor rule's nodes take few distinct coordinates per input (ggplot2::diamonds'
    5,616 nodes in 3-D: 27, 28 and 22).  Built input by input: the distinct prefixes
    ``(h_1 .. h_j)`` of the nodes, each the product of a distinct prefix of one input fewer
    and a distinct coordinate of input j.  Per input j: (its distinct coordinates, for each
    prefix of inputs 1..j the index of its shorter prefix and of its coordinate); the last
    input's prefixes are the nodes themselves, in their order.  None where the factors would
    not be much fewer than the nodes (one input; rules of scattered nodes): the features
    then come from ``cos`` and ``sin`` of the phases."""
    m, d = H.shape
    if d < 2 or not m:
        return None
    u, prefix = np.unique(H[:, 0], return_inverse=True)  # each node's prefix of one input
    out, size = [(u, None, None)], len(u)
    for j in range(1, d):
        u, coord = np.unique(H[:, j], return_inverse=True)
        size += len(u)
        if j == d - 1:  # the nodes: their prefix of d - 1 inputs and last coordinate
            out.append((u, prefix, coord))
            break
        keys, prefix = np.unique(prefix * len(u) + coord, return_inverse=True)
        out.append((u, keys // len(u), keys % len(u)))
        size += len(keys)
    # a block costs sin and cos of the factors and a product per prefix, against sin and
    # cos of every node's phase
    return out if size <= m // 2 else None


def phase_features(X: np.ndarray, H: np.ndarray, out: np.ndarray, factors) -> None:
    """``cos(2 pi X H')`` and ``sin(2 pi X H')`` into ``out`` (rows x 2m: cos, then sin;
    H the m nodes), each row on its own (the same values whatever rows come with it).
    With ``factors`` (:func:`tensor_factors` of H), by blocks of rows (FACTOR_ROWS,
    FACTOR_ELEMS): each input's ``e^{2 pi i x_j u}`` at its distinct coordinates u (sin and cos of
    rows x |u| phases), multiplied into the distinct prefixes input by input.  The products
    of unit complex numbers err by a few units of the last place, where ``cos(2 pi x'h)``
    from the rounded phase errs by its rounding (about 1e-16 x |2 pi x'h|).  With None,
    cos and sin of the phases."""
    m = len(H)
    if factors is None:
        Z = X @ H.T
        Z *= 2 * np.pi
        np.cos(Z, out=out[:, :m])
        np.sin(Z, out=out[:, m:])
        return
    width = max(len(p) for _, p, _ in factors if p is not None)
    # work arrays of a block's prefixes, kept through the blocks (fresh ones, up to a
    # megabyte each, would cost page faults at every block)
    rows = max(FACTOR_ROWS, FACTOR_ELEMS // width // FACTOR_ROWS * FACTOR_ROWS)
    rows = min(rows, max(len(X), 1))
    A, B, T = (np.empty((rows, width), dtype=np.complex128) for _ in range(3))
    for a in range(0, len(X), rows):
        Xb = X[a : a + rows]
        r, C = len(Xb), None
        for j, (u, parent, coord) in enumerate(factors):
            ph = np.multiply.outer(Xb[:, j], 2 * np.pi * u)
            E = np.empty(ph.shape, dtype=np.complex128)
            np.cos(ph, out=E.real)
            np.sin(ph, out=E.imag)
            if C is None:
                C = E
                continue
            k = len(parent)
            nxt, A, B = A[:r, :k], B, A
            np.take(C, parent, axis=1, out=nxt)
            nxt *= np.take(E, coord, axis=1, out=T[:r, :k])
            C = nxt
        out[a : a + r, :m] = C.real
        out[a : a + r, m:] = C.imag


#: a rule whose grid of distinct coordinates per input has at most GRID_RATIO x its number
#: of nodes cells has its weighted cosine sums taken on that grid (:func:`grid_sums`)
GRID_RATIO = 8
#: complex work elements of one batch of weight vectors in :func:`grid_sums` (a batch holds
#: one vector at least, which may take more)
GRID_BATCH = 1 << 20


def grid_sums(H: np.ndarray, wp: np.ndarray, delta: np.ndarray) -> np.ndarray | None:
    """``sum_i wp[l, i] cos(2 pi delta_p'H_i)`` for weight vectors ``wp`` (k, m) over nodes
    H (m, d): (p, k); None with one input, or where the nodes fill less than 1/GRID_RATIO of
    the grid of their distinct coordinates per input.  On that grid the sum over nodes is
    a product of per-input sums, ``Re sum_a e^{2 pi i delta_1 u_a} sum_b ... W[a, b, ..]``
    (the weights scattered into the grid, 0 where no node is): one product of matrices for
    the input with the most coordinates, then per difference over the others -- cos and
    sin of p x (sum of the coordinates) phases, where the nodes' own features take p x m
    complex products (a tensor rule's probes in 2-D: 1.7-2.2 against 4.0 ms).  The same sums
    as the cosines' up to rounding (1e-15 on the design's probes).  None also where two nodes
    share a cell (a tensor rule's never do)."""
    m, d = H.shape
    if d < 2 or not m:
        return None
    axes, index = [], []
    for j in range(d):
        u, inv = np.unique(H[:, j], return_inverse=True)
        axes.append(u)
        index.append(inv)
    shape = [len(u) for u in axes]
    size = math.prod(shape)  # (Python's integers: no overflow)
    if size > GRID_RATIO * m:
        return None
    first = int(np.argmax(shape))  # contracted by the matrix product
    order = [first, *(j for j in range(d) if j != first)]
    shape = [shape[j] for j in order]
    cells = np.ravel_multi_index(tuple(index[j] for j in order), shape)
    if len(np.unique(cells)) < m:  # repeated nodes (no tensor rule's): one cell holds one
        return None
    E = [np.exp(2j * np.pi * np.multiply.outer(delta[:, j], axes[j])) for j in order]
    c0, s0 = np.ascontiguousarray(E[0].real), np.ascontiguousarray(E[0].imag)
    p, k, rest = len(delta), len(wp), size // shape[0]
    out = np.empty((p, k))
    step = max(1, GRID_BATCH // max(p * rest, 1))
    for a in range(0, k, step):
        b = min(k, a + step)
        W = np.zeros((b - a, size))
        W[:, cells] = wp[a:b]
        W = W.reshape(b - a, shape[0], rest).transpose(1, 0, 2).reshape(shape[0], -1)
        T = (c0 @ W + 1j * (s0 @ W)).reshape(p, b - a, *shape[1:])
        for j in range(d - 1, 0, -1):  # the last input's coordinates summed out, then the next
            T = np.einsum("pl...c,pc->pl...", T, E[j])
        out[:, a:b] = T.real
    return out
