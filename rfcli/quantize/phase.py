"""Codes of cosine features from their phase, without computing the cosine
(docs/methods.md, Quantizers; docs/store-format.md, Codes from the phase).

A Fourier feature is ``z = cos(t)`` with phase ``t = w'x + tau`` (float32), and a threshold
quantizer's code is ``#{j: beta_j < z}`` for its increasing borders ``beta_j`` (float32).
cos is even and 2 pi-periodic and decreases on [0, pi], so with ``d = |t - 2 pi k|``,
``k = round(t / 2 pi)``, the distance of the phase to the nearest multiple of 2 pi,

    cos(t) > beta  <=>  d < arccos(beta)        (beta in [-1, 1])

and the code is ``#{j: d < a_j}`` for the phase borders ``a_j = arccos(beta_j)`` (decreasing
in j).  A border above 1 is never passed (``a_j = -inf``), one below -1 always
(``a_j = +inf``).  Each ``a_j`` is rounded up to float32 (the least float32 at or above the
float64 ``arccos``), so that ``d < a_j`` in float32 decides exactly ``d < arccos(beta_j)``
for a float32 ``d``.

The reduction is Cody & Waite's (W. J. Cody and W. Waite, "Software Manual for the
Elementary Functions", Prentice-Hall, 1980), in float32: ``k = rint(t / 2 pi)``, and 2 pi is
split into ``C1 + C2`` where C1 has 13 significant bits, so that for an integer
``|k| <= KMAX = 2048`` the product ``k C1`` is exact and so is ``t - k C1`` (Sterbenz's
lemma); what remains are the roundings of ``k C2`` (below 6e-8), of C2 itself (times k,
below 2.1e-8) and of the last subtraction (half an ulp of pi, 1.2e-7).  So
``|d - d_exact| <= 2.0e-7`` for every ``|t| <= 2 pi (KMAX + 1/2)`` (about 12,870), however
large ``|t|`` is: the plain float32 ``2 pi |t / 2 pi - round(t / 2 pi)|`` errs by up to
about ``|t| 8e-8`` rad (7.9e-4 measured at ``|t| <= 1e4``).  Elements beyond that range
(the heavy-tailed Cauchy weights of the Laplacian kernel give a few) and non-finite phases
take the cosine and the quantizer's own comparisons, exactly as without the reduction; the
range check (the least and greatest k) is skipped when the caller bounds ``|t|`` below
``RANGE`` (the Fourier map's ``phase_bound``).  The work runs on sub-blocks of about 128 K
elements, whose two work arrays stay in the CPU's cache.

The codes equal those of ``cos`` then comparisons except where the phase lies within the
float32 rounding of cos (or of the reduction) of a border: measured in docs/store-format.md.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import nullcontext

import numpy as np

#: 2 pi = C1 + C2: C1 has 13 significant bits, so k*C1 is exact in float32 for integers
#: |k| <= KMAX; C2 is the float32 rounding of the rest (error 1.0e-11)
C1 = np.float32(float.fromhex("0x1.921p+2"))  # 6.2822265625
C2 = np.float32(2.0 * np.pi - float(C1))
KMAX = 2048
#: phases of at most this size are within the reduction's range (|k| <= KMAX)
RANGE = 2.0 * np.pi * (KMAX - 1)
INV_2PI = np.float32(1.0 / (2.0 * np.pi))
#: how far past pi an unfolded reduction can go (k off by one; see reduce_phase)
FOLD_MARGIN = 0.01

#: elements per sub-block: its two float32 work arrays (1 MiB) stay in cache
SUB_ELEMENTS = 1 << 17


def phase_borders(borders32: np.ndarray) -> np.ndarray:
    """The phase borders ``a_j = arccos(beta_j)`` (float32, decreasing) of increasing
    float32 borders: rounded up to float32, -inf above 1, +inf below -1."""
    b = np.asarray(borders32, dtype=np.float32).astype(np.float64)
    a64 = np.arccos(np.clip(b, -1.0, 1.0))
    a = a64.astype(np.float32)
    low = a.astype(np.float64) < a64
    a[low] = np.nextafter(a[low], np.float32(np.inf))
    a[b >= 1.0] = -np.inf  # cos(t) > beta never holds
    a[b < -1.0] = np.inf  # always holds
    return a


def reduce_phase(
    t: np.ndarray, out: np.ndarray, k: np.ndarray, fold: bool = True, check: bool = True
):
    """``out = |t - 2 pi round(t / 2 pi)|`` (float32, within 2.0e-7 of the exact value for
    the float32 ``t``, 3.2e-7 where folded), by Cody-Waite reduction (module docstring);
    ``k`` is a work array of t's shape.  Returns None, or the boolean mask of the elements
    beyond its range (``|k| > KMAX``, or not finite), whose ``out`` values are meaningless.

    ``k`` is rounded from the float32 ``t / 2 pi``, off by one where that lies within its
    rounding (below 1.3e-4) of a half-integer: there the result exceeds pi by up to 8e-4.
    ``fold`` replaces such a value ``d`` with ``2 pi - d`` (three more passes); without it,
    only comparisons with a phase border above ``pi - FOLD_MARGIN`` can be wrong.
    ``check=False`` skips the range check (two reductions): for phases known to lie within
    ``RANGE``."""
    np.multiply(t, INV_2PI, out=k)
    np.rint(k, out=k)
    beyond = None
    # np.min/np.max propagate NaN: a NaN phase, too, makes the mask
    if check and not (-KMAX <= np.min(k) and np.max(k) <= KMAX):
        beyond = ~(np.abs(k) <= KMAX)
    # (infinite phases make NaN: the caller replaces those values)
    with np.errstate(invalid="ignore") if beyond is not None else nullcontext():
        np.multiply(k, C1, out=out)
        np.subtract(t, out, out=out)  # exact (Sterbenz's lemma)
        np.multiply(k, C2, out=k)
        np.subtract(out, k, out=out)
        np.abs(out, out=out)
        if fold:  # 2 pi - d = (C1 - d) + C2, C1 - d exact for d in [pi, 2 pi]
            np.subtract(C1, out, out=k)
            k += C2
            np.minimum(out, k, out=out)
    return beyond


def phase_distance(t: np.ndarray) -> np.ndarray:
    """``|t - 2 pi round(t / 2 pi)|`` of float32 phases (see :func:`reduce_phase`; NaN
    where it is beyond its range)."""
    t = np.ascontiguousarray(t, dtype=np.float32)
    out, k = np.empty_like(t), np.empty_like(t)
    beyond = reduce_phase(t, out, k)
    if beyond is not None:
        out[beyond] = np.nan
    return out


class PhaseCoder:
    """Codes ``#{j: beta_j < cos(t)}`` of float32 phases t, for a threshold quantizer with
    float32 borders ``borders32`` whose codes of values are ``value_codes`` (used for the
    elements beyond the reduction's range; module docstring)."""

    def __init__(self, borders32: np.ndarray, value_codes: Callable[[np.ndarray], np.ndarray]):
        self.borders32 = np.asarray(borders32, dtype=np.float32)
        self.a = phase_borders(self.borders32)
        self._ascending = self.a[::-1].copy()
        self._value_codes = value_codes
        #: fold past pi only when a border's phase is that close to pi (cos below -0.99995)
        self.fold = bool(np.any((self.a > np.pi - FOLD_MARGIN) & np.isfinite(self.a)))

    def codes(self, t: np.ndarray, max_abs: float | None = None) -> np.ndarray:
        """uint8 codes of the phases ``t`` (n, m), as the quantizer gives for ``cos(t)``; the
        work goes by sub-blocks of rows (elementwise: the codes do not depend on them).
        ``max_abs``, a bound on ``|t|`` that the caller knows, spares the range check when
        it is at most ``RANGE``."""
        check = not (max_abs is not None and max_abs <= RANGE)  # (NaN: checked)
        t = np.ascontiguousarray(t, dtype=np.float32)
        if t.ndim != 2:
            raise ValueError("phases must be a 2-D array")
        n, m = t.shape
        out = np.empty((n, m), dtype=np.uint8)
        rows = max(1, SUB_ELEMENTS // max(m, 1))
        d_buf, k_buf, flag = _work_arrays((min(rows, n), m))
        for r0 in range(0, n, rows):
            tb = t[r0 : r0 + rows]
            s = tb.shape[0]
            beyond = reduce_phase(tb, d_buf[:s], k_buf[:s], self.fold, check)
            ob = out[r0 : r0 + s]
            self._count(d_buf[:s], ob, flag[:s])
            if beyond is not None:
                ob[beyond] = self._value_codes(np.cos(tb[beyond]))
        return out

    def _count(self, d: np.ndarray, out: np.ndarray, flag: np.ndarray) -> None:
        """``out = #{j: d < a_j}``: vectorized comparisons up to 15 borders, a binary search
        beyond (as Quantizer.codes)."""
        a = self.a
        if len(a) > 15:
            out[...] = len(a) - np.searchsorted(self._ascending, d, side="right")
            return
        np.less(d, a[0], out=out.view(bool))
        for aj in a[1:]:
            np.less(d, aj, out=flag)
            np.add(out, flag.view(np.uint8), out=out)


_WORK = threading.local()


def _work_arrays(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """This thread's work arrays (two float32, one bool) of ``shape``, kept between calls:
    fresh arrays of a sub-block's size cost page faults at every call (allocations of a
    megabyte or more go to mmap), several times the work at 512 K elements."""
    size = shape[0] * shape[1]
    bufs = getattr(_WORK, "bufs", None)
    if bufs is None or bufs[0].size < size:
        bufs = (np.empty(size, np.float32), np.empty(size, np.float32), np.empty(size, bool))
        _WORK.bufs = bufs
    return tuple(b[:size].reshape(shape) for b in bufs)
