"""Lloyd-Max quantizers for random Fourier features (seed 000, section 3).

* ``lm``  (LM-RFF) minimizes ``D1 = E[(z - Q(z))^2]`` under the arcsine law.
* ``lm2`` (LM2-RFF) minimizes ``D2 = E[(z^2 - Q(z)^2)^2]``: Lloyd-Max on ``s = z^2`` with
  ``2^(b-1)`` cells, then ``Q(z) = sign(z) sqrt(nu_j)``.

Both are universal: the arcsine marginal of ``cos(w'x + tau)`` does not depend on the
kernel, its bandwidth or the data (seed 000, Theorem 2.2), so one quantizer per b serves
every shift-invariant kernel sampled by :class:`rfcli.maps.fourier.FourierMap`.

References
----------
Li, P. and Li, X. "Quantization algorithms for random Fourier features", seed 000.
Max, J. (1960), Lloyd, S. (1982): the Lloyd-Max conditions.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from rfcli.quantize.base import QUANTIZERS, Quantizer, check_bits
from rfcli.quantize.laws import ArcsineLaw, SquaredArcsineLaw, lloyd_max


@lru_cache(maxsize=16)
def _lm_design(bits: int):
    borders, levels, _ = lloyd_max(ArcsineLaw(), 2**bits)
    # exact symmetry: average the two halves (removes round-off asymmetry)
    borders = (borders - borders[::-1]) / 2
    levels = (levels - levels[::-1]) / 2
    return borders, levels


@lru_cache(maxsize=16)
def _lm2_design(bits: int):
    s_borders, s_levels, _ = lloyd_max(SquaredArcsineLaw(), 2 ** (bits - 1))
    pos_b, pos_l = np.sqrt(s_borders), np.sqrt(s_levels)
    borders = np.concatenate((-pos_b[::-1], [0.0], pos_b))
    levels = np.concatenate((-pos_l[::-1], pos_l))
    return borders, levels


def arcsine_distortion(borders: np.ndarray, levels: np.ndarray) -> float:
    """``D1 = E[(z - Q(z))^2]`` for arcsine z, exact (closed-form cell moments)."""
    law = ArcsineLaw()
    lo = np.concatenate(([law.lo], borders))
    hi = np.concatenate((borders, [law.hi]))
    m0, m1, m2 = law.mass(lo, hi), law.moment1(lo, hi), law.moment2(lo, hi)
    return float(np.sum(m2 - 2 * levels * m1 + levels**2 * m0))


@QUANTIZERS.register("lm")
class LloydMaxQuantizer(Quantizer):
    """LM-RFF: Lloyd-Max for the arcsine density; b=1 gives border 0, levels +-2/pi."""

    kind = "lm"

    @classmethod
    def design(cls, bits: int) -> LloydMaxQuantizer:
        return cls(check_bits(bits), *_lm_design(bits))


@QUANTIZERS.register("lm2")
class LloydMax2Quantizer(Quantizer):
    """LM2-RFF: Lloyd-Max on z^2, favouring high-similarity pairs (seed 000, section 3)."""

    kind = "lm2"

    @classmethod
    def design(cls, bits: int) -> LloydMax2Quantizer:
        return cls(check_bits(bits), *_lm2_design(bits))
