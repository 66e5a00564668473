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

    def mass(self, a, b):
        return self._cdf(b) - self._cdf(a)

    def moment1(self, a, b):
        # int_a^b z phi(z) dz = phi(a) - phi(b) on z >= 0 (the atom adds nothing)
        return self._pdf(a) - self._pdf(b)

    def moment2(self, a, b):
        # int_a^b z^2 phi(z) dz = [Phi(z) - z phi(z)] on z >= 0 (the atom adds nothing)
        def h(z):
            from scipy.special import ndtr

            zp = np.maximum(np.asarray(z, dtype=float), 0.0)
            return ndtr(zp) - zp * self._pdf(zp)

        return h(b) - h(a)

    def ppf(self, p):
        # initialization only: spread the borders over the continuous part
        from scipy.special import ndtri

        return ndtri(0.5 + np.clip(np.asarray(p, dtype=float), 1e-12, 1 - 1e-12) / 2)


def lloyd_max(law, n_cells: int, tol: float = 1e-10, max_iter: int = 200_000):
    """Lloyd-Max quantizer for ``law`` with ``n_cells`` cells.

    Alternates ``t_i = (mu_i + mu_{i+1})/2`` and ``mu_i = E[z | cell i]`` (closed-form cell
    integrals) until the total absolute change of borders and levels is below ``tol``.
    Returns ``(borders, levels, distortion)`` with ``distortion = E[(z - Q(z))^2]``.
    """
    edges = law.ppf(np.linspace(0.0, 1.0, n_cells + 1))
    edges[0], edges[-1] = law.lo, law.hi
    borders = edges[1:-1].copy()
    levels = np.empty(n_cells)
    for _ in range(max_iter):
        lo = np.concatenate(([law.lo], borders))
        hi = np.concatenate((borders, [law.hi]))
        new_levels = law.moment1(lo, hi) / law.mass(lo, hi)
        new_borders = (new_levels[:-1] + new_levels[1:]) / 2
        change = np.abs(new_levels - levels).sum() + np.abs(new_borders - borders).sum()
        levels, borders = new_levels, new_borders
        if change < tol:
            break
    lo = np.concatenate(([law.lo], borders))
    hi = np.concatenate((borders, [law.hi]))
    mass, m1, m2 = law.mass(lo, hi), law.moment1(lo, hi), law.moment2(lo, hi)
    distortion = float(np.sum(m2 - 2 * levels * m1 + levels**2 * mass))
    return borders, levels, distortion
