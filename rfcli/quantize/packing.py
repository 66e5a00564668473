"""Bit packing of b-bit codes along the feature axis, pure NumPy (docs/store-format.md, Bit layout).

Layout: feature j's code occupies bits [j*b, (j+1)*b) of the row's bit string, bit 0
being the least significant bit of byte 0; codes straddle bytes when b does not divide 8.
Implementation: 8 consecutive features form a group of exactly b bytes; a group is
assembled in a little-endian uint64 and its low b bytes are kept.
"""

from __future__ import annotations

import numpy as np

_SHIFTS = {b: (np.arange(8, dtype=np.uint64) * np.uint64(b)) for b in range(1, 9)}


def packed_row_bytes(n_features: int, bits: int) -> int:
    """Bytes per row: ``ceil(m*b/8)``."""
    return -(-n_features * bits // 8)


def _check_bits(bits: int) -> None:
    if not 1 <= bits <= 8:
        raise ValueError(f"bits must be in 1..8, got {bits}")


def pack_codes(codes: np.ndarray, bits: int) -> np.ndarray:
    """Pack codes along the feature axis, ``bits`` bits each, least significant bit first
    (the module docstring's layout, as a store keeps them).

    Parameters
    ----------
    codes : array-like of shape (n, m)
        Codes below ``2**bits``.
    bits : int
        Bits per code, 1 to 8.

    Returns
    -------
    ndarray of shape (n, ceil(m * bits / 8)), uint8
        The packed rows.

    Raises
    ------
    ValueError
        ``bits`` out of 1..8.

    Examples
    --------
    >>> import numpy as np
    >>> packed = pack_codes(np.array([[1, 2, 3, 0, 1]]), 2)
    >>> packed.tolist(), unpack_codes(packed, 2, 5).tolist()
    ([[57, 1]], [[1, 2, 3, 0, 1]])
    """
    _check_bits(bits)
    codes = np.asarray(codes, dtype=np.uint8)
    n, m = codes.shape
    nbytes = packed_row_bytes(m, bits)
    if bits == 8:
        return np.ascontiguousarray(codes)
    if bits == 1:
        return np.packbits(codes, axis=1, bitorder="little")
    if 8 % bits == 0:  # 2 or 4: whole codes per byte
        per = 8 // bits
        g = -(-m // per)
        if g * per != m:
            codes = np.pad(codes, ((0, 0), (0, g * per - m)))
        codes = np.ascontiguousarray(codes)
        # the `per` codes of a byte read as one little-endian word: shifts move code k to
        # bits [k b, (k+1) b) of the low byte (codes < 2**b, so nothing else lands there)
        if bits == 2:
            w = codes.view("<u4")
            x = w >> np.uint32(6)
            x |= w
            y = x >> np.uint32(12)
            y |= x
            return y.astype(np.uint8)
        if bits == 4:
            w = codes.view("<u2")
            return (w | (w >> np.uint16(4))).astype(np.uint8)
        c = codes.reshape(n, g, per)
        out = c[:, :, 0].copy()
        for k in range(1, per):
            out |= c[:, :, k] << np.uint8(k * bits)
        return out
    g = -(-m // 8)
    if g * 8 != m:
        codes = np.pad(codes, ((0, 0), (0, g * 8 - m)))
    words = np.bitwise_or.reduce(codes.reshape(n, g, 8).astype(np.uint64) << _SHIFTS[bits], axis=2)
    as_bytes = words.astype("<u8").view(np.uint8).reshape(n, g, 8)[:, :, :bits]
    return np.ascontiguousarray(as_bytes.reshape(n, g * bits)[:, :nbytes])


def unpack_codes(packed: np.ndarray, bits: int, n_features: int) -> np.ndarray:
    """Inverse of :func:`pack_codes`.

    Parameters
    ----------
    packed : array-like of shape (n, ceil(n_features * bits / 8)), uint8
        Packed rows.
    bits : int
        Bits per code, 1 to 8.
    n_features : int
        Codes per row.

    Returns
    -------
    ndarray of shape (n, n_features), uint8
        The codes.

    Raises
    ------
    ValueError
        ``bits`` out of 1..8, or rows of another width.
    """
    _check_bits(bits)
    packed = np.asarray(packed, dtype=np.uint8)
    n = packed.shape[0]
    m = n_features
    if packed.shape[1] != packed_row_bytes(m, bits):
        raise ValueError(
            f"packed rows have {packed.shape[1]} bytes, expected {packed_row_bytes(m, bits)}"
        )
    if bits == 8:
        return packed.copy()
    if bits == 1:
        return np.unpackbits(packed, axis=1, count=m, bitorder="little")
    if 8 % bits == 0:
        per = 8 // bits
        mask = np.uint8((1 << bits) - 1)
        shifts = (np.arange(per, dtype=np.uint8) * np.uint8(bits))[None, None, :]
        return ((packed[:, :, None] >> shifts) & mask).reshape(n, packed.shape[1] * per)[:, :m]
    g = -(-m // 8)
    buf = np.zeros((n, g, 8), dtype=np.uint8)
    flat = np.zeros((n, g * bits), dtype=np.uint8)
    flat[:, : packed.shape[1]] = packed
    buf[:, :, :bits] = flat.reshape(n, g, bits)
    words = buf.view("<u8").reshape(n, g)
    mask = np.uint64((1 << bits) - 1)
    codes = (words[:, :, None] >> _SHIFTS[bits]) & mask
    return codes.astype(np.uint8).reshape(n, g * 8)[:, :m]


def byte_lookup_table(levels: np.ndarray, bits: int) -> np.ndarray | None:
    """For b in {1, 2, 4, 8}: a (256, 8//b) float32 table mapping a packed byte to the
    levels of the codes it holds, so decoding is one gather.  None for other b."""
    if 8 % bits:
        return None
    per = 8 // bits
    byte = np.arange(256, dtype=np.uint8)[:, None]
    codes = (byte >> (np.arange(per, dtype=np.uint8) * np.uint8(bits))) & np.uint8((1 << bits) - 1)
    return np.asarray(levels, dtype=np.float32)[codes]
