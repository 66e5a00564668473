"""cos and sin of the phases ``2 pi X H'`` of GLF features (rfcli.maps.gauss_legendre)
for a rule's nodes H: from per-input factors where a tensor rule's nodes take few distinct
coordinates per input (docs/gpr.md, Evaluating the features), else from the phases.  The
map's transform and the rule design's probes (rfcli.maps.glf_rules.kernel_error) use it."""

from __future__ import annotations

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
