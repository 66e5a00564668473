"""Codes of cosine features from their phase in turns, without computing the cosine
(docs/methods.md, Quantizers; docs/store-format.md, Codes from the phase).

A Fourier feature is ``z = cos(2 pi u)`` with its phase in turns ``u = x'V + s``
(float32; ``V = W / 2 pi``, ``s = tau / 2 pi``: :meth:`rfcli.maps.FourierMap.transform_turns`),
and a threshold quantizer's code is ``#{j: beta_j < z}`` for its increasing borders
``beta_j`` (float32).  cos is even and 2 pi-periodic and decreases on [0, pi], so with
``r = |u - rint(u)|`` in [0, 1/2], the distance of u to the nearest integer,

    cos(2 pi u) > beta  <=>  r < arccos(beta) / 2 pi        (beta in [-1, 1])

and the code is ``#{j: r < c_j}`` for the turn borders ``c_j = arccos(beta_j) / 2 pi``
(decreasing in j).  A border at or above 1 is never passed (``c_j = -inf``), one below -1
always (``c_j = +inf``).  Each ``c_j`` is rounded up to float32 (the least float32 at or
above the float64 value), so that ``r < c_j`` in float32 decides exactly
``r < arccos(beta_j) / 2 pi`` for a float32 ``r``.

**The reduction is exact.**  ``rint(u)`` is an integer at most half a unit from u, and the
difference of two float32 numbers within a factor of two of each other is exact
(Sterbenz's lemma); where ``|u| < 1/2`` rint gives 0, and where ``|u| >= 2^23`` u is an
integer.  So ``r`` is the exact distance of the float32 ``u`` to its nearest integer, for
every finite u however large, and the codes are exactly ``#{j: beta_j < cos(2 pi u)}`` of
that u.  The roundings left are those of u itself: of V and s (float32 from float64) and of
the GEMM, within a few float32 ulps of ``sum_k |x_k V_k| + |s|``, as the phase in radians
has its own on the cosine path.  Non-finite phases give NaN, coded as the cosine path codes
``cos(inf) = NaN``.  Three elementwise passes (rint, subtract, abs) and one comparison per
border, on sub-blocks of about 128 K elements whose work arrays stay in the CPU's cache;
nothing depends on the sub-blocks.
"""

from __future__ import annotations

import threading

import numpy as np

#: elements per sub-block: its float32 and bool work arrays (640 KiB) stay in cache
SUB_ELEMENTS = 1 << 17


def turn_borders(borders32: np.ndarray) -> np.ndarray:
    """The turn borders ``c_j = arccos(beta_j) / 2 pi`` (float32, decreasing) of increasing
    float32 borders: rounded up to float32, -inf at or above 1, +inf below -1."""
    b = np.asarray(borders32, dtype=np.float32).astype(np.float64)
    c64 = np.arccos(np.clip(b, -1.0, 1.0)) / (2.0 * np.pi)
    c = c64.astype(np.float32)
    low = c.astype(np.float64) < c64
    c[low] = np.nextafter(c[low], np.float32(np.inf))
    c[b >= 1.0] = -np.inf  # cos > beta never holds
    c[b < -1.0] = np.inf  # always holds
    return c


def turn_distance(u: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``|u - rint(u)|`` of float32 phases in turns: exact (module docstring); NaN where u
    is not finite.  ``out`` (u's shape, float32) is written and returned."""
    u = np.asarray(u, dtype=np.float32)
    out = np.empty_like(u) if out is None else out
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, as cos(inf)
        np.rint(u, out=out)
        np.subtract(u, out, out=out)
    np.abs(out, out=out)
    return out


class PhaseCoder:
    """Codes ``#{j: beta_j < cos(2 pi u)}`` of float32 phases in turns u, for a threshold
    quantizer with float32 borders ``borders32`` (module docstring)."""

    def __init__(self, borders32: np.ndarray):
        self.borders32 = np.asarray(borders32, dtype=np.float32)
        self.c = turn_borders(self.borders32)
        self._ascending = self.c[::-1].copy()

    def codes(self, u: np.ndarray) -> np.ndarray:
        """uint8 codes of the phases in turns ``u`` (n, m), as the quantizer gives for
        ``cos(2 pi u)``; the work goes by sub-blocks of rows (elementwise: the codes do not
        depend on them)."""
        u = np.ascontiguousarray(u, dtype=np.float32)
        if u.ndim != 2:
            raise ValueError("phases must be a 2-D array")
        n, m = u.shape
        out = np.empty((n, m), dtype=np.uint8)
        rows = max(1, SUB_ELEMENTS // max(m, 1))
        r_buf, flag = _work_arrays((min(rows, n), m))
        for r0 in range(0, n, rows):
            ub = u[r0 : r0 + rows]
            s = ub.shape[0]
            self._count(turn_distance(ub, r_buf[:s]), out[r0 : r0 + s], flag[:s])
        return out

    def _count(self, r: np.ndarray, out: np.ndarray, flag: np.ndarray) -> None:
        """``out = #{j: r < c_j}``: vectorized comparisons up to 15 borders, a binary search
        beyond; a NaN (a non-finite phase) gets Quantizer.codes' code of a NaN cosine: 0 by
        the comparisons, the last code by the binary search."""
        c = self.c
        if len(c) > 15:
            out[...] = len(c) - np.searchsorted(self._ascending, r, side="right")
            out[np.isnan(r)] = len(c)  # (sorted last, NaN counted no border above it)
            return
        np.less(r, c[0], out=out.view(bool))
        for cj in c[1:]:
            np.less(r, cj, out=flag)
            np.add(out, flag.view(np.uint8), out=out)


_WORK = threading.local()


def _work_arrays(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """This thread's work arrays (one float32, one bool) of ``shape``, kept between calls:
    fresh arrays of a sub-block's size cost page faults at every call (allocations of a
    megabyte or more go to mmap), several times the work at 512 K elements."""
    size = shape[0] * shape[1]
    bufs = getattr(_WORK, "bufs", None)
    if bufs is None or bufs[0].size < size:
        bufs = (np.empty(size, np.float32), np.empty(size, bool))
        _WORK.bufs = bufs
    return tuple(b[:size].reshape(shape) for b in bufs)
