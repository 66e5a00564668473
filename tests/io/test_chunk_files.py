"""Store chunks written straight to files: the bytes zarr-python writes (zstd frames: the
same bytes once decompressed, with a valid crc32c), a codec chain chosen per array from a
sample, and stores that plain zarr-python reads."""

from __future__ import annotations

import os

import numpy as np
import pytest
import zarr

from rfcli.io.store import FeatureStore
from rfcli.io.store.chunks import SAMPLE_ROWS, ChunkFiles, zarr_compressors, zstd_pays
from tests.helpers import run, write_parquet

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _files(root, metadata: bool = False) -> dict[str, bytes]:
    """Every file's bytes; a zstd chunk's as its decompressed body, once its crc32c is
    checked (rfcli's frames come from pyarrow's zstd, zarr-python's from numcodecs':
    another zstd version may choose other matches for the same bytes)."""
    import google_crc32c
    from numcodecs.zstd import Zstd

    out = {}
    for r, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(r, f)
            if metadata or f != "zarr.json":
                raw = open(p, "rb").read()
                if f != "zarr.json" and raw.startswith(ZSTD_MAGIC):
                    body, crc = raw[:-4], raw[-4:]
                    assert np.uint32(google_crc32c.value(body)).astype("<u4").tobytes() == crc
                    raw = b"zstd:" + bytes(Zstd().decode(body))
                out[os.path.relpath(p, root)] = raw
    return out


@pytest.mark.parametrize("zstd", [True, False])
@pytest.mark.parametrize(
    "dtype,tail", [(np.uint8, (24,)), (np.float32, ()), (np.int64, ()), (np.float64, (3,))]
)
def test_chunk_files_are_the_bytes_zarr_writes(tmp_path, dtype, tail, zstd):
    rng = np.random.default_rng(0)
    n, chunk = 1000, 128  # 7 whole chunks and a partial last one
    data = (rng.integers(0, 200, (n, *tail)) if dtype in (np.uint8, np.int64)
            else rng.normal(size=(n, *tail))).astype(dtype)  # fmt: skip
    data[128:256] = 0  # an all-fill chunk: not stored by either
    comp = zarr_compressors(zstd_pays(None if zstd else rng.integers(0, 256, 4096, dtype=np.uint8)))
    assert len(comp) == (2 if zstd else 1)
    arrays = {}
    for side in ("zarr", "direct"):
        g = zarr.open_group(os.fspath(tmp_path / side), mode="w")
        arrays[side] = g.create_array("a", shape=(n, *tail), chunks=(chunk, *tail), dtype=dtype,
                                      compressors=comp, fill_value=0)  # fmt: skip
    arrays["zarr"][:] = data
    files = ChunkFiles.open(arrays["direct"], os.fspath(tmp_path / "direct" / "a"))
    assert files is not None
    for i in range(0, n, chunk):
        files.write(i // chunk, data[i : i + chunk])
    a, b = _files(tmp_path / "zarr"), _files(tmp_path / "direct")
    assert a == b and len(a) == 7
    np.testing.assert_array_equal(zarr.open_array(os.fspath(tmp_path / "direct" / "a"))[:], data)


def test_compression_is_kept_only_where_it_pays():
    rng = np.random.default_rng(1)
    uniform = rng.integers(0, 256, 1 << 16, dtype=np.uint8)  # near-uniform codes
    skewed = rng.choice(np.uint8([0, 1]), 1 << 16, p=[0.9, 0.1]).astype(np.uint8)
    assert [c.to_dict()["name"] for c in zarr_compressors(zstd_pays(uniform))] == ["crc32c"]
    assert [c.to_dict()["name"] for c in zarr_compressors(zstd_pays(skewed))] == ["zstd", "crc32c"]


def test_encoded_store_is_plain_zarr(tmp_path):
    rng = np.random.default_rng(2)
    n, d = 3000, 8
    X = rng.normal(size=(n, d))
    src = write_parquet(tmp_path / "in.parquet", **{f"x{j}": X[:, j] for j in range(d)},
                        y=(X[:, 0] > 0).astype(np.int64))  # fmt: skip
    out = tmp_path / "s.rff.zarr"
    run(src, out, chunk_rows=700, label="y", n_features=256, bits=2, store_chunk_rows=1024)
    g = zarr.open_group(os.fspath(out), mode="r")
    names = {k: [c.to_dict()["name"] for c in g[k].metadata.codecs] for k in ("codes", "label")}
    assert names == {"codes": ["bytes", "crc32c"], "label": ["bytes", "zstd", "crc32c"]}
    st = FeatureStore(os.fspath(out))
    codes = np.concatenate([c.packed for c in st.iter_encoded(1024)])
    np.testing.assert_array_equal(g["codes"][:], codes)
    np.testing.assert_array_equal(g["label"][:], (X[:, 0] > 0).astype(np.int64))
    assert SAMPLE_ROWS <= 1024  # the smallest store chunk holds the whole sample


@pytest.mark.parametrize("zstd", [True, False])
@pytest.mark.parametrize("dtype", [np.uint8, np.bool_, np.int32, np.int64, np.float32, np.float64])
def test_local_nodes_write_the_zarr_json_zarr_writes(tmp_path, dtype, zstd):
    """A store written without zarr-python (rfcli.io.store.nodes) has, file for file, the
    bytes of the same store written through zarr-python: metadata and chunks."""
    from rfcli.io.store.nodes import LocalNodes, ZarrNodes, write_small

    rng = np.random.default_rng(3)
    small = (rng.normal(size=(5, 7)) * 9).astype(dtype)
    attrs = {"format": "x", "n": 3, "nested": {"a": [1.5, None, "t"]}, "flag": True}
    for side, nodes in (("zarr", ZarrNodes), ("local", LocalNodes)):
        root = os.fspath(tmp_path / side)
        n = nodes(root) if side == "local" else nodes(root, create=True, local=True)
        write_small(n, "encoder/map/W", small)
        arr = n.create("codes", (300, 4), (128, 4), dtype, zstd)
        arr.resize(300)
        n.set_attrs("rfcli", attrs)

    a, b = _files(tmp_path / "zarr", True), _files(tmp_path / "local", True)
    assert a.keys() == b.keys() and a == b
    g = zarr.open_group(os.fspath(tmp_path / "local"), mode="r")
    np.testing.assert_array_equal(g["encoder/map/W"][:], small)
    assert dict(g.attrs)["rfcli"] == attrs and g["codes"].shape == (300, 4)
