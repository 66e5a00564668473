"""The full-precision baseline: features stored as little-endian float16 or float32 bytes
in the same ``codes`` array (row width ``m * b / 8`` bytes, b = 16 or 32)."""

from __future__ import annotations

import numpy as np

from rfcli.errors import ConfigError, UsageError
from rfcli.quantize.base import QUANTIZERS, Quantizer
from rfcli.registry import require

_DTYPES = {16: np.dtype("<f2"), 32: np.dtype("<f4")}


@QUANTIZERS.register("none")
class FloatQuantizer(Quantizer):
    """No quantization: float16 (b=16) or float32 (b=32) features."""

    kind = "none"
    code_layout = "float-le"
    threshold_codes = False
    laws = ("*", "binary", "ternary")

    def __init__(self, bits: int = 32):
        if bits not in _DTYPES:
            raise UsageError(
                f"quantizer 'none' stores float16 or float32: bits must be 16 or 32, got {bits}"
            )
        self.bits = bits
        self.dtype = _DTYPES[bits]
        self.borders = np.empty(0)
        self.levels = np.empty(0)

    @classmethod
    def design(cls, bits: int = 32) -> FloatQuantizer:
        return cls(bits)

    def to_config(self):
        return {"kind": "none", "bits": self.bits, "dtype": self.dtype.name}

    @classmethod
    def _from_config(cls, config):
        bits = require(config, "bits", int, "quantizer")
        if bits not in _DTYPES:
            raise ConfigError(f"quantizer none: bits must be 16 or 32, got {bits}")
        return cls(bits)

    def row_bytes(self, n_features: int) -> int:
        return n_features * self.dtype.itemsize

    def codes(self, z, row0=0):
        raise TypeError("the 'none' quantizer has no codes")

    def encode_rows(self, z, row0=0):
        vals = np.ascontiguousarray(z, dtype=self.dtype)
        norms = np.sqrt(np.einsum("ij,ij->i", vals, vals, dtype=np.float64)).astype(np.float32)
        return vals.view(np.uint8), norms

    def decode_rows(self, packed, n_features, scale=1.0):
        if packed.shape[1] != self.row_bytes(n_features):
            raise ValueError("packed row width does not match the quantizer")
        F = np.ascontiguousarray(packed).view(self.dtype).astype(np.float32)
        if scale != 1.0:
            F *= np.float32(scale)
        return F
