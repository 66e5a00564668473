"""Quantizers on an evenly spaced grid: stochastic rounding (StocQ), nearest-level
rounding (uniform), sign, and the exact 1-bit code of Heaviside features (binary)."""

from __future__ import annotations

import numpy as np

from rfcli.quantize.base import QUANTIZERS, Quantizer, check_bits, check_fixed_bits
from rfcli.random import keyed_uniform


def _grid(bits: int) -> tuple[np.ndarray, np.ndarray]:
    levels = np.linspace(-1.0, 1.0, 2**bits)
    return (levels[:-1] + levels[1:]) / 2, levels


@QUANTIZERS.register("uniform")
class UniformQuantizer(Quantizer):
    """Deterministic rounding to the nearest of 2^b evenly spaced levels on [-1, 1]."""

    kind = "uniform"

    @classmethod
    def design(cls, bits: int) -> UniformQuantizer:
        return cls(check_bits(bits), *_grid(bits))


@QUANTIZERS.register("stoc")
class StochasticQuantizer(Quantizer):
    """StocQ: z between neighbouring grid levels a < z < c goes to c with probability
    (z - a)/(c - a), else to a; unbiased, ``E[Q(z)] = z``.

    The uniform draw for entry (i, j) is a hash of (seed, global row i, feature j)
    (:func:`rfcli.random.keyed_uniform`), so codes do not depend on chunking or threads.
    ``borders`` holds the grid midpoints (the expected decision points) for reference.
    """

    kind = "stoc"
    stochastic = True
    threshold_codes = False

    def __init__(self, bits: int, borders, levels, seed: int = 0):
        super().__init__(bits, borders, levels)
        self.seed = int(seed)

    @classmethod
    def design(cls, bits: int, seed: int = 0) -> StochasticQuantizer:
        return cls(check_bits(bits), *_grid(bits), seed=seed)

    def to_config(self):
        return {**super().to_config(), "seed": self.seed}

    @classmethod
    def _from_config(cls, config):
        q = super()._from_config(config)
        q.seed = int(config.get("seed", 0))
        return q

    def codes(self, z: np.ndarray, row0: int = 0) -> np.ndarray:
        n, m = z.shape
        top = len(self.levels) - 1
        step = 2.0 / top
        pos = (np.clip(z, -1.0, 1.0).astype(np.float64) + 1.0) / step  # in [0, top]
        low = np.minimum(np.floor(pos), top - 1)
        u = keyed_uniform(self.seed, np.arange(row0, row0 + n), m)
        return (low + (u < pos - low)).astype(np.uint8)


@QUANTIZERS.register("sign")
class SignQuantizer(Quantizer):
    """1 bit, levels +-1 (the same estimator as 1-bit LM up to scale)."""

    kind = "sign"

    @classmethod
    def design(cls, bits: int = 1) -> SignQuantizer:
        check_fixed_bits("sign", bits)
        return cls(1, np.array([0.0]), np.array([-1.0, 1.0]))


@QUANTIZERS.register("binary")
class BinaryQuantizer(Quantizer):
    """Exact 1-bit code of {0, 1}-valued features (arc-cosine order 0 / Heaviside)."""

    kind = "binary"
    laws = ("binary",)

    @classmethod
    def design(cls, bits: int = 1) -> BinaryQuantizer:
        check_fixed_bits("binary", bits)
        return cls(1, np.array([0.5]), np.array([0.0, 1.0]))
