import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rfcli.quantize.packing import byte_lookup_table, pack_codes, packed_row_bytes, unpack_codes


def reference_pack(codes: np.ndarray, b: int) -> np.ndarray:
    """Bit by bit, straight from docs/store-format.md (Bit layout): feature j's bit k is
    bit j*b+k of the row, bit 0 = least significant bit of byte 0."""
    n, m = codes.shape
    out = np.zeros((n, packed_row_bytes(m, b)), dtype=np.uint8)
    for i in range(n):
        for j in range(m):
            for k in range(b):
                if (int(codes[i, j]) >> k) & 1:
                    pos = j * b + k
                    out[i, pos // 8] |= 1 << (pos % 8)
    return out


@st.composite
def code_arrays(draw):
    b = draw(st.integers(1, 8))
    n = draw(st.integers(0, 5))
    m = draw(st.integers(1, 40))
    codes = draw(hnp.arrays(np.uint8, (n, m), elements=st.integers(0, 2**b - 1)))
    return b, codes


@settings(max_examples=300, deadline=None)
@given(code_arrays())
def test_round_trip_and_layout(args):
    b, codes = args
    packed = pack_codes(codes, b)
    assert packed.dtype == np.uint8
    assert packed.shape == (codes.shape[0], -(-codes.shape[1] * b // 8))
    np.testing.assert_array_equal(packed, reference_pack(codes, b))
    np.testing.assert_array_equal(unpack_codes(packed, b, codes.shape[1]), codes)


@pytest.mark.parametrize("b", range(1, 9))
def test_every_b_large_random(b):
    rng = np.random.default_rng(b)
    codes = rng.integers(0, 2**b, size=(64, 1027), dtype=np.uint8)
    np.testing.assert_array_equal(unpack_codes(pack_codes(codes, b), b, 1027), codes)


def test_straddling_example():
    # b=3: codes 5 (101), 6 (110), 7 (111) -> bits 101 011 111 (LSB first) -> bytes
    packed = pack_codes(np.array([[5, 6, 7]], dtype=np.uint8), 3)
    bits = "101" + "011" + "111" + "0000000"  # LSB-first bit string
    expected = [int(bits[8 * k : 8 * k + 8][::-1], 2) for k in range(2)]
    assert packed.tolist() == [expected]


@pytest.mark.parametrize("b", [1, 2, 4, 8])
def test_byte_lookup_table_decodes(b):
    levels = np.linspace(-1, 1, 2**b)
    lut = byte_lookup_table(levels, b)
    codes = np.random.default_rng(0).integers(0, 2**b, size=(7, 24), dtype=np.uint8)
    decoded = lut[pack_codes(codes, b)].reshape(7, -1)[:, :24]
    np.testing.assert_array_equal(decoded, levels.astype(np.float32)[codes])
    assert byte_lookup_table(levels[:8], 3) is None


def test_wrong_width_rejected():
    with pytest.raises(ValueError):
        unpack_codes(np.zeros((2, 3), np.uint8), 2, 20)
