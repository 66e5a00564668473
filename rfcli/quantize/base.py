"""Quantizers: b-bit scalar quantizers with borders and reconstruction levels
(docs/methods.md, Quantizers).

A quantizer turns raw feature values ``z`` (an (n, m) float32 chunk) into packed rows of
bytes and back.  Every quantizer round-trips through a JSON config with a ``kind``.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from rfcli.errors import ConfigError, ParameterTypeError, RfcliError, UsageError
from rfcli.quantize.packing import byte_lookup_table, pack_codes, packed_row_bytes, unpack_codes
from rfcli.registry import Registry, require

QUANTIZERS = Registry("quantizer")


class Quantizer:
    """Base: a table quantizer, ``code = #{borders < z}``, ``Q(z) = levels[code]``.

    Subclasses design the table for a value law (:meth:`design`; :func:`rfcli.
    make_quantizer` chooses the class by kind); the codes of a row are packed ``bits``
    bits each (:func:`rfcli.pack_codes`).

    Parameters
    ----------
    bits : int
        Bits per feature, 1 to 8.
    borders : array-like of shape (2**bits - 1,)
        The increasing interior borders.
    levels : array-like of shape (2**bits,)
        The increasing reconstruction levels.

    Attributes
    ----------
    kind : str
        The quantizer's name (``lm``, ``lm2``, ``stoc``, ``uniform``, ``sign``,
        ``empirical``, ...).
    bits : int
        Bits per feature (1..8).
    borders : ndarray of shape (2**bits - 1,), float64
        The increasing interior borders.
    levels : ndarray of shape (2**bits,), float64
        The increasing reconstruction levels.

    Raises
    ------
    ConfigError
        Bits out of 1..8, or borders or levels of the wrong length, not finite or not
        increasing.
    """

    kind: ClassVar[str]
    #: value laws of maps this quantizer is designed for (see FeatureMap.value_law)
    laws: ClassVar[tuple[str, ...]] = ("arcsine",)
    stochastic: ClassVar[bool] = False
    #: how codes are laid out in a store row (store attribute layout.codes)
    code_layout: ClassVar[str] = "packed-lsb0"
    #: True when the codes are ``#{borders < z}`` and the row bytes pack_codes' (the table
    #: quantizers): the codes of cosine features then come from their phase
    #: (:meth:`encode_turns`)
    threshold_codes: ClassVar[bool] = True

    def __init__(self, bits: int, borders: np.ndarray, levels: np.ndarray):
        self.bits = int(bits)
        self.borders = np.asarray(borders, dtype=np.float64)
        self.levels = np.asarray(levels, dtype=np.float64)
        self._validate()
        self._borders32 = self.borders.astype(np.float32)
        self._levels32 = self.levels.astype(np.float32)
        self._sq_levels = self.levels**2
        self._lut = byte_lookup_table(self.levels, self.bits)
        self._sq_byte_lut = None
        if self._lut is not None and self.bits < 8:
            per = 8 // self.bits
            byte = np.arange(256)[:, None]
            in_byte = (byte >> (np.arange(per) * self.bits)) & ((1 << self.bits) - 1)
            self._sq_byte_lut = self._sq_levels[in_byte].sum(axis=1)  # float64

    # -- construction ---------------------------------------------------------------
    @classmethod
    def design(cls, bits: int) -> Quantizer:
        """Build the quantizer of this kind for ``bits`` bits (subclasses may take more
        keywords: ``seed``, ``law``; :func:`rfcli.make_quantizer` passes them).

        Parameters
        ----------
        bits : int
            Bits per feature.

        Returns
        -------
        Quantizer
            The designed quantizer.
        """
        raise NotImplementedError

    def _validate(self) -> None:
        b, M = self.bits, 2**self.bits
        if not 1 <= b <= 8:
            raise ConfigError(f"quantizer {self.kind}: bits must be in 1..8, got {b}")
        if self.borders.shape != (M - 1,) or self.levels.shape != (M,):
            raise ConfigError(
                f"quantizer {self.kind}: {b} bits needs {M - 1} borders and {M} levels, "
                f"got {self.borders.size} and {self.levels.size}"
            )
        if not (np.all(np.isfinite(self.borders)) and np.all(np.isfinite(self.levels))):
            raise ConfigError(f"quantizer {self.kind}: borders and levels must be finite")
        if np.any(np.diff(self.borders) <= 0) or np.any(np.diff(self.levels) < 0):
            raise ConfigError(f"quantizer {self.kind}: borders/levels must be increasing")

    # -- config ---------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        """The quantizer as JSON (what stores, model files and ``rfcli fit-quantizer``
        write).

        Returns
        -------
        dict
            ``kind``, ``bits``, ``borders``, ``levels`` (and the kind's own fields).
        """
        return {
            "kind": self.kind,
            "bits": self.bits,
            "borders": self.borders.tolist(),
            "levels": self.levels.tolist(),
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Quantizer:
        """The quantizer a :meth:`to_config` dict describes, of the class of its kind.

        Parameters
        ----------
        config : dict
            A quantizer config (``kind``, ``bits``, ``borders``, ``levels``, ...).

        Returns
        -------
        Quantizer
            The quantizer.

        Raises
        ------
        ConfigError
            An unknown kind, a missing field or a bad table.
        """
        kind = require(config, "kind", str, "quantizer")
        klass = QUANTIZERS.get(kind)
        return klass._from_config(config)

    @classmethod
    def _from_config(cls, config: dict[str, Any]) -> Quantizer:
        bits = require(config, "bits", int, "quantizer")
        borders = require(config, "borders", list, "quantizer")
        levels = require(config, "levels", list, "quantizer")
        try:
            return cls(bits, np.array(borders, dtype=float), np.array(levels, dtype=float))
        except RfcliError:  # its own check (a ValueError too): keep its message
            raise
        except (TypeError, ValueError) as e:
            raise ConfigError(
                f"quantizer {cls.kind}: borders/levels must be numbers ({e})"
            ) from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantizer) and self.to_config() == other.to_config()

    def __hash__(self) -> int:
        return hash((self.kind, self.bits, self.borders.tobytes()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(bits={self.bits})"

    # -- storage --------------------------------------------------------------------
    @property
    def bits_per_feature(self) -> int:
        """Storage bits per feature (a trit-packed ternary quantizer's are fractional)."""
        return self.bits

    def row_bytes(self, n_features: int) -> int:
        """Bytes of packed codes per row.

        Parameters
        ----------
        n_features : int
            Features per row.

        Returns
        -------
        int
            ``ceil(n_features * bits / 8)`` for the table quantizers.
        """
        return packed_row_bytes(n_features, self.bits)

    # -- the hot path ---------------------------------------------------------------
    def codes(self, z: np.ndarray, row0: int = 0) -> np.ndarray:
        """Codes (uint8, same shape as z): ``code = #{i: t_i < z}``, so ``z <= t_i`` falls
        in the lower cell.  ``row0`` (global index of z's first row) only matters for
        stochastic kinds.

        Up to 15 borders (b <= 4) the count is a sum of vectorized comparisons, faster than
        a binary search per element (np.searchsorted; docs/benchmarks.md, Implementation
        choices); the result is the same.

        Parameters
        ----------
        z : ndarray
            Raw feature values.
        row0 : int, default=0
            The global index of z's first row.

        Returns
        -------
        ndarray of z's shape, uint8
            The codes.
        """
        z = z.astype(np.float32, copy=False)
        if len(self._borders32) > 15:
            return np.searchsorted(self._borders32, z, side="left").astype(np.uint8)
        out = np.greater(z, self._borders32[0]).view(np.uint8)  # a bool is one byte 0/1
        for t in self._borders32[1:]:
            np.add(out, z > t, out=out, casting="unsafe")
        return out

    def encode_rows(self, z: np.ndarray, row0: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Quantize and pack a chunk.

        Parameters
        ----------
        z : ndarray of shape (n, m)
            Raw feature values.
        row0 : int, default=0
            The global index of z's first row.

        Returns
        -------
        packed : ndarray of shape (n, row_bytes), uint8
            The packed codes.
        norms : ndarray of shape (n,), float32
            ``||Q(z)||`` per row (the normalized estimator's denominators).
        """
        return self._packed_rows(self.codes(z, row0))

    def encode_turns(self, u: np.ndarray, row0: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`encode_rows` of ``cos(2 pi u)`` for float32 phases in turns ``u``.  A
        threshold quantizer finds its codes from the phase by comparisons, computing no
        cosine (:mod:`rfcli.quantize.phase`): exactly the codes of ``cos(2 pi u)`` for the
        float32 u (docs/store-format.md, Codes from the phase).  Threshold quantizers only
        (``threshold_codes``): the encoder gives other kinds the map's cosines.

        Parameters
        ----------
        u : ndarray of shape (n, m), float32
            The phases in turns.
        row0 : int, default=0
            The global index of u's first row.

        Returns
        -------
        packed : ndarray of shape (n, row_bytes), uint8
            The packed codes.
        norms : ndarray of shape (n,), float32
            ``||Q(z)||`` per row.
        """
        if not self.threshold_codes:
            raise TypeError(f"the {self.kind} quantizer's codes do not come from the phase")
        return self._packed_rows(self._phase_coder.codes(u))

    def _packed_rows(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(packed codes, row norms) of a chunk's codes (:meth:`encode_rows`)."""
        packed = pack_codes(codes, self.bits)
        return packed, self._row_norms(codes, packed)

    @cached_property
    def _phase_coder(self):
        from rfcli.quantize.phase import PhaseCoder

        return PhaseCoder(self._borders32)

    def _row_norms(self, codes: np.ndarray, packed: np.ndarray) -> np.ndarray:
        """``sqrt(sum_j levels[code_j]^2)`` per row, float64 sums.  For b in {1, 2, 4} the
        squares of all codes in two bytes come from one 65536-entry table, so the sum runs
        over byte pairs (16/b times fewer terms than codes; np.take, several times faster
        than fancy indexing); the last byte's padding codes are 0 and are taken out again."""
        if self._sq_byte_lut is None:
            return np.sqrt(self._sq_levels[codes].sum(axis=1)).astype(np.float32)
        nb = packed.shape[1]
        packed = np.ascontiguousarray(packed)
        sq = np.take(self._sq_pair_lut, packed[:, : nb - nb % 2].view("<u2")).sum(axis=1)
        if nb % 2:
            sq += np.take(self._sq_byte_lut, packed[:, -1])
        pad = nb * (8 // self.bits) - codes.shape[1]
        if pad:
            sq -= pad * self._sq_levels[0]
        return np.sqrt(np.maximum(sq, 0.0)).astype(np.float32)

    @cached_property
    def _sq_pair_lut(self) -> np.ndarray:
        """Sum of the squared levels of the codes in a little-endian uint16 (two bytes)."""
        pair = np.arange(1 << 16)
        return self._sq_byte_lut[pair & 0xFF] + self._sq_byte_lut[pair >> 8]

    def decode_rows(self, packed: np.ndarray, n_features: int, scale: float = 1.0) -> np.ndarray:
        """Unpack and decode: float32 (n, n_features) values ``scale * Q(z)``.

        For b in {1, 2, 4, 8} this is one gather through a 256-entry byte table with the
        scale folded in (no intermediate code array, no second pass for the scale).

        Parameters
        ----------
        packed : ndarray of shape (n, row_bytes), uint8
            Packed codes.
        n_features : int
            Features per row.
        scale : float, default=1.0
            A factor applied to every level (the map's ``feature_scale``).

        Returns
        -------
        ndarray of shape (n, n_features), float32
            ``scale * Q(z)``.

        Raises
        ------
        ValueError
            Rows of another width.
        """
        if self._lut is not None:
            if packed.shape[1] != self.row_bytes(n_features):
                raise ValueError("packed row width does not match the quantizer")
            lut = self._scaled_lut(scale)
            # np.take on the table's rows: faster than lut[packed] (docs/benchmarks.md)
            n, nb = packed.shape
            out = np.take(lut, packed, axis=0).reshape(n, lut.shape[1] * nb)
            return out if out.shape[1] == n_features else out[:, :n_features]
        # float32 product, exactly as scaling decoded float32 levels would give
        levels = self._levels32 if scale == 1.0 else self._levels32 * np.float32(scale)
        return levels[unpack_codes(packed, self.bits, n_features)]

    def _scaled_lut(self, scale: float) -> np.ndarray:
        if scale == 1.0:
            return self._lut
        cache = self.__dict__.setdefault("_lut_cache", {})
        if scale not in cache:
            cache[scale] = self._lut * np.float32(scale)
        return cache[scale]


#: quantizers with a fixed number of bits: kind -> (the ``bits`` they take, their bits per
#: feature in the store); trits packs 5 ternary codes in a byte (1.6 bits) and takes 2, as
#: ternary does
FIXED_BITS: dict[str, tuple[int, float]] = {
    "sign": (1, 1), "binary": (1, 1), "ternary": (2, 2), "trits": (2, 1.6),
}  # fmt: skip


def check_fixed_bits(kind: str, bits) -> None:
    """A quantizer with a fixed number of bits (:data:`FIXED_BITS`): any other ``bits`` is
    refused, in words that say so (not "an integer in 1..1")."""
    if isinstance(bits, bool) or not isinstance(bits, int):
        raise ParameterTypeError(f"bits must be an integer, got {bits!r}")
    fixed, n = FIXED_BITS[kind]
    if bits != fixed:
        raise UsageError(
            f"the {kind} quantizer has {n:g} bit(s) per feature: bits must be {fixed} (or "
            f"left out), got {bits!r}"
        )


def check_bits(bits: int, lo: int = 1, hi: int = 8) -> int:
    if isinstance(bits, bool) or not isinstance(bits, int):
        raise ParameterTypeError(f"bits must be an integer in {lo}..{hi}, got {bits!r}")
    if not lo <= bits <= hi:
        raise UsageError(f"bits must be an integer in {lo}..{hi}, got {bits!r}")
    return bits
