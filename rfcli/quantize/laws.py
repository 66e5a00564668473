"""Known marginal laws of random-feature values, in the form Lloyd-Max needs.

A law gives, for a cell [a, b], its probability mass and its first and second partial
moments in closed form, plus quantiles for initialization.  Lloyd-Max iterations then
never integrate numerically (docs/methods.md, Quantizers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ArcsineLaw:
    """Density ``1/(pi*sqrt(1-z^2))`` on (-1, 1): the marginal of ``cos(a + tau)``,
    tau ~ U(0, 2 pi), for any a (Li & Li, "Quantization algorithms for random Fourier
    features", ICML 2021, Theorem 2.2)."""

    lo: float = -1.0
    hi: float = 1.0
    name: str = "arcsine"

    def mass(self, a, b):
        return (np.arcsin(b) - np.arcsin(a)) / np.pi

    def moment1(self, a, b):
        return (np.sqrt(1.0 - np.square(a)) - np.sqrt(1.0 - np.square(b))) / np.pi

    def moment2(self, a, b):
        # int z^2 f dz = (theta/2 - sin(2 theta)/4)/pi with z = sin(theta)
        ta, tb = np.arcsin(a), np.arcsin(b)
        return ((tb - ta) / 2 - (np.sin(2 * tb) - np.sin(2 * ta)) / 4) / np.pi

    def pdf(self, z):
        return 1.0 / (np.pi * np.sqrt(1.0 - np.square(z)))

    def ppf(self, p):
        return np.sin(np.pi * (np.asarray(p) - 0.5))


@dataclass(frozen=True)
class SquaredArcsineLaw:
    """Law of ``s = z^2`` for arcsine z: density ``1/(pi*sqrt(s(1-s)))`` on (0, 1).
    With ``s = sin^2(theta)``: mass ``(2/pi) d theta``, first moment
    ``(1/pi) d(theta - sin(2 theta)/2)``.  Used by LM2-RFF."""

    lo: float = 0.0
    hi: float = 1.0
    name: str = "squared-arcsine"

    @staticmethod
    def _theta(s):
        return np.arcsin(np.sqrt(np.clip(s, 0.0, 1.0)))

    def mass(self, a, b):
        return 2.0 / np.pi * (self._theta(b) - self._theta(a))

    def moment1(self, a, b):
        g = lambda t: t - np.sin(2 * t) / 2  # noqa: E731
        return (g(self._theta(b)) - g(self._theta(a))) / np.pi

    def moment2(self, a, b):
        # s^2 = sin^4 theta; int sin^4 = 3t/8 - sin(2t)/4 + sin(4t)/32
        g = lambda t: 3 * t / 8 - np.sin(2 * t) / 4 + np.sin(4 * t) / 32  # noqa: E731
        return 2.0 / np.pi * (g(self._theta(b)) - g(self._theta(a)))

    def pdf(self, s):
        return 1.0 / (np.pi * np.sqrt(s * (1.0 - s)))

    def ppf(self, p):
        return np.sin(np.pi * np.asarray(p) / 2) ** 2


@dataclass(frozen=True)
class ReluNormalLaw:
    """Law of ``z = max(0, g)``, g ~ N(0, 1): an atom of mass 1/2 at 0 plus the normal
    density on (0, inf).  The marginal of row-norm-scaled arc-cosine order-1 features
    ``max(0, w'x)/||x||`` with w ~ N(0, I), for every x (docs/methods.md, Arc-cosine
    features).  ``hi`` stands in for infinity (the mass beyond 40 is below 1e-300)."""

    lo: float = -1.0
    hi: float = 40.0
    name: str = "relu-normalized"

    @staticmethod
    def _cdf(z):
        from scipy.special import ndtr

        z = np.asarray(z, dtype=float)
        return np.where(z < 0, 0.0, ndtr(np.maximum(z, 0.0)))

    @staticmethod
    def _pdf(z):
        z = np.maximum(np.asarray(z, dtype=float), 0.0)
        return np.exp(-z * z / 2) / np.sqrt(2 * np.pi)

    @staticmethod
    def _tail(a, b):
        """``Phi(b) - Phi(a)`` for the part of [a, b] above 0, from the upper tails where
        a > 0 (differences of values near 1 would lose the far cells' mass)."""
        from scipy.special import ndtr

        a = np.maximum(np.asarray(a, dtype=float), 0.0)
        b = np.maximum(np.asarray(b, dtype=float), 0.0)
        return np.where(a > 0, ndtr(-a) - ndtr(-b), ndtr(b) - ndtr(a))

    def mass(self, a, b):
        a = np.asarray(a, dtype=float)
        atom = np.where((a < 0) & (np.asarray(b) >= 0), 0.5, 0.0)
        return atom + self._tail(a, b)

    def pdf(self, z):
        """The density of the continuous part (0 below 0; the atom is not a density)."""
        return np.where(np.asarray(z) > 0, self._pdf(z), 0.0)

    def moment1(self, a, b):
        # int_a^b z phi(z) dz = phi(a) - phi(b) on z >= 0 (the atom adds nothing)
        return self._pdf(a) - self._pdf(b)

    def moment2(self, a, b):
        # int_a^b z^2 phi(z) dz = [Phi(z) - z phi(z)] on z >= 0 (the atom adds nothing)
        ap = np.maximum(np.asarray(a, dtype=float), 0.0)
        bp = np.maximum(np.asarray(b, dtype=float), 0.0)
        return self._tail(a, b) - (bp * self._pdf(bp) - ap * self._pdf(ap))

    def ppf(self, p):
        # initialization only: spread the borders over the continuous part
        from scipy.special import ndtri

        return ndtri(0.5 + np.clip(np.asarray(p, dtype=float), 1e-12, 1 - 1e-12) / 2)


#: cells from which Lloyd's iteration (linear convergence, its rate nearing 1 as cells are
#: added: 256 arcsine cells took 5.7 s) hands over to Newton's method on the same conditions
NEWTON_CELLS = 32
#: Lloyd steps before Newton's (a start; the step control of :func:`_newton` does the rest)
WARM_STEPS = 20


def lloyd_max(law, n_cells: int, tol: float = 1e-10, max_iter: int = 200_000):
    """Lloyd-Max quantizer for ``law`` with ``n_cells`` cells.

    Alternates ``t_i = (mu_i + mu_{i+1})/2`` and ``mu_i = E[z | cell i]`` (closed-form cell
    integrals) until the total absolute change of borders and levels is below ``tol``.  From
    :data:`NEWTON_CELLS` cells on, :data:`WARM_STEPS` of Lloyd's steps only start the solve
    and Newton's method on the same conditions finishes it (:func:`_newton`).
    Returns ``(borders, levels, distortion)`` with ``distortion = E[(z - Q(z))^2]``.
    """
    edges = law.ppf(np.linspace(0.0, 1.0, n_cells + 1))
    edges[0], edges[-1] = law.lo, law.hi
    borders = edges[1:-1].copy()
    levels = np.empty(n_cells)
    newton = n_cells >= NEWTON_CELLS
    for _ in range(WARM_STEPS if newton else max_iter):
        lo = np.concatenate(([law.lo], borders))
        hi = np.concatenate((borders, [law.hi]))
        new_levels = law.moment1(lo, hi) / law.mass(lo, hi)
        new_borders = (new_levels[:-1] + new_levels[1:]) / 2
        change = np.abs(new_levels - levels).sum() + np.abs(new_borders - borders).sum()
        levels, borders = new_levels, new_borders
        if change < tol:
            break
    if newton:
        borders = _newton(law, borders)
    lo = np.concatenate(([law.lo], borders))
    hi = np.concatenate((borders, [law.hi]))
    mass, m1, m2 = law.mass(lo, hi), law.moment1(lo, hi), law.moment2(lo, hi)
    if newton:
        levels = m1 / mass
    distortion = float(np.sum(m2 - 2 * levels * m1 + levels**2 * mass))
    return borders, levels, distortion


def _conditions(law, t: np.ndarray):
    """``F(t) = t - (c_i + c_{i+1})/2`` (zero at a Lloyd-Max quantizer), the centroids c and
    the cell masses."""
    lo = np.concatenate(([law.lo], t))
    hi = np.concatenate((t, [law.hi]))
    m0 = law.mass(lo, hi)
    c = law.moment1(lo, hi) / m0
    return t - (c[:-1] + c[1:]) / 2, c, m0


def _newton(law, t: np.ndarray, max_iter: int = 100) -> np.ndarray:
    """Newton's method on the Lloyd-Max conditions ``F(t) = 0`` over the borders t.  The
    centroid ``c_i`` of ``[t_{i-1}, t_i]`` moves with its edges as ``dc_i/dt_i =
    p(t_i)(t_i - c_i)/M_i`` and ``dc_i/dt_{i-1} = p(t_{i-1})(c_i - t_{i-1})/M_i`` (p the
    density, M_i the cell's mass), so the Jacobian is tridiagonal: O(cells) per step.  A step
    is halved until the borders stay ordered inside the support and max |F| falls; it stops
    at float64 resolution (quadratic convergence: a handful of steps)."""
    from scipy.linalg import solve_banded

    F, c, m0 = _conditions(law, t)
    err = np.max(np.abs(F))
    for _ in range(max_iter):
        p = law.pdf(t)
        up = p * (t - c[:-1]) / m0[:-1]  # dc_i/dt_i: cell i's upper edge
        down = p * (c[1:] - t) / m0[1:]  # dc_{i+1}/dt_i: cell i+1's lower edge
        ab = np.zeros((3, len(t)))
        ab[1] = 1.0 - (up + down) / 2
        ab[0, 1:] = -up[1:] / 2  # (i, i+1): c_{i+1} through its upper edge t_{i+1}
        ab[2, :-1] = -down[:-1] / 2  # (i+1, i): c_{i+1} through its lower edge t_i
        step = solve_banded((1, 1), ab, -F)
        h = 1.0
        while h > 1e-6:
            new = t + h * step
            ordered = np.all(np.diff(new) > 0) and new[0] > law.lo and new[-1] < law.hi
            if ordered:
                F_new, c_new, m0_new = _conditions(law, new)
                err_new = np.max(np.abs(F_new))
                if err_new < err:
                    break
            h /= 2
        else:
            break  # no decrease left: at the resolution of float64
        t, F, c, m0, err = new, F_new, c_new, m0_new, err_new
        if err < 1e-15:
            break
    return t
