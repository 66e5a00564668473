"""Lloyd-Max quantizers for random Fourier features (Li & Li 2021, Section 3).

* ``lm``  (LM-RFF) minimizes ``D1 = E[(z - Q(z))^2]`` under the arcsine law.
* ``lm2`` (LM2-RFF) minimizes ``D2 = E[(z^2 - Q(z)^2)^2]``: Lloyd-Max on ``s = z^2`` with
  ``2^(b-1)`` cells, then ``Q(z) = sign(z) sqrt(nu_j)``.

Both are universal: the arcsine marginal of ``cos(w'x + tau)`` does not depend on the
kernel, its bandwidth or the data (Li & Li 2021, Theorem 2.2), so one quantizer per b serves
every shift-invariant kernel sampled by :class:`rfcli.maps.fourier.FourierMap`.

References
----------
Li, X. and Li, P. "Quantization algorithms for random Fourier features", International
Conference on Machine Learning (ICML), 2021.  Formulas: docs/methods.md, Quantizers.
Max, J. (1960), Lloyd, S. (1982): the Lloyd-Max conditions.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from rfcli.errors import ConfigError, UsageError
from rfcli.quantize.base import QUANTIZERS, Quantizer, check_bits
from rfcli.quantize.laws import ArcsineLaw, ReluNormalLaw, SquaredArcsineLaw, lloyd_max

#: laws with a closed-form Lloyd-Max design (FeatureMap.value_law values)
LM_LAWS = {"arcsine": ArcsineLaw(), "relu-normalized": ReluNormalLaw()}


@lru_cache(maxsize=32)
def _lm_design(bits: int, law: str = "arcsine"):
    borders, levels, _ = lloyd_max(LM_LAWS[law], 2**bits)
    if law == "arcsine":
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

    def __init__(self, bits, borders, levels, law: str = "arcsine"):
        if law not in LM_LAWS:
            raise ConfigError(f"quantizer lm: unknown law {law!r} (known: {', '.join(LM_LAWS)})")
        self.law = law
        self.laws = (law,)
        super().__init__(bits, borders, levels)

    @classmethod
    def design(cls, bits: int, law: str = "arcsine") -> LloydMaxQuantizer:
        if law not in LM_LAWS:
            raise UsageError(
                f"no Lloyd-Max design for {law} feature values: use quantizer empirical"
            )
        return cls(check_bits(bits), *_lm_design(bits, law), law=law)

    def to_config(self):
        cfg = super().to_config()
        if self.law != "arcsine":  # arcsine configs stay as they were (store fingerprints)
            cfg["law"] = self.law
        return cfg

    @classmethod
    def _from_config(cls, config):
        q = super()._from_config(config)
        law = config.get("law", "arcsine")
        return cls(q.bits, q.borders, q.levels, law=law) if law != "arcsine" else q


@QUANTIZERS.register("lm2")
class LloydMax2Quantizer(Quantizer):
    """LM2-RFF: Lloyd-Max on z^2, favouring high-similarity pairs (Li & Li 2021, Section 3)."""

    kind = "lm2"

    @classmethod
    def design(cls, bits: int) -> LloydMax2Quantizer:
        return cls(check_bits(bits), *_lm2_design(bits))
