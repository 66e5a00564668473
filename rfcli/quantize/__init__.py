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
    """Design the quantizer ``kind`` for ``bits`` bits.

    Parameters
    ----------
    kind : str
        One of :data:`DESIGNABLE` (``lm``: Lloyd-Max for the value law; ``lm2``,
        ``stoc``, ``uniform``, ``sign``; docs/methods.md, Quantizers) or another kind
        of :data:`QUANTIZERS` with a closed-form design.
    bits : int
        Bits per feature, 1 to 8.
    seed : int, default=0
        The seed of ``stoc``'s random rounding (unused by the other kinds).
    law : str, default="arcsine"
        The map's value law (``FeatureMap.value_law``), used by ``lm``, which has designs
        for several laws (a law without one gets the arcsine design).

    Returns
    -------
    Quantizer
        The designed quantizer.

    Raises
    ------
    ConfigError
        An unknown kind.
    UsageError
        ``bits`` out of range for the kind.

    Examples
    --------
    >>> q = make_quantizer("uniform", 2)
    >>> q.kind, len(q.borders), len(q.levels)
    ('uniform', 3, 4)
    """
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
