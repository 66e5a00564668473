"""Exact codes of ternary features {-1, 0, +1} (ternary random features).

See docs/methods.md, Ternary random features and Quantizers.

* ``ternary``: 2-bit codes 0, 1, 2 for -1, 0, +1, packed like every 2-bit code.
* ``trits``: 5 symbols per byte in base 3, ``byte = sum_k 3^k (s_k + 1)`` for the five
  consecutive features k = 0..4 of a group (243 of the 256 byte values are used), so a
  feature costs 8/5 = 1.6 bits; the last group of a row is padded with symbol 0.
  Decoding is one gather through a 243 x 5 table.
"""

from __future__ import annotations

import numpy as np

from rfcli.quantize.base import QUANTIZERS, Quantizer, check_fixed_bits

_TERNARY_LEVELS = np.array([-1.0, 0.0, 1.0, 1.0])  # code 3 is never written
_TERNARY_BORDERS = np.array([-0.5, 0.5, 1.5])
_POW3 = (3 ** np.arange(5)).astype(np.uint8)


@QUANTIZERS.register("ternary")
class TernaryQuantizer(Quantizer):
    """Lossless 2-bit codes of {-1, 0, +1} features."""

    kind = "ternary"
    laws = ("ternary",)

    @classmethod
    def design(cls, bits: int = 2) -> TernaryQuantizer:
        check_fixed_bits("ternary", bits)
        return cls(2, _TERNARY_BORDERS, _TERNARY_LEVELS)


def _trit_table() -> np.ndarray:
    byte = np.arange(256)
    digits = (byte[:, None] // (3 ** np.arange(5))[None, :]) % 3
    table = (digits - 1).astype(np.float32)
    table[243:] = 0.0  # never written
    return table


@QUANTIZERS.register("trits")
class TritQuantizer(Quantizer):
    """Lossless base-3 packing of {-1, 0, +1} features, 5 per byte (1.6 bits each)."""

    kind = "trits"
    code_layout = "trits-base3"
    laws = ("ternary",)
    threshold_codes = False  # its own packing

    def __init__(self, bits=2, borders=_TERNARY_BORDERS, levels=_TERNARY_LEVELS):
        super().__init__(2, _TERNARY_BORDERS, _TERNARY_LEVELS)
        self._lut = _trit_table()

    @classmethod
    def design(cls, bits: int = 2) -> TritQuantizer:
        check_fixed_bits("trits", bits)
        return cls()

    @property
    def bits_per_feature(self) -> float:  # type: ignore[override]
        return 1.6

    def row_bytes(self, n_features: int) -> int:
        return -(-n_features // 5)

    def encode_rows(self, z: np.ndarray, row0: int = 0):
        codes = self.codes(z, row0)  # 0, 1, 2
        n, m = codes.shape
        g = -(-m // 5)
        padded = np.ones((n, g * 5), dtype=np.uint8)  # symbol 0 = digit 1
        padded[:, :m] = codes
        packed = (padded.reshape(n, g, 5) * _POW3).sum(axis=2, dtype=np.uint8)
        norms = np.sqrt(np.count_nonzero(codes != 1, axis=1)).astype(np.float32)
        return packed, norms
