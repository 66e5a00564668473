"""Quantizers (docs/methods.md, Quantizers) and bit packing (docs/store-format.md)."""

from rfcli.names import DESIGNABLE
from rfcli.quantize import lloyd_max  # registers lm and lm2, the default quantizers
from rfcli.quantize.base import QUANTIZERS, Quantizer
from rfcli.quantize.packing import pack_codes, packed_row_bytes, unpack_codes

# the other kinds' modules are imported when a kind is first asked for
QUANTIZERS.lazy("rfcli.quantize.grid", "uniform", "stoc", "sign", "binary")
QUANTIZERS.lazy("rfcli.quantize.trits", "ternary", "trits")
QUANTIZERS.lazy("rfcli.quantize.floats", "none")
QUANTIZERS.lazy("rfcli.quantize.empirical", "empirical")


def make_quantizer(kind: str, bits: int, seed: int = 0, law: str = "arcsine") -> Quantizer:
    """Design the quantizer ``kind`` for ``bits`` bits (``seed`` only used by ``stoc``;
    ``law``, the map's value law, only by ``lm``, which has designs for several laws)."""
    klass = QUANTIZERS.get(kind)
    if kind == "stoc":
        return klass.design(bits, seed=seed)
    if kind == "lm":  # laws without a design get the arcsine one (the encoder then says why)
        return klass.design(bits, law=law if law in lloyd_max.LM_LAWS else "arcsine")
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
