"""Quantizers (SPEC section 2) and bit packing."""

from rfcli.quantize import floats, grid, lloyd_max  # noqa: F401  (register kinds)
from rfcli.quantize.base import QUANTIZERS, Quantizer
from rfcli.quantize.packing import pack_codes, packed_row_bytes, unpack_codes

#: kinds a user can ask for by name with a bit count
DESIGNABLE = ("lm", "lm2", "stoc", "uniform", "sign")


def make_quantizer(kind: str, bits: int, seed: int = 0) -> Quantizer:
    """Design the quantizer ``kind`` for ``bits`` bits (``seed`` only used by ``stoc``)."""
    klass = QUANTIZERS.get(kind)
    if kind == "stoc":
        return klass.design(bits, seed=seed)
    return klass.design(bits)


__all__ = [
    "QUANTIZERS",
    "DESIGNABLE",
    "Quantizer",
    "make_quantizer",
    "pack_codes",
    "packed_row_bytes",
    "unpack_codes",
]
