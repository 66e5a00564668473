"""Local stores read without zarr-python: the same values zarr-python reads, zarr's own
reading for any other layout, and damaged chunks refused by their checksum."""

from __future__ import annotations

import os

import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec, Crc32cCodec, ZstdCodec

from rfcli.io.store.local_read import ChecksumError, LocalArrayReader, LocalGroup
from rfcli.io.store.nodes import LocalNodes


def _slices(n: int, chunk: int):
    """Row ranges inside a chunk, across chunk borders, the last partial chunk, empty."""
    return [(0, n), (0, 1), (chunk - 1, chunk + 1), (chunk, 2 * chunk), (3, n - 2), (n - 1, n),
            (5, 5), (n - 3, n + 10)]  # fmt: skip


@pytest.mark.parametrize("zstd", [False, True])
@pytest.mark.parametrize(
    "dtype,tail", [(np.uint8, (24,)), (np.float32, ()), (np.int64, ()), (np.bool_, (3,))]
)
def test_rfcli_arrays_read_as_zarr_reads_them(tmp_path, dtype, tail, zstd):
    rng = np.random.default_rng(0)
    n, chunk = 1000, 128
    data = (rng.normal(size=(n, *tail)) * 50).astype(dtype)
    data[256:384] = 0  # an all-fill chunk: no file
    nodes = LocalNodes(os.fspath(tmp_path))
    arr = nodes.create("a", (n, *tail), (chunk, *tail), dtype, zstd)
    for i in range(0, n, chunk):
        arr.files.write(i // chunk, data[i : i + chunk])
    arr.resize(n)
    assert not os.path.exists(tmp_path / "a" / "c" / "2")
    local = LocalGroup(os.fspath(tmp_path))["a"]
    assert isinstance(local, LocalArrayReader)
    ref = zarr.open_group(os.fspath(tmp_path), mode="r")["a"]
    assert local.shape == ref.shape and local.chunks == ref.chunks
    np.testing.assert_array_equal(local[...], ref[...])
    for a, b in _slices(n, chunk):
        got = local[a:b]
        assert got.dtype == data.dtype and got.flags.writeable
        np.testing.assert_array_equal(got, data[a:b])


@pytest.mark.parametrize(
    "layout",
    [
        {"chunks": (100, 2), "compressors": [Crc32cCodec()]},  # chunked along the columns
        {"chunks": (100, 6), "compressors": [BloscCodec()]},  # another codec
        {"chunks": (100, 6), "compressors": [ZstdCodec(level=1, checksum=True)]},
    ],
)
def test_other_layouts_are_read_through_zarr(tmp_path, layout):
    data = np.arange(1800, dtype=np.float64).reshape(300, 6)
    g = zarr.open_group(os.fspath(tmp_path), mode="w")
    g.create_array("a", shape=data.shape, dtype=data.dtype, fill_value=0, **layout)[:] = data
    got = LocalGroup(os.fspath(tmp_path))["a"]
    assert not isinstance(got, LocalArrayReader)
    np.testing.assert_array_equal(got[50:250], data[50:250])


def test_zarr_pythons_zstd_frames_are_read(tmp_path):
    """Frames that numcodecs compressed (a store written through zarr-python, e.g. at a
    URL and copied here) decompress with pyarrow's zstd."""
    rng = np.random.default_rng(1)
    data = rng.integers(0, 3, (500, 40)).astype(np.uint8)
    g = zarr.open_group(os.fspath(tmp_path), mode="w")
    g.create_array("a", shape=data.shape, chunks=(128, 40), dtype=data.dtype, fill_value=0,
                   compressors=[ZstdCodec(level=3), Crc32cCodec()])[:] = data  # fmt: skip
    got = LocalGroup(os.fspath(tmp_path))["a"]
    assert isinstance(got, LocalArrayReader) and got.zstd
    np.testing.assert_array_equal(got[...], data)


def test_a_damaged_chunk_fails_its_checksum(tmp_path):
    nodes = LocalNodes(os.fspath(tmp_path))
    arr = nodes.create("a", (256, 8), (128, 8), np.uint8, False)
    data = np.arange(2048, dtype=np.uint8).reshape(256, 8) | 1
    arr.files.write(0, data[:128])
    arr.files.write(1, data[128:])
    arr.resize(256)
    path = tmp_path / "a" / "c" / "1" / "0"
    raw = bytearray(path.read_bytes())
    raw[10] ^= 1
    path.write_bytes(bytes(raw))
    local = LocalGroup(os.fspath(tmp_path))["a"]
    np.testing.assert_array_equal(local[:128], data[:128])  # the intact chunk
    with pytest.raises(ChecksumError, match="checksum"):
        local[100:200]
