"""A store's size on disk follows its rows: a chunk file holds a whole chunk (the last one
padded with fill value, and codes are not compressed), so a store's chunks are never
longer than its rows and a small store is its codes plus small fixed parts."""

import os

import numpy as np
import pyarrow.parquet as pq
import pytest

from rfcli import EncodeSettings, FeatureStore, ReadSettings, encode
from tests.helpers import LETTER


def du_bytes(path) -> int:
    """``du -sb``: the apparent sizes of every file and directory under ``path``."""
    total = os.lstat(path).st_size
    for root, dirs, files in os.walk(path):
        total += sum(os.lstat(os.path.join(root, n)).st_size for n in dirs + files)
    return total


@pytest.fixture(scope="module")
def letter540(tmp_path_factory):
    path = tmp_path_factory.mktemp("size") / "letter540.parquet"
    pq.write_table(pq.read_table(LETTER).slice(0, 540), path)
    return os.fspath(path)


def test_a_small_store_is_its_codes_plus_small_parts(tmp_path, letter540):
    out = os.fspath(tmp_path / "s.zarr")
    encode(letter540, out, EncodeSettings(n_features=512, bits=2), ReadSettings(label="label"))
    store = FeatureStore(out)
    codes = store.n_rows * store.layout["row_bytes"]
    assert store.n_rows == 540 and codes == 540 * 128
    assert store.chunk_rows == 540  # the default chunk (32,768 rows here) would be 60x longer
    assert du_bytes(out) <= 2 * codes + 64 * 1024
    import zarr  # any Zarr v3 reader reads the store as written

    np.testing.assert_array_equal(zarr.open_group(out, mode="r")["codes"][:],
                                  store.group["codes"][:])  # fmt: skip


@pytest.mark.parametrize("rows", [1, 255, 256, 257, 540])
def test_chunk_padding_is_less_than_the_rows(tmp_path, letter540, rows):
    """With chunks of 256 rows: one chunk of its rows below that, else the fill of the last
    chunk is fewer rows than the store's, so the codes take less than twice their bytes."""
    src = os.fspath(tmp_path / "in.parquet")
    pq.write_table(pq.read_table(letter540).slice(0, rows), src)
    out = os.fspath(tmp_path / "s.zarr")
    encode(src, out, EncodeSettings(n_features=64, bits=2, gamma=0.1, store_chunk_rows=256))
    store = FeatureStore(out)
    assert store.n_rows == rows and store.chunk_rows == min(rows, 256)
    chunk_files = [f for r, _, fs in os.walk(os.path.join(out, "codes", "c")) for f in fs]
    stored = sum(
        os.path.getsize(os.path.join(r, f))
        for r, _, fs in os.walk(os.path.join(out, "codes", "c"))
        for f in fs
    )
    codes = rows * store.layout["row_bytes"]
    assert stored == len(chunk_files) * (store.chunk_rows * store.layout["row_bytes"] + 4)
    assert stored - 4 * len(chunk_files) < 2 * codes


def _summary(path):
    from rfcli.cli.inspect import store_sections
    from rfcli.jobs.inspect import store_summary

    info = store_summary(FeatureStore(path))
    return info, dict(store_sections(info)[0][1])


def test_inspect_says_what_takes_the_bytes(tmp_path, letter540):
    from rfcli.cli.render import size

    src = os.fspath(tmp_path / "in.parquet")
    pq.write_table(pq.read_table(letter540).slice(0, 300), src)
    out = os.fspath(tmp_path / "s.zarr")
    encode(src, out, EncodeSettings(n_features=512, bits=2, gamma=0.1, store_chunk_rows=256))
    info, rows = _summary(out)
    parts = info["bytes_by_part"]
    files = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(out) for f in fs)
    assert sum(parts.values()) == info["bytes_on_disk"] == files
    assert list(parts) == sorted(parts, key=lambda k: -parts[k])
    assert parts["codes"] == 2 * (256 * 128 + 4)  # two chunk files, the last one padded
    assert info["codes_bytes"] == 300 * 128
    fill = f"{size(300 * 128)} of codes, the rest the fill of a 256-row chunk"
    assert rows["size on disk"].startswith(f"{size(info['bytes_on_disk'])}: codes ")
    assert fill in rows["size on disk"]

    # a store of few rows: the largest part besides the codes is named, with its share
    pq.write_table(pq.read_table(letter540).slice(0, 10), src)
    encode(src, out, EncodeSettings(n_features=512, bits=2, gamma=0.1), overwrite=True)
    info, rows = _summary(out)
    assert info["compression_ratio"] < 1 and "fill" not in rows["size on disk"]
    other = {k: v for k, v in info["bytes_by_part"].items() if k != "codes"}
    assert max(other, key=other.get) == "encoder"  # W: 16 x 512 float32
    share = round(100 * other["encoder"] / info["bytes_on_disk"])
    assert rows["compression"].endswith(f"(few rows: {share}% of the bytes are the encoder arrays)")
